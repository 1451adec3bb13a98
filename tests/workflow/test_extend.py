"""Extend the study (docs/extend.md): the example triplet-margin objective, sphere geometry and
NDCG@10 metric, named in configs laid over the tiny run. The objective and the geometry join the
factorial with every guarantee of the paper's cells (and meet in one arm, C_T), and editing
either reruns its own training and what reads its cells, nothing upstream or beside it; the
metric is scored in every sealed evaluation and reaches the tables with intervals, and editing
it reruns the evaluations and tables alone."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import (
    TINY,
    TINY_RUN,
    TINY_SEEDS,
    assert_plugin_row,
    scheduled_rules,
    snakemake,
)

# The rules that train or search (the training curves, drawn from train logs, are not one).
TRAINING_RULES = ("train_", "tune", "select_")

EXAMPLE = (
    "examples/triplet.yaml",
    "examples/sphere.yaml",
    "examples/ndcg.yaml",
    "extend-overlay.yaml",
)
# The built tiny run stays the run folder (only the added loss's jobs, the new lock and what
# reads it run again); cub alone keeps the test short.
OVERLAY = {"run": TINY_RUN, "datasets": {"nabirds": {"enabled": False}}}
ADDED_CELLS = [f"{g}T-{s}" for g in "EHC" for s in TINY_SEEDS]
ADDED_EFFECTS = [f"loss_T{base}_{g}" for base in "RS" for g in "EHC"] + ["geom_T"]
SPHERE_CELLS = [f"C{loss}-{s}" for loss in "RS" for s in TINY_SEEDS]
SPHERE_EFFECTS = [f"geom_C{base}_{loss}" for base in "EH" for loss in "RST"] + ["loss_C"]


def _args() -> tuple[str, ...]:
    return (*TINY, *EXAMPLE)


@pytest.fixture(scope="module")
def extended_repo(_built_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built tiny run, then the two examples laid over it and run to completion."""
    target = tmp_path_factory.mktemp("extend") / "repo"
    shutil.copytree(_built_repo, target, symlinks=True)
    (target / EXAMPLE[-1]).write_text(yaml.safe_dump(OVERLAY))
    snakemake(target, *_args())
    return target


def _reworded_copy(extended_repo: Path, tmp_path: Path, example: str) -> tuple[Path, Path, str]:
    """A copy of the extended run with the example's module docstring reworded, which reruns
    nothing (a docstring is not behaviour): the copy, the example's path and its source."""
    repo = tmp_path / "repo"
    shutil.copytree(extended_repo, repo, symlinks=True)
    plugin = repo / "examples" / example
    source = plugin.read_text()
    plugin.write_text(source.replace('"""', '""" (reworded)', 1))
    assert scheduled_rules(repo, *_args()) == {}
    return repo, plugin, source


@pytest.mark.slow
def test_the_added_loss_trains_with_the_papers_initialisation_and_batch_order(
    extended_repo: Path,
):
    cells = extended_repo / f"{TINY_RUN}/cub/cells"
    bundle = json.loads((cells / "bundles/factorial-T.json").read_text())
    assert sorted(bundle["cells"]) == sorted(ADDED_CELLS)
    for cell in ADDED_CELLS:
        record = json.loads((cells / f"{cell}/record.json").read_text())
        seed = cell.split("-")[1]
        paper = json.loads((cells / f"ER-{seed}/record.json").read_text())
        assert record["spec"]["loss"] == "T"
        assert record["initial_weight_hash"] == paper["initial_weight_hash"]
        assert record["batch_order_hashes"] == paper["batch_order_hashes"]
    audit = pd.read_parquet(extended_repo / f"{TINY_RUN}/cub/audit/fairness.parquet")
    assert audit["passed"].all()
    reloaded = set(audit.loc[audit["check"] == "reload_in_audit", "scope"])
    assert set(ADDED_CELLS) <= reloaded
    lock = (extended_repo / f"{TINY_RUN}/cub/lock/final_lock.json").read_text()
    assert all(cell in lock for cell in ADDED_CELLS)


@pytest.mark.slow
def test_the_added_geometry_trains_with_the_papers_initialisation_and_its_own_temperature(
    extended_repo: Path,
):
    base = extended_repo / f"{TINY_RUN}/cub"
    bundle = json.loads((base / "cells/bundles/geometry-C.json").read_text())
    assert sorted(bundle["cells"]) == sorted(SPHERE_CELLS)
    selection = pd.read_parquet(base / "tuning/selection-C.parquet")
    assert set(selection["geometry"]) == {"C"} and selection["selected"].sum() == 1
    chosen = float(selection.loc[selection["selected"], "tau"].iloc[0])
    for cell in SPHERE_CELLS:
        record = json.loads((base / f"cells/{cell}/record.json").read_text())
        seed = cell.split("-")[1]
        paper = json.loads((base / f"cells/ER-{seed}/record.json").read_text())
        assert record["spec"]["geometry_plugin"] == "examples/sphere.py:GEOMETRY"
        assert record["initial_weight_hash"] == paper["initial_weight_hash"]
        assert record["batch_order_hashes"] == paper["batch_order_hashes"]
        assert record["spec"]["tau"] == (chosen if cell.startswith("CS") else None)
    audit = pd.read_parquet(base / "audit/fairness.parquet")
    reloaded = set(audit.loc[audit["check"] == "reload_in_audit", "scope"])
    assert audit["passed"].all() and set(SPHERE_CELLS) <= reloaded
    lock = (base / "lock/final_lock.json").read_text()
    assert all(cell in lock for cell in SPHERE_CELLS)
    paper_selection = pd.read_parquet(base / "tuning/selection.parquet")
    assert set(paper_selection["geometry"]) == {"E", "H"}  # the paper's search untouched


