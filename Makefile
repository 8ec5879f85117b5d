# The two commands of the README: `make demo` and `make test`. Each creates .venv with the
# pinned dependencies (Python 3.11) when it is missing.
#   make demo      headless demo: demo/out/demo.blend, demo/out/demo.png, a table of hits
#   make test      the whole test suite (core without Blender, then real bpy 5.0.1), then
#                  tests/core again under numpy 2 (.venv-numpy2; core supports 1.26 and 2.x)
#   make check     static checks: ruff (lint + format check), then mypy (types, against
#                  fake-bpy-module's stubs of Blender 5.0's Python API)
#   make validate  Blender's extension validator on blender_manifest.toml
#   make wheels    download the numba/llvmlite wheels the manifest lists into ./wheels/
#   make package   build/geometry_queries-<version>-<platform>.zip (one per platform, each with
#                  its wheels), for Install from Disk
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
VENV_NUMPY2 := .venv-numpy2
DIST := build

# Blender's extension tool and tag list, shipped inside the installed bpy (expanded when
# used, i.e. after the venv exists).
BPY_SCRIPTS = $(firstword $(wildcard $(VENV)/lib/python3*/site-packages/bpy/*/scripts))
BLENDER_EXT = $(BPY_SCRIPTS)/addons_core/bl_pkg/cli/blender_ext.py
VALID_TAGS = $(BPY_SCRIPTS)/modules/_bpy_internal/extensions/tags.py

.PHONY: test demo bench venv validate package check wheels

$(VENV)/.installed: requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

$(VENV_NUMPY2)/.installed: requirements-numpy2.txt
	$(PYTHON) -m venv $(VENV_NUMPY2)
	$(VENV_NUMPY2)/bin/python -m pip install --quiet --upgrade pip
	$(VENV_NUMPY2)/bin/python -m pip install --quiet -r requirements-numpy2.txt
	touch $@

# With PYTEST_ARGS (a subset), only that subset runs, in .venv.
test: venv $(if $(PYTEST_ARGS),,$(VENV_NUMPY2)/.installed)
	$(PY) -m pytest $(PYTEST_ARGS)
	$(if $(PYTEST_ARGS),,$(VENV_NUMPY2)/bin/python -m pytest tests/core)

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

# The wheels listed in blender_manifest.toml, each fetched by its own name, version and
# platform tag (for a multi-tag name such as manylinux_2_27_x86_64.manylinux_2_28_x86_64,
# the first), for CPython 3.11, without dependencies (Blender ships numpy).
WHEELS := $(shell sed -n 's|^ *"\./\(wheels/[^"]*\.whl\)",*$$|\1|p' blender_manifest.toml)
wheel_field = $(word $(1),$(subst -, ,$(notdir $(2))))
wheel_platform = $(firstword $(subst ., ,$(lastword $(subst -, ,$(notdir $(1))))))

wheels: $(WHEELS)

wheels/%.whl:
	$(PY) -m pip download --quiet --only-binary=:all: --no-deps --python-version 3.11 \
		--platform $(call wheel_platform,$*) --dest wheels \
		$(call wheel_field,1,$*)==$(call wheel_field,2,$*)
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
