# Two commands after a clone (README.md):
#   make run    set up, then run the whole system on this machine with the embedded backends
#   make test   set up, then run the test suite (starts and stops the emulators it needs)
# Set-up is idempotent: a virtualenv in .venv, torch's CPU wheel first (a plain resolve would pull a multi-GB
# CUDA build, see ../shared/docs/LOCAL_STACK.md), then this package with its test extras, every version from
# constraints.txt (the lock file; templates/Dockerfile and CI install from it too). `make lock` regenerates it.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=
CONSTRAINTS := constraints.txt
PIP := $(BIN)/pip install --quiet --disable-pip-version-check -c $(CONSTRAINTS)
# pip-tools lives in its own virtualenv: the lock is made from setup.py, not from what .venv happens to hold.
TOOLS := .venv-tools
PIP_TOOLS_VERSION := 7.6.2

.PHONY: setup system-deps run lint test test-all clean lock

setup: $(STAMP)

# nginx is the CDN stand-in of the edge tests (Debian package). Installed when missing and we may (root + apt);
# otherwise those tests skip with a message saying so. Java 17 and the gcloud emulators come with the machine image.
# chromium (Debian's, /usr/bin/chromium) is the browser tests/browser drives with Playwright: playwright's own
# browser download is not used. Without it those tests skip locally and fail under CI=true.
system-deps:
	@command -v nginx >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
		(apt-get update -qq && \
		 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null) ; } || \
		echo "nginx not installed: the edge tests will be skipped"
	@test -x /usr/bin/chromium || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
		(apt-get update -qq && \
		 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) ; } || \
		echo "chromium not installed: the browser tests will be skipped (and fail under CI=true)"

$(STAMP): setup.py $(CONSTRAINTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) torch==2.13.0
	$(PIP) -e '.[test]'
	touch $(STAMP)

# Regenerate the lock from setup.py's requirements (runtime + test extra) after changing them; commit the result.
# torch resolves to the CPU build (2.13.0+cpu) from the machine's wheel store / the CPU index given to pip.
lock:
	test -x $(TOOLS)/bin/pip-compile || { $(PYTHON) -m venv $(TOOLS) && \
		$(TOOLS)/bin/pip install --quiet pip-tools==$(PIP_TOOLS_VERSION); }
	$(TOOLS)/bin/pip-compile --extra test --strip-extras --no-emit-index-url --no-emit-find-links --quiet \
		--output-file $(CONSTRAINTS) setup.py

run: $(STAMP)
	$(BIN)/newsroom run

# The CI suite: unit, emulator and integration tests; benchmarks and the slowest evaluations are `make test-all`.
# It includes tests/deploy/test_wheel.py: the built wheel installed (not editable) into a fresh virtualenv.
# Lint and format check (settings in pyproject.toml); `$(BIN)/ruff format .` fixes the formatting.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: $(STAMP) system-deps lint
	$(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS)

test-all: $(STAMP) system-deps
	$(BIN)/python -m pytest $(PYTEST_ARGS)

clean:
	rm -rf .newsroom .pytest_cache
