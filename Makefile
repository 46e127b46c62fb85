# Developer entry points. `make run` and `make test` work on a fresh machine:
# they create .venv, install the package with its compiled twin, and (for
# tests) the real clients and servers the integration tests start.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
PYX    := $(shell find broker -name '_*_c.pyx')
PYTEST_ARGS ?=

.PHONY: setup build-ext test-deps system-deps run lint test test-compiled test-pure bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml setup.py $(PYX)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -e '.[dev]'
	$(MAKE) build-ext
	touch $@

# Compile the Cython twins in place (the editable install imports them from
# the source tree).
build-ext:
	$(BIN)/python setup.py -q build_ext --inplace -j 2

$(VENV)/.test-deps: $(VENV)/.installed
	$(BIN)/python -m pip install -q -e '.[dev,clients,spark]'
	touch $@

test-deps: $(VENV)/.test-deps system-deps

# Debian packages the integration tests start (kcat, prometheus, podman ...).
system-deps:
	bash scripts/install-system-deps.sh

# The broker with an embedded default: data in ./data, Kafka on 9092,
# Prometheus metrics on 9404, both on 127.0.0.1 only (a development run;
# Kafka's default 0.0.0.0 stays the config default, the image sets it).
run: setup
	$(BIN)/broker serve --override listeners=PLAINTEXT://127.0.0.1:9092 \
		--override metrics.listener=127.0.0.1:9404

# mypy type-checks broker/spark against pyspark's own annotations, so lint
# needs the extras installed (without them pyspark's classes are Any).
lint: $(VENV)/.test-deps
	$(BIN)/ruff check broker tests bench
	$(BIN)/ruff format --check broker tests bench
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
