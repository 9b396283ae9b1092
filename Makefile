# Two entry points on a fresh machine with only Python 3.10+:
#   make run   - install tensorkit into .venv, run the main job (the digits CNN), then open
#                JupyterLab on the tour notebook (LAB=0 skips JupyterLab)
#   make test  - install tensorkit with its test extras (and the PyTorch oracle) and run the suite
# and, with the same .venv: make lab (JupyterLab only), make charlm, make sine (the examples).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?= -n 2 --dist loadgroup
LAB ?= 1
LAB_PORT ?= 8888
TOUR := notebooks/01_tour.ipynb
TEST_EXTRAS ?= test,docs,distributed
PURE_PYTHON_TESTS ?= tests/test_engine_paths.py tests/test_autograd.py \
  tests/test_autograd_parity.py tests/test_tape.py tests/test_hot_path.py \
  tests/test_fused_rules.py tests/test_tensor.py tests/test_profiler_backward.py \
  tests/test_compiled_core.py tests/test_ops.py
LAB_ARGS ?= $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: run test docs lab charlm sine clean

$(VENV)/.base: pyproject.toml hatch_build.py
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

# JupyterLab on 127.0.0.1:$(LAB_PORT), its URL the tour notebook's (Ctrl-C stops it).
lab: $(VENV)/.base
	@echo "Starting JupyterLab on $(TOUR). Open the URL it prints below, the one ending in"
	@echo "  /lab/tree/$(TOUR)?token=..."
	@echo "The server listens on localhost only (127.0.0.1:$(LAB_PORT)). On a remote machine,"
	@echo "forward the port from your own computer first, then open the URL there:"
	@echo "  ssh -N -L $(LAB_PORT):localhost:$(LAB_PORT) you@the-remote-machine"
	@echo "(Another port: make lab LAB_PORT=8890. Ctrl-C stops the server.)"
	$(PY) -m jupyterlab --ServerApp.ip=127.0.0.1 --ServerApp.port=$(LAB_PORT) \
	  --ServerApp.port_retries=0 --LabApp.default_url=/lab/tree/$(TOUR) $(LAB_ARGS)

# The other examples (python -m tensorkit.examples.<name> --help lists their options).
charlm sine: $(VENV)/.base
	$(PY) -m tensorkit.examples.$@

test: $(VENV)/.test
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m pytest $(PYTEST_ARGS)
	@# the engine as the pure-Python source too, as it runs without a build (PYTHONPATH=.)
	TENSORKIT_PURE_PYTHON=1 $(PY) -m pytest $(PYTEST_ARGS) -q $(PURE_PYTHON_TESTS)
	@if command -v node >/dev/null; then node --test widgets/test/*.test.mjs; \
	else echo "node is not installed: widget JS tests not run"; fi
	$(MAKE) docs

# The documentation site, warnings as errors (notebooks rendered with their outputs).
docs: $(VENV)/.test
	$(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache docs/_build test-artifacts
