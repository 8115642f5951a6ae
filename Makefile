# The two commands of the README: `make demo` and `make test`. Both build .venv themselves.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
CORPUS ?= ../shared/corpus

.PHONY: install demo test test-slow lint typecheck unit conformance bench bench-quick clean lance-protos

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,s3,spark,lance,pandas]'
	touch $@

install: $(VENV)/.installed

demo: install
	$(PY) -m lakecore.demo --corpus $(CORPUS)

lint: install
	$(PY) -m ruff check lakecore plugins conformance tests benchmarks
	$(PY) -m ruff format --check lakecore plugins conformance tests benchmarks

typecheck: install
	$(PY) -m mypy

unit: install
	$(PY) -m pytest -q

conformance: install
	$(PY) -m conformance --corpus $(CORPUS)

test: lint typecheck unit

# The tests kept out of `make test` (pyproject's addopts deselect them with -m 'not slow'):
# full matrices, long races, every fault step, Spark doc examples. Long: tens of minutes.
test-slow: install
	$(PY) -m pytest -q -m slow

bench: install
	$(PY) benchmarks/delta_snapshot.py

# Every benchmark on small inputs, one table of lakecore / reference ratios (a few minutes).
bench-quick: install
	$(PY) benchmarks/run_all.py --quick

# Regenerate plugins/lakecore_lance/proto/*_pb2.py(i) after editing a .proto there. grpcio-tools
# (protoc) goes to a scratch directory, never into the venv or the project's dependencies.
lance-protos: install
	$(PY) tools/lance_protos.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
