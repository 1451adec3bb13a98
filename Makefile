# Two entry points: `make run` (the pipeline on the embedded demo) and `make test`
# (`make test-fast` runs the unit tests only). `make bench` runs every speed benchmark;
# `make docs` builds the user guide (docs/, mkdocs.yml) into site/.
# Both bootstrap .venv first; the bootstrap is skipped when a stamp keyed on the hash of the
# dependency specification (pyproject.toml + requirements.lock) is present.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
DEPS_HASH := $(shell cat pyproject.toml requirements.lock | sha256sum | cut -c1-16)
STAMP := $(VENV)/.deps-$(DEPS_HASH)
# The benchmarks' extra (scikit-learn), installed on top by `make bench` only.
BENCH_HASH := $(shell cat requirements-bench.lock | sha256sum | cut -c1-16)
BENCH_STAMP := $(VENV)/.bench-$(BENCH_HASH)
BENCH_PACKAGES := $(shell grep -v '^\#' requirements-bench.lock | sed -n 's/==.*//p')
CORES ?= all
SNAKEMAKE_ARGS ?=
BENCH_ARGS ?=

export PATH := $(BIN):$(PATH)
export HF_HUB_OFFLINE := 1
export PYTHONHASHSEED := 0

.PHONY: run test test-fast test-cluster bench docs venv lint lock clean

run: $(STAMP)
	snakemake --cores $(CORES) $(SNAKEMAKE_ARGS)

test: $(STAMP)
	pytest -n auto --dist loadgroup --no-loadscope-reorder
	ruff check .
	snakemake --lint

# The unit tests only: everything but the tests that run Snakemake (marked slow).
test-fast: $(STAMP)
	pytest -m "not slow"

# The tiny config on a one-node SLURM cluster started on this machine (profiles/slurm), compared
# byte for byte with a local run, then audited (tools/cluster.py; needs root and Debian's
# slurm-wlm and munge, installed with apt-get when missing, else it skips). Prove the plumbing
# on one file first: make test-cluster CLUSTER_ARGS="--target runs/tiny/cub/splits/dev.parquet"
test-cluster: $(STAMP)
	python tools/cluster.py check $(CLUSTER_ARGS)

# Every benchmark, each figure a ratio to a reference measured in the same run: writes
# benchmarks/results.parquet and docs/benchmarks.md, exits 1 when a goal is missed.
# BENCH_ARGS="--quick" for a smoke check at small sizes; "--demo" adds the demo's wall time.
bench: $(STAMP) $(BENCH_STAMP)
	python benchmarks/run_all.py $(BENCH_ARGS)

# The user guide with MkDocs, strict: a warning (a broken link or anchor, a page left out of
# the nav) fails the build, and so does a stale generated page (docs/cli.md from the parser,
# docs/errors.md from the user-error cases: python tools/reference_pages.py --write).
docs: $(STAMP)
	mkdocs build --strict --site-dir site

venv: $(STAMP)

$(STAMP): pyproject.toml requirements.lock
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@rm -f $(VENV)/.deps-*
	@touch $@
	@echo "environment ready: $(VENV) (deps $(DEPS_HASH))"

# Reinstalled when the bench lock changes (or after a new venv); the main lock constrains it.
$(BENCH_STAMP): requirements-bench.lock $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check \
	  -r requirements-bench.lock -c requirements.lock
	@rm -f $(VENV)/.bench-*
	@touch $@

# Re-pin the whole environment after changing a version in pyproject.toml (the bench extra,
# when installed, stays out: it has its own lock).
lock: $(STAMP)
	( echo "# Full, exact environment that make installs (pip freeze of a working venv)."; \
	  echo "# Regenerate with: make lock"; \
	  $(BIN)/python -m pip freeze --all --exclude-editable $(addprefix --exclude ,$(BENCH_PACKAGES)) \
	    | grep -v -e '^pip==' -e '^hierbench' ) > requirements.lock.new
	mv requirements.lock.new requirements.lock

clean:
	rm -rf results logs runs .snakemake
