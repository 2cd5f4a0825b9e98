# Two commands do everything on a fresh machine: `make run` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= all
SNAKEMAKE_ARGS ?=

.PHONY: help setup test-services run rerun paper compare test test-fast test-slowed lint lock schemas report clean clean-history

help:  ## list the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): requirements.lock pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; install Python 3.11 or run make PYTHON=/path/to/python3.11"; exit 2; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --require-hashes -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

setup: $(STAMP)  ## create .venv and install the pinned dependency set and the package

# The tracking-server tests start PostgreSQL (as a throwaway cluster) behind `mlflow server`;
# they need its binaries: Debian's postgresql, installed here when missing.
PG_INITDB := $(firstword $(wildcard /usr/lib/postgresql/*/bin/initdb) $(shell command -v initdb))

# The SLURM tests start a one-node cluster (munge, slurmctld, slurmd): Debian's slurm-wlm.
# The browser tests open the report and MLflow's UI in Debian's chromium (headless).
CHROMIUM := $(firstword $(shell command -v chromium chromium-browser google-chrome 2>/dev/null))

test-services:  ## install PostgreSQL, SLURM and chromium (Debian's packages) when missing
	@SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	if [ -n "$(PG_INITDB)" ] && [ -x /usr/sbin/slurmctld ] && [ -x /usr/sbin/slurmd ] && [ -x /usr/sbin/munged ] && [ -n "$(CHROMIUM)" ]; then \
	  echo "PostgreSQL: $(PG_INITDB); SLURM: $$(/usr/sbin/slurmctld -V); browser: $(CHROMIUM)"; \
	elif command -v apt-get >/dev/null; then \
	  echo "installing Debian's postgresql, slurm-wlm, munge and chromium for the tracking-server, cluster and browser tests"; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
	    --no-install-recommends postgresql slurm-wlm slurmctld slurmd slurm-client munge chromium >/dev/null; \
	else echo "error: PostgreSQL, SLURM or chromium is not installed and apt-get is missing; install postgresql (initdb, pg_ctl), slurm-wlm, munge and chromium, then run make test again"; exit 2; fi

run: setup  ## set up, then run the default study (snakemake --cores all)
	$(BIN)/snakemake --workflow-profile profiles/default --cores $(CORES) $(SNAKEMAKE_ARGS)

rerun: setup  ## run the study again on the same data (trainings redone): the scorecard gains a run of history
	$(BIN)/snakemake --workflow-profile profiles/default --cores $(CORES) --forcerun train $(SNAKEMAKE_ARGS)

REPEATS ?= 3
paper: setup  ## the default study with REPEATS (3) runs of every arm: each claim with its interval
	$(BIN)/snakemake --workflow-profile profiles/default --cores $(CORES) --config repeats=$(REPEATS) $(SNAKEMAKE_ARGS)

# The suite runs on TEST_WORKERS pytest-xdist workers (2: on 2 cores half the suite's time is
# spent waiting on services, snakemake and start-ups; the shared smoke study and the SLURM cluster
# (fixed ports) each stay on one worker, xdist_group), then the `serial` tests alone (a state
# forced by the host's own pace). TEST_WORKERS=0: all in one process.
# SYSTEM=0: nothing installed with sudo; the tests that need PostgreSQL, SLURM or chromium are
# skipped, each with its reason (CI runs them all).
TEST_WORKERS ?= 2
SYSTEM ?= 1
test: setup $(if $(filter 0,$(SYSTEM)),,test-services)  ## set up, then run the whole test suite (unit, workflow, end-to-end smoke, tracking server; SYSTEM=0: none of those needing sudo apt-get)
	PERFSTUDY_SYSTEM=$(SYSTEM) $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup -m "not serial"
	PERFSTUDY_SYSTEM=$(SYSTEM) $(BIN)/python -m pytest -m serial

test-fast: setup  ## the tests that do not train (about 4 minutes on 2 cores)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup -m "not slow and not serial"
	$(BIN)/python -m pytest -m "serial and not slow"

SLOWDOWN ?= 2
# the same two passes as `make test`, both inside one CPU quota (as on a 2-core machine that slow)
test-slowed: setup test-services  ## the whole suite as on a machine SLOWDOWN (2) times slower (a CPU quota)
	tests/throttle.sh $(SLOWDOWN) sh -c '$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup -m "not serial" && $(BIN)/python -m pytest -m serial'

STUDY ?= seed_case
compare: setup  ## two runs side by side: make compare A=results B=/tmp/run2 (claims, steps, machines, configs)
	@test -n "$(A)" -a -n "$(B)" || { echo "error: name the two results folders: make compare A=results B=/tmp/run2"; exit 2; }
	$(BIN)/python scripts/compare_runs.py "$(A)" "$(B)" --study $(STUDY)

lint: setup  ## ruff on the Python code, snakemake --lint on the workflow
	$(BIN)/ruff check src scripts tests
	$(BIN)/snakemake --lint

schemas: setup  ## rewrite docs/schemas/ from the typed records (after changing a record: bump its SCHEMA_VERSION)
	$(BIN)/python scripts/write_schemas.py

report: setup  ## snakemake's own self-contained HTML report of the last run
	$(BIN)/snakemake --cores 1 --report results/report/snakemake_report.html

lock:  ## re-pin requirements.lock (with hashes) from pyproject.toml's one dependency list (needs uv)
	uv pip compile pyproject.toml --extra test -o requirements.lock --python-version 3.11 --generate-hashes

# Replaced runs (an arm trained again) are soft-deleted by MLflow; `mlflow gc` removes them and
# their artifacts for good. A tracking server's store: run `mlflow gc --backend-store-uri <its
# database>` with MLFLOW_TRACKING_URI set, where the server runs.
MLFLOW_DB := results/mlflow/mlflow.db
clean:  ## delete every output but the MLflow store (results/mlflow: the study's history; its deleted runs purged); the next run rebuilds them
	rm -rf results/data results/runs results/report results/logs results/benchmarks .snakemake
	@if [ -f $(MLFLOW_DB) ] && [ -x $(BIN)/mlflow ]; then \
	  echo "mlflow gc: purging the store's deleted runs (replaced by a retrained arm)"; \
	  MLFLOW_TRACKING_URI=sqlite:///$(abspath $(MLFLOW_DB)) $(BIN)/mlflow gc --backend-store-uri sqlite:///$(abspath $(MLFLOW_DB)); fi
	@# MindSpore's dataset shared-memory files of ended trainings (older than an hour)
	@find /tmp -maxdepth 1 -name 'dataset_ipc_*' -user $$(id -u) -mmin +60 -delete 2>/dev/null || true

clean-history:  ## delete every output and the MLflow store too (the claims' history starts again)
	rm -rf results/data results/runs results/report results/mlflow results/logs results/benchmarks .snakemake
