# The two commands of the README: `make demo` and `make test`. Each creates .venv with the
# pinned dependencies (Python 3.11) when it is missing.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: test demo bench venv

$(VENV)/.installed: requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

test: venv
	$(PY) -m pytest $(PYTEST_ARGS)

bench: venv
	-$(PY) -m pip install --quiet -r requirements-bench.txt
	$(PY) bench/run_all.py
