# make demo   - set up .venv and run the crash-and-recover demo: a PyFlink job on SQLite
# make test   - set up .venv and run the whole suite (starts a local Kafka broker, Fluss cluster
#               and Flink session cluster)
# make test-fast - unit tests only, no services, no Flink
# make docs   - the documentation site (docs/ and the docstrings) into .site/, strictly: a broken
#               link or reference fails (make test builds it too: tests/test_docs_site.py)
# make typecheck - mypy (strict on durable, stores, operator, flink and the top package; run by make test)
# make bench  - benchmarks (starts Kafka and PostgreSQL itself) and docs/performance.md;
#               BENCH=prefix runs only entries whose name starts with prefix
# make soak   - the soak (benchmarks/soak): SOAK_MINUTES (default 10) of a Flink session cluster,
#               three brokers, steady load and faults; benchmarks/results/soak/ (not in make test)
#               SOAK_ARGS passes more options (python -m benchmarks.soak --help); an interrupted
#               soak is resumed by the next make soak (SOAK_ARGS=--fresh discards it)
# make soak-smoke - the soak's 90 s smoke test (tests/soak, skipped by make test)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench
SOAK_STAMP := $(VENV)/.installed-soak
SOAK_MINUTES ?= 10

.PHONY: demo test test-extended test-fast typecheck bench soak soak-smoke lint docs clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev,kafka,flink,docs,ui]"
	# pyfluss wants pandas>=2.3.1 while apache-flink pins pandas<2.3; the Fluss store does not
	# use pandas, so pyfluss goes in without its dependencies (pyarrow comes with apache-flink).
	$(BIN)/python -m pip install -q --no-deps "pyfluss>=1.0"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/actionjournal demo

# pytest exits 5 when it collected no test; make treats any non-zero exit as failure.
test: $(STAMP) typecheck
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q

# The `extended` tests: more cases of kinds `make test` covers once (tests/cluster/test_failover_more.py).
test-extended: $(STAMP)
	$(BIN)/python -m pytest -q -m extended

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow and not kafka and not fluss and not flink and not cluster"

# mypy: strict on durable/, stores/, operator/, flink/ and the top package (pyproject.toml)
typecheck: $(STAMP)
	$(BIN)/mypy

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[bench]"
	touch $(BENCH_STAMP)

# Regenerates docs/performance.md from benchmarks/results/latest.json at the end.
bench: $(BENCH_STAMP)
	$(BIN)/python -m benchmarks.run $(if $(BENCH),--only $(BENCH),)

$(SOAK_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[soak]"
	touch $(SOAK_STAMP)

soak: $(SOAK_STAMP)
	nice -n 10 $(BIN)/python -m benchmarks.soak --minutes $(SOAK_MINUTES) $(SOAK_ARGS)

soak-smoke: $(SOAK_STAMP)
	ACTIONJOURNAL_SOAK=1 $(BIN)/python -m pytest -q -m soak tests/soak

docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

lint: $(STAMP)
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) .demo .soak .site .pytest_cache .ruff_cache .mypy_cache
