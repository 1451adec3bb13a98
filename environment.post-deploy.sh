#!/usr/bin/env bash
# Snakemake runs this after creating the rules' conda environment from environment.yml
# (`--software-deployment-method conda`): it installs hierbench itself from this checkout, in
# editable mode (the environment follows the sources, whose changes each rule's code hash
# tracks), without touching the pinned dependencies and without the network.
set -euo pipefail
pip install --no-deps --no-build-isolation --editable "$(cd "$(dirname "$0")" && pwd)"
