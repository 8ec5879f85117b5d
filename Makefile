# The two commands of the README: `make demo` and `make test`. Each creates .venv with the
# pinned dependencies (Python 3.11, Blender 5.0.1 as bpy) when it is missing.
#   make demo      headless demo: demo/out/demo.blend, demo/out/demo.png, a table of hits
#   make test      the whole test suite on the default Blender, bpy 5.0.1 (Python 3.11, numpy
#                  1.26): tests/blender and tests/core
#   make test-all  every supported Blender: `make test`, then tests/blender on bpy 4.2 LTS
#                  (.venv-bpy42: Python 3.11, numpy 1.26), then the whole suite on bpy 5.3.0
#                  (.venv-bpy53: Python 3.13, numpy 2.x; core under numpy 2 too); each venv is
#                  created when missing
#   make check     static checks: ruff (lint + format check), then mypy (types, against
#                  fake-bpy-module's stubs of Blender 5.0's Python API)
#   make validate  Blender's extension validator on blender_manifest.toml
#   make wheels    download the numba/llvmlite wheels the manifest lists into ./wheels/
#   make package   build/geometry_queries-<version>-<platform>.zip (one per platform, each with
#                  its wheels for CPython 3.11 and 3.13), for Install from Disk
PYTHON ?= python3.11
# Python 3.13 (Blender 5.1 and later): python3.13 where it runs, else pyenv's 3.13.
PYTHON313 ?= $(firstword $(foreach candidate,python3.13 \
	$(wildcard $(shell pyenv root 2>/dev/null)/versions/3.13*/bin/python3.13),\
	$(shell $(candidate) -c "print('$(candidate)')" 2>/dev/null)))
VENV := .venv
PY := $(VENV)/bin/python
VENV_BPY42 := .venv-bpy42
VENV_BPY53 := .venv-bpy53
DIST := build

# Blender's extension tool and tag list, shipped inside the installed bpy (expanded when
# used, i.e. after the venv exists).
BPY_SCRIPTS = $(firstword $(wildcard $(VENV)/lib/python3*/site-packages/bpy/*/scripts))
BLENDER_EXT = $(BPY_SCRIPTS)/addons_core/bl_pkg/cli/blender_ext.py
VALID_TAGS = $(BPY_SCRIPTS)/modules/_bpy_internal/extensions/tags.py

.PHONY: test test-all test-bpy42 test-bpy53 demo bench venv validate package check wheels

# A venv from its Python and requirements file:
#   $(call make_venv,folder,python,requirements,the make variable naming that python)
define make_venv
	test -n "$(2)" || { echo "$(1): no Python found for it (set $(4))" >&2; exit 1; }
	$(2) -m venv $(1)
	$(1)/bin/python -m pip install --quiet --upgrade pip
	$(1)/bin/python -m pip install --quiet -r $(3)
	touch $(1)/.installed
endef

$(VENV)/.installed: requirements-dev.txt
	$(call make_venv,$(VENV),$(PYTHON),requirements-dev.txt,PYTHON)

$(VENV_BPY42)/.installed: requirements-bpy42.txt
	$(call make_venv,$(VENV_BPY42),$(PYTHON),requirements-bpy42.txt,PYTHON)

$(VENV_BPY53)/.installed: requirements-bpy53.txt
	$(call make_venv,$(VENV_BPY53),$(PYTHON313),requirements-bpy53.txt,PYTHON313 to a Python 3.13)

venv: $(VENV)/.installed

# With PYTEST_ARGS (a subset), only that subset runs.
test: venv
	$(PY) -m pytest $(PYTEST_ARGS)

test-bpy42: $(VENV_BPY42)/.installed
	$(VENV_BPY42)/bin/python -m pytest $(or $(PYTEST_ARGS),tests/blender)

test-bpy53: $(VENV_BPY53)/.installed
	$(VENV_BPY53)/bin/python -m pytest $(PYTEST_ARGS)

test-all: test test-bpy42 test-bpy53

# mypy checks the add-on as the package Blender imports, geometry_queries, whatever this
# checkout's folder is called: through a link to the checkout (see [tool.mypy] in
# pyproject.toml for what it checks and how).
TYPECHECK_LINK := $(DIST)/typecheck/geometry_queries

check: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	mkdir -p $(dir $(TYPECHECK_LINK))
	ln -sfn ../.. $(TYPECHECK_LINK)
	$(PY) -m mypy

demo: venv
	$(PY) demo/make_demo.py

validate: venv
	$(PY) $(BLENDER_EXT) validate --valid-tags=$(VALID_TAGS) .

# The wheels listed in blender_manifest.toml, each fetched by its own name, version, Python
# (cp311 -> 3.11) and platform tag (for a multi-tag name such as
# manylinux_2_27_x86_64.manylinux_2_28_x86_64, the first), without dependencies (Blender
# ships numpy).
WHEELS := $(shell sed -n 's|^ *"\./\(wheels/[^"]*\.whl\)",*$$|\1|p' blender_manifest.toml)
wheel_field = $(word $(1),$(subst -, ,$(notdir $(2))))
wheel_python = $(patsubst cp3%,3.%,$(call wheel_field,3,$(1)))
wheel_platform = $(firstword $(subst ., ,$(lastword $(subst -, ,$(notdir $(1))))))

wheels: $(WHEELS)

wheels/%.whl:
	$(PY) -m pip download --quiet --only-binary=:all: --no-deps \
		--python-version $(call wheel_python,$*) --platform $(call wheel_platform,$*) \
		--dest wheels $(call wheel_field,1,$*)==$(call wheel_field,2,$*)
	test -f $@

package: validate wheels
	mkdir -p $(DIST)
	$(PY) $(BLENDER_EXT) build --valid-tags=$(VALID_TAGS) --split-platforms --output-dir $(DIST)

# Open3D (bench only) needs the system library libusb-1.0-0 on Linux: when open3d does not
# import, try apt-get (root, Debian/Ubuntu); elsewhere its bench says why it is skipped.
# bench_cumulative.py compares against GDAL's gdal_viewshed (gdal-bin) when it is there.
bench: venv
	-$(PY) -m pip install --quiet -r requirements-bench.txt
	-$(PY) -c "import open3d" 2>/dev/null || (command -v apt-get >/dev/null && \
		apt-get update -qq && apt-get install -y -qq libusb-1.0-0)
	-command -v gdal_viewshed >/dev/null || (command -v apt-get >/dev/null && \
		apt-get install -y -qq gdal-bin)
	$(PY) bench/run_all.py
