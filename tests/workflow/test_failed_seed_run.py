"""A failed seed in the tiny run: one cell's training made to fail (its loss flat, its record
made to match, as a run whose training failed would have written it) is named in summary.md,
with the endpoints it enters over every seed and over the seeds that trained, and the failure
count with its interval; the other dataset's summary says no seed failed."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from conftest import TINY, TINY_RUN, snakemake

from hierbench.provenance.artifacts import provenance_path
from hierbench.provenance.hashing import sha256_file

FAILED_LOG = f"{TINY_RUN}/cub/cells/ER-42/train_log.parquet"


def _flatten_the_loss(repo: Path) -> None:
    """ER seed 42's training loss made flat over its epochs, its record edited to match."""
    path = repo / FAILED_LOG
    log = pd.read_parquet(path)
    log["loss"] = float(log["loss"].iloc[0])
    log.to_parquet(path, index=False)
    record_path = provenance_path(path)
    record = json.loads(record_path.read_text())
    record["sha256"], record["bytes"] = sha256_file(path), path.stat().st_size
    record_path.write_text(json.dumps(record))


def test_a_failed_seed_is_named_with_both_estimands(built_repo: Path):
    before = (built_repo / f"{TINY_RUN}/cub/tables/summary.md").read_text()
    assert "## Failed seeds" in before and "0 of 8 factorial cells failed" in before
    _flatten_the_loss(built_repo)
    snakemake(built_repo, *TINY)
    summary = (built_repo / f"{TINY_RUN}/cub/tables/summary.md").read_text()
    section = summary.split("## Failed seeds", 1)[1].split("\n## ", 1)[0]
    assert "- E_R seed 42: training loss flat over 2 epochs" in section
    assert "1 of 8 factorial cells failed (12.5%; 95% Clopper–Pearson interval" in section
    # the endpoints holding E_R (geom_R, loss_E, int), each over every seed and the one that trained
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    assert [row.split("|")[1].strip() for row in rows[1:]] == ["geom_R", "loss_E", "int"]
    assert all("(no interval from 1 seed)" in row for row in rows[1:])
    assert all(row.split("|")[3].strip() == "2" for row in rows[1:])  # every seed: two
    untouched = (built_repo / f"{TINY_RUN}/nabirds/tables/summary.md").read_text()
    assert "0 of 8 factorial cells failed" in untouched and "- E_R seed" not in untouched
