# Developer entry points. `make run` and `make test` work on a fresh machine:
# they create .venv, install the package with its compiled twin, and (for
# tests) the real clients and servers the integration tests start.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
PYX    := $(shell find broker -name '_*_c.pyx')
PYTEST_ARGS ?=
SHELL  := /bin/bash
.SHELLFLAGS := -o pipefail -ec
# pip's install lines, less its warnings about index locations this machine's
# pip configuration names but does not have (one per package, every time)
PIP    := scripts/pip-quiet $(BIN)/python -m pip install
STEP   = @printf '==> %s\n'

.PHONY: setup build-ext test-deps system-deps run lint test test-compiled test-pure bench clean

# What `make run` needs: the package, its run-time dependencies and the
# compiled twins (setup.py compiles each once and keeps it in a cache, so a
# later `pip install -e '.[extra]'` copies instead of compiling again).
setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml setup.py $(PYX)
	$(STEP) "[setup 1/2] the virtual environment .venv ($(PYTHON))"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(STEP) "[setup 2/2] the broker and its run-time dependencies, the compiled twins"
	$(PIP) -e .
	touch $@
	$(STEP) "set up in .venv (the test and benchmark extras come with make test / make bench)"

# Compile the Cython twins in place again after editing a .pyx (the editable
# install imports them from the source tree; unchanged ones come from the cache).
build-ext:
	$(BIN)/python setup.py -q build_ext --inplace

$(VENV)/.test-deps: $(VENV)/.installed
	$(STEP) "[test-deps] the dev, clients and spark extras (pyspark is a large download)"
	$(PIP) -e '.[dev,clients,spark]'
	touch $@

test-deps: $(VENV)/.test-deps system-deps

# Debian packages the integration tests start (kcat, prometheus, podman ...).
system-deps:
	$(STEP) "[system-deps] Debian packages the tests start (kcat, prometheus, podman, Java 17 ...)"
	bash scripts/install-system-deps.sh

# The broker with an embedded default: data in ./data, Kafka on 9092,
# Prometheus metrics on 9404, both on 127.0.0.1 only (a development run;
# Kafka's default 0.0.0.0 stays the config default, the image sets it).
run: setup
	$(STEP) "starting the broker: Kafka on 127.0.0.1:9092, metrics on http://127.0.0.1:9404/metrics, data in ./data (Ctrl-C stops it)"
	$(BIN)/broker serve --override listeners=PLAINTEXT://127.0.0.1:9092 \
		--override metrics.listener=127.0.0.1:9404

# mypy type-checks broker/spark against pyspark's own annotations, so lint
# needs the extras installed (without them pyspark's classes are Any).
lint: $(VENV)/.test-deps
	$(BIN)/ruff check broker tests bench
	$(BIN)/ruff format --check broker tests bench
	$(BIN)/python -m broker.protocol.stubs --check
	$(BIN)/mypy
	$(BIN)/lint-imports

# The whole suite twice: compiled twin + uvloop, then pure Python + the stdlib
# event loop. The conftest guard fails the first run if the twin did not load.
test: lint test-deps test-compiled test-pure

test-compiled: test-deps
	BROKER_EXPECT_COMPILED=1 BROKER_EVENT_LOOP=uvloop $(BIN)/python -m pytest -q $(PYTEST_ARGS)

test-pure: test-deps
	BROKER_NO_EXTENSIONS=1 BROKER_EVENT_LOOP=asyncio $(BIN)/python -m pytest -q $(PYTEST_ARGS)

bench: test-deps
	$(BIN)/python -m bench

clean:
	rm -rf build $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
	find broker -name '*.so' -delete
	find broker -name '_*_c.c' -delete