@pytest.mark.slow
def test_the_added_arms_reach_the_tables_intervals_figures_and_report(extended_repo: Path):
    base = extended_repo / f"{TINY_RUN}/cub"
    arms = pd.read_parquet(base / "tables/arms_summary.parquet")
    assert {"E_T", "H_T", "C_T", "C_R", "C_S"} <= set(arms["geometry"] + "_" + arms["loss"])
    effects = pd.read_parquet(base / "tables/effects_summary.parquet")
    every = ADDED_EFFECTS + SPHERE_EFFECTS
    added = effects[effects["effect"].isin(every) & (effects["metric"] == "map")]
    assert set(added["effect"]) == set(every)
    assert added[["ci_low", "ci_high", "se"]].notna().all().all()
    assert (added["ci_low"] <= added["mean"]).all() and (added["mean"] <= added["ci_high"]).all()
    summary = (base / "tables/summary.md").read_text()
    planned = summary.split("## Planned endpoints")[1].split("##")[0]
    assert not any(effect in planned for effect in ADDED_EFFECTS)  # the paper's five lead
    assert "the added losses' effects" in summary
    caption = (base / "figures/effects_intervals.rst").read_text()
    assert all(f"``{effect}``" in caption for effect in every)
    snakemake(extended_repo, "--report", "report.html", *_args())
    html = (extended_repo / "report.html").read_text(encoding="utf-8", errors="replace")
    assert "loss_TR_E" in html and "geom_CE_R" in html


@pytest.mark.slow
def test_editing_the_plugin_reruns_its_training_and_what_reads_its_cells(
    extended_repo: Path, tmp_path: Path
):
    repo, plugin, source = _reworded_copy(extended_repo, tmp_path, "triplet_margin.py")
    plugin.write_text(re.sub(r"MARGIN = 0\.2", "MARGIN = 0.3", source))
    rules = scheduled_rules(repo, *_args())
    assert rules["train_added_loss"] == 1
    trained = {rule for rule in rules if rule.startswith(TRAINING_RULES)}
    assert trained == {"train_added_loss"}
    assert rules["training_curves"] == 1  # the added loss's cells' curves are drawn anew
    # upstream of the cells nothing; downstream the lock (one seal over every cell), then what
    # reads it
    upstream = ("taxonomy", "demo", "image_table", "layout", "backbone", "features", "splits")
    assert not [rule for rule in rules if rule.startswith(upstream)]
    assert "tuning_selection" not in rules and "fit_pca" not in rules
    assert rules["final_lock"] == 1 and rules["effect_tables"] == 1
    assert_plugin_row("examples/triplet_margin.py", rules)


@pytest.mark.slow
def test_editing_the_geometry_reruns_its_search_its_cells_and_what_reads_them(
    extended_repo: Path, tmp_path: Path
):
    repo, plugin, source = _reworded_copy(extended_repo, tmp_path, "sphere.py")
    plugin.write_text(source.replace("EPSILON = 1e-6", "EPSILON = 1e-5"))
    rules = scheduled_rules(repo, *_args())
    trained = {rule for rule in rules if rule.startswith(TRAINING_RULES)}
    # its own search and cells, and the added loss's C_T cells (their bundle holds them)
    assert trained == {"tune_added_geometry", "train_added_geometry", "train_added_loss"}
    assert rules["added_geometry_tuning_selection"] == 1
    assert "tuning_selection" not in rules and "train_factorial" not in rules
    upstream = ("taxonomy", "demo", "image_table", "layout", "backbone", "features", "splits")
    assert not [rule for rule in rules if rule.startswith(upstream)]
    assert rules["final_lock"] == 1 and rules["effect_tables"] == 1
    assert_plugin_row("examples/sphere.py", rules)


@pytest.mark.slow
def test_the_added_metric_is_scored_and_reaches_the_tables_with_intervals(extended_repo: Path):
    base = extended_repo / f"{TINY_RUN}/cub"
    per_query = pd.read_parquet(base / f"eval/ER-{TINY_SEEDS[0]}.parquet")
    assert per_query["ndcg@10"].isna().equals(per_query["ap"].isna())  # every level but all
    assert per_query["ndcg@10"].dropna().between(0, 1).all()
    arms = pd.read_parquet(base / "tables/arms_summary.parquet")
    assert (arms["metric"] == "ndcg@10").any()
    effects = pd.read_parquet(base / "tables/effects_summary.parquet")
    paper = effects[(effects["metric"] == "ndcg@10") & effects["effect"].isin(["geom_R", "int"])]
    assert len(paper) and paper[["ci_low", "ci_high"]].notna().all().all()


@pytest.mark.slow
def test_editing_the_metric_reruns_the_evaluations_and_tables_alone(
    extended_repo: Path, tmp_path: Path
):
    repo, plugin, source = _reworded_copy(extended_repo, tmp_path, "ndcg.py")
    plugin.write_text(source.replace("CUTOFF = 10\n", "CUTOFF = 10\nEXTRA = 1\n"))
    rules = scheduled_rules(repo, *_args())
    assert rules["evaluate_cell"] == 1  # one job scores the factorial's cells: E, H, C x R, S, T
    assert rules["effect_tables"] == 1
    made = ("train", "tune", "select", "final_lock", "fairness", "features", "splits", "score")
    assert not [rule for rule in rules if rule.startswith(made)]
    assert_plugin_row("examples/ndcg.py", rules)
