# Two entry points on a fresh machine with only Python 3.10+:
#   make run   - install tensorkit into .venv, run the main job (the digits CNN), then open
#                JupyterLab on the tour notebook (LAB=0 skips JupyterLab)
#   make test  - install tensorkit with its test extras (and the PyTorch oracle) and run the suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?= -n 2 --dist loadgroup
LAB ?= 1
TEST_EXTRAS ?= test,docs
LAB_ARGS ?= $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: run test docs lab clean

$(VENV)/.base: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[examples,notebook]'
	touch $@

$(VENV)/.test: $(VENV)/.base
	$(PY) -m pip install -q -e '.[$(TEST_EXTRAS)]' torch==2.13.0 ruff
	touch $@

run: $(VENV)/.base
	$(PY) -m tensorkit.examples.digits
	@if [ "$(LAB)" != 0 ]; then $(MAKE) --no-print-directory lab; fi

# JupyterLab on the tour notebook (Ctrl-C stops it).
lab: $(VENV)/.base
	$(PY) -m jupyterlab notebooks/01_tour.ipynb $(LAB_ARGS)

test: $(VENV)/.test
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m pytest $(PYTEST_ARGS)
	@if command -v node >/dev/null; then node --test widgets/test/*.test.mjs; \
	else echo "node is not installed: widget JS tests not run"; fi
	$(MAKE) docs

# The documentation site, warnings as errors (notebooks rendered with their outputs).
docs: $(VENV)/.test
	$(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache docs/_build test-artifacts
