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

.PHONY: setup system-deps run test test-all clean

setup: $(STAMP)

# nginx is the CDN stand-in of the edge tests (Debian package). Installed when missing and we may (root + apt);
# otherwise those tests skip with a message saying so. Java 17 and the gcloud emulators come with the machine image.
system-deps:
	@command -v nginx >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
		(apt-get update -qq && \
		 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null) ; } || \
		echo "nginx not installed: the edge tests will be skipped"

$(STAMP): setup.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check torch==2.13.0
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/newsroom run

# The CI suite: unit, emulator and integration tests; benchmarks and the slowest evaluations are `make test-all`.
test: $(STAMP) system-deps
	$(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS)

test-all: $(STAMP) system-deps
	$(BIN)/python -m pytest $(PYTEST_ARGS)

clean:
	rm -rf .newsroom .pytest_cache
