# Two entry points for a new user: `make demo` and `make test`.
# Both create .venv with the machine's python3 and install the project into it.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench bench-quick docs-test clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev,plot,progress,tables,klu]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m scenarios demo

# --no-loadscope-reorder: files in name order, so the long ones (benchmark smoke, distributed,
# docs) start early instead of last. --max-worker-restart=0: a crashed worker ends the run at
# once with its test named (xdist's loadfile scheduler can hang after replacing a crashed one).
test: $(STAMP)
	$(PY) -m pytest tests -n 2 --dist loadfile --no-loadscope-reorder --max-worker-restart=0 --durations=40

bench: $(STAMP)
	$(PY) -m benchmarks

bench-quick: $(STAMP)
	$(PY) -m benchmarks --quick

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
