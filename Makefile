# Two commands after a clone (README.md):
#   make run    set up, then run the whole system on this machine with the embedded backends
#   make test   set up, then run the test suite (starts and stops the emulators it needs)
# Set-up is idempotent: a virtualenv in .venv, torch's CPU wheel first (a plain resolve would pull a multi-GB
# CUDA build, see ../shared/docs/LOCAL_STACK.md), then this package with its test extras.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: setup run test test-all bench clean

setup: $(STAMP)

$(STAMP): setup.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check torch==2.13.0
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/newsroom run

# The CI suite: unit, emulator and integration tests; benchmarks and the slowest evaluations are `make test-all`.
test: $(STAMP)
	$(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS)

test-all: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

clean:
	rm -rf .newsroom .pytest_cache
