"""A newcomer's own collection is scored, or says why not, on the terminal: init-dataset writes
a split whose sealed test draws score every level, check-dataset names a level no draw can
score (exit 1), and a run whose planned endpoints are all NaN says so as it ends. Everything
runs from an installed wheel, in a folder other than the config's, under a path with a space."""

from __future__ import annotations

import pandas as pd
import pytest

from hierbench.layout import ARMS_SUMMARY_TABLE
from hierbench.protocol import MEAN_HIERARCHY

DATASET = "beetles"  # the collection's folder name: init-dataset's dataset name


@pytest.mark.slow
def test_the_default_project_scores_every_planned_endpoint(newcomer_run, newcomer):
    config, ran = newcomer_run
    assert ran.returncode == 0, ran.stderr + ran.stdout
    assert "every planned endpoint is NaN" not in ran.stdout + ran.stderr
    arms = pd.read_parquet(
        config.parent / "runs" / DATASET / ARMS_SUMMARY_TABLE.format(dataset=DATASET)
    )
    headline = arms[(arms["level"] == MEAN_HIERARCHY) & (arms["metric"] == "map")]
    assert len(headline) >= 4 and headline["mean"].notna().all()
    checked = newcomer.hierbench("check-dataset", str(config), DATASET)
    assert checked.returncode == 0, checked.stderr
    assert "valid queries per test draw" in checked.stdout


@pytest.mark.slow
def test_check_dataset_and_the_run_say_when_no_endpoint_can_be_scored(newcomer, held_out_genera):
    config = held_out_genera  # its run may have been finished by the Ctrl-C test: then a no-op
    checked = newcomer.hierbench("check-dataset", str(config), DATASET)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "cannot score the planned endpoints (no valid query at the high level)" in checked.stdout
    assert "error: the high (high) level has no valid query in any test draw" in checked.stderr

    ran = newcomer.hierbench("run", str(config), "--cores", "2")
    assert ran.returncode == 0, ran.stderr + ran.stdout
    summary = config.parent / "runs" / DATASET / DATASET / "tables" / "summary.md"
    assert f"warning: {DATASET}: every planned endpoint is NaN. The high (high) level" in ran.stderr
    assert f"See {summary}" in ran.stderr
