"""Two-stage intervals from per-query rows (hierbench.effects.query_intervals): they agree with
the per-seed tables' effects, and they are what the tables print when the rows are at hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hierbench.effects import EffectsError, per_seed_from_evaluations, plan_effects
from hierbench.effects.intervals import IntervalSettings
from hierbench.effects.query_intervals import query_intervals, with_query_intervals
from hierbench.metrics.scoring import metric_settings, score_draws

ARMS = {"E_R": ("E", "R"), "H_R": ("H", "R"), "E_S": ("E", "S"), "H_S": ("H", "S")}
SEEDS, DRAWS = (1, 2, 3), (7, 8)
SETTINGS = IntervalSettings(level=0.9, replicates=400, seed=3)


def _scores() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-query rows and summaries of every arm and seed on two draws of 60 items, the H_S
    arm's embeddings nearer its labels than E_R's."""
    rng = np.random.default_rng(0)
    leaf = rng.integers(0, 6, size=60)
    labels = np.stack([leaf, leaf // 2, leaf // 4], axis=1)
    ids = pd.Series([f"img{i:02d}" for i in range(60)])
    sealed = pd.concat(
        [
            pd.DataFrame(
                {
                    "split": f"qg-{d}",
                    "role": np.where(order < 20, "query", "gallery"),
                    "image_id": ids,
                }
            )
            for d, order in ((d, rng.permutation(60)) for d in DRAWS)
        ]
    )
    config = {
        "evaluation": {"recall_ks": [1], "ot_ks": [5], "query_chunk": 16},
        "training": {"distance_clip_test": 1e6},
    }
    metric = metric_settings(config, "euclidean", None)
    per_query, summaries = [], []
    for pull, (arm, (geometry, loss)) in enumerate(ARMS.items()):
        for seed in SEEDS:
            points = rng.normal(size=(60, 4)) + pull * np.eye(4)[leaf % 4]
            rows, summary = score_draws(points, labels, ids, sealed, list(DRAWS), metric)
            identity = {
                "dataset": "toy",
                "arm": arm,
                "geometry": geometry,
                "loss": loss,
                "seed": seed,
            }
            per_query.append(rows.assign(**identity))
            summaries.append(summary.assign(**identity))
    return pd.concat(per_query, ignore_index=True), pd.concat(summaries, ignore_index=True)


@pytest.mark.parametrize("aggregation", ["query_micro", "group_macro"])
def test_the_observed_effects_are_the_tables_and_their_intervals_surround_them(aggregation):
    per_query, summaries = _scores()
    intervals = query_intervals(per_query, aggregation, SETTINGS)
    per_seed = per_seed_from_evaluations(summaries, aggregation)
    plan = plan_effects(per_seed, SETTINGS, intervals)  # raises if an observed value differs
    summary = plan.summary
    assert {"map", "r@1", "ot@5"} <= set(summary["metric"])
    assert set(summary["level"]) == {"leaf", "middle", "high", "mean_hierarchy", "all"}
    assert (summary["ci_low"] <= summary["mean"]).all() and (
        summary["mean"] <= summary["ci_high"]
    ).all()
    assert "two-stage paired bootstrap" in plan.uncertainty
    seeds_only = plan_effects(per_seed, SETTINGS)
    # the test images' noise widens the intervals beyond the seeds' alone
    widths = summary["ci_high"] - summary["ci_low"]
    seeds_widths = seeds_only.summary["ci_high"] - seeds_only.summary["ci_low"]
    assert (widths > seeds_widths).mean() > 0.5


def test_per_query_rows_that_are_not_the_summaries_stop_the_tables():
    per_query, summaries = _scores()
    per_query.loc[(per_query["arm"] == "H_S") & (per_query["level"] == "leaf"), "ap"] *= 0.5
    intervals = query_intervals(per_query, "query_micro", SETTINGS)
    per_seed = per_seed_from_evaluations(summaries, "query_micro")
    with pytest.raises(EffectsError, match=r"differs in its per-query rows.*evaluate again"):
        plan_effects(per_seed, SETTINGS, intervals)


def test_the_same_rows_give_the_same_bytes():
    per_query, _ = _scores()
    first = query_intervals(per_query, "group_macro", SETTINGS)
    again = query_intervals(per_query, "group_macro", SETTINGS)
    pd.testing.assert_frame_equal(first, again, check_exact=True)
    assert with_query_intervals is not None


def test_hierbench_effects_takes_per_query_rows(tmp_path, capsys):
    from hierbench.cli import main

    per_query, summaries = _scores()
    per_seed = per_seed_from_evaluations(summaries, "group_macro")
    per_seed.to_parquet(tmp_path / "per_seed.parquet")
    per_query.to_parquet(tmp_path / "eval.parquet")
    out = tmp_path / "tables"
    args = ["effects", "--per-seed", str(tmp_path / "per_seed.parquet"), "--out", str(out)]
    extra = ["--per-query", str(tmp_path / "eval.parquet"), "--aggregation", "group_macro"]
    assert main([*args, *extra, "--replicates", "400", "--seed", "3", "--confidence", "0.9"]) == 0
    assert "two-stage paired bootstrap" in capsys.readouterr().out
    expected = plan_effects(
        per_seed, SETTINGS, query_intervals(per_query, "group_macro", SETTINGS)
    ).summary
    written = pd.read_parquet(out / "effects_summary.parquet")
    pd.testing.assert_frame_equal(written, expected, check_dtype=False)
    per_query.drop(columns="group").to_parquet(tmp_path / "eval.parquet")
    assert main([*args, *extra]) == 2
    assert "lack columns ['group']" in capsys.readouterr().err


def test_a_cell_missing_a_query_is_named():
    per_query, _ = _scores()
    gone = (per_query["arm"] == "E_S") & (per_query["seed"] == 2) & (per_query["query"] == 0)
    with pytest.raises(EffectsError, match=r"do not hold the same queries.*incomplete"):
        query_intervals(per_query[~gone], "query_micro", SETTINGS)
