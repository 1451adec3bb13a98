# Two entry points: `make run` (the pipeline on the embedded demo) and `make test`
# (`make test-fast` runs the unit tests only).
# Both bootstrap .venv first; the bootstrap is skipped when a stamp keyed on the hash of the
# dependency specification (pyproject.toml + requirements.lock) is present.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
DEPS_HASH := $(shell cat pyproject.toml requirements.lock | sha256sum | cut -c1-16)
STAMP := $(VENV)/.deps-$(DEPS_HASH)
CORES ?= all
SNAKEMAKE_ARGS ?=

export PATH := $(BIN):$(PATH)
export HF_HUB_OFFLINE := 1
export PYTHONHASHSEED := 0

.PHONY: run test test-fast test-cluster venv lint lock clean

run: $(STAMP)
	snakemake --cores $(CORES) $(SNAKEMAKE_ARGS)

test: $(STAMP)
	pytest
	ruff check .
	snakemake --lint

# The unit tests only: everything but the tests that run Snakemake (marked slow).
test-fast: $(STAMP)
	pytest -m "not slow"

# The tiny config on a one-node SLURM cluster started on this machine (profiles/slurm), compared
# byte for byte with a local run, then audited (scripts/cluster.py; needs root and Debian's
# slurm-wlm and munge, installed with apt-get when missing, else it skips). Prove the plumbing
# on one file first: make test-cluster CLUSTER_ARGS="--target results/cub/splits/dev.parquet"
test-cluster: $(STAMP)
	python scripts/cluster.py check $(CLUSTER_ARGS)

venv: $(STAMP)

$(STAMP): pyproject.toml requirements.lock
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@rm -f $(VENV)/.deps-*
	@touch $@
	@echo "environment ready: $(VENV) (deps $(DEPS_HASH))"

# Re-pin the whole environment after changing a version in pyproject.toml.
lock: $(STAMP)
	( echo "# Full, exact environment that make installs (pip freeze of a working venv)."; \
	  echo "# Regenerate with: make lock"; \
	  $(BIN)/python -m pip freeze --all --exclude-editable | grep -v -e '^pip==' -e '^hierbench' ) > requirements.lock.new
	mv requirements.lock.new requirements.lock

clean:
	rm -rf results logs .snakemake
