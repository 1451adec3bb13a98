"""The test images' share of the factorial's intervals (hierbench.effects.query_intervals): it
agrees with the per-seed tables' effects, it is paired (a plain loop that resamples the queries
once for every arm gives the same numbers), and it is what the tables print when the rows are
at hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scored_arms import ARMS, DRAWS, SEEDS
from scored_arms import scored_arms as _scores

from hierbench.effects import EffectsError, per_seed_from_evaluations, plan_effects
from hierbench.effects.intervals import IntervalSettings, t_interval
from hierbench.effects.query_intervals import query_noise_table
from hierbench.effects.resampling import collapsed_strata, draw_image_weights

LEVELS = ("leaf", "middle", "high")
SETTINGS = IntervalSettings(level=0.9, replicates=400, seed=3)


@pytest.mark.parametrize("aggregation", ["query_micro", "group_macro"])
def test_the_observed_effects_are_the_tables_and_their_intervals_surround_them(aggregation):
    per_query, summaries = _scores()
    noise = query_noise_table(per_query, aggregation, SETTINGS)
    per_seed = per_seed_from_evaluations(summaries, aggregation)
    plan = plan_effects(per_seed, SETTINGS, noise)  # raises if an observed value differs
    summary = plan.summary
    assert {"map", "r@1", "ot@5"} <= set(summary["metric"])
    assert set(summary["level"]) == {"leaf", "middle", "high", "mean_hierarchy", "all"}
    assert (summary["ci_low"] <= summary["mean"]).all() and (
        summary["mean"] <= summary["ci_high"]
    ).all()
    assert "shared variance" in plan.uncertainty and "seed 3" in plan.uncertainty
    seeds_only = plan_effects(per_seed, SETTINGS)
    # the test images' shared noise widens the intervals beyond the seeds' alone, and the
    # degrees of freedom grow beyond n − 1 where it matters
    assert (summary["se"] >= seeds_only.summary["se"] - 1e-15).all()
    assert (summary["se"] > seeds_only.summary["se"]).mean() > 0.5
    assert (seeds_only.summary["df"] == 2).all() and (summary["df"] > 2).mean() > 0.5


def _weighted_mean(values: np.ndarray, valid: np.ndarray, weights: np.ndarray) -> float:
    """A query-micro mean of the valid values under query weights."""
    return float(np.sum(weights * np.where(valid, values, 0)) / np.sum(weights * valid))


def _plain_shared_variance(
    per_query: pd.DataFrame, effect: str, level: str, *, paired: bool = True
) -> float:
    """The shared variance of one effect on mAP, one replicate, seed, draw and arm at a time:
    each arm's query-micro mAP under the replicate's query weights (the same weights for every
    arm: the pairing; ``paired=False`` resamples the second arm on its own), the effect of
    those, averaged over draws, then the mean covariance of two seeds' values over the
    replicates."""
    formulas = {"geom_R": ("H_R", "E_R"), "loss_E": ("E_S", "E_R")}
    first, second = formulas[effect]
    arrays, image_of = [], []
    for draw in DRAWS:
        rows = per_query[per_query["qg_seed"] == draw]
        at = rows[rows["level"] == level].sort_values("query")
        one = at[(at["arm"] == "E_R") & (at["seed"] == SEEDS[0])]
        image_of.append(one["image_id"].tolist())
        arrays.append(
            {
                (arm, seed): (
                    at[(at["arm"] == arm) & (at["seed"] == seed)]["ap"].to_numpy(),
                    at[(at["arm"] == arm) & (at["seed"] == seed)]["valid"].to_numpy(),
                )
                for arm in ARMS
                for seed in SEEDS
            }
        )
    # each query image's leaf, middle and high label, one row per image
    one = per_query[(per_query["arm"] == "E_R") & (per_query["seed"] == SEEDS[0])]
    images = sorted(set(one["image_id"]))
    labels = np.array(
        [
            [one[(one["image_id"] == i) & (one["level"] == lv)]["group"].iloc[0] for lv in LEVELS]
            for i in images
        ]
    )
    strata = collapsed_strata(labels)

    def by_query(seed: int) -> list[np.ndarray]:
        """Each draw's (R, Q) query weights: a query takes its image's weight."""
        weights = draw_image_weights(strata, SETTINGS.replicates, seed)
        return [weights[:, [images.index(i) for i in draw]] for draw in image_of]

    weights = by_query(SETTINGS.seed)
    others = weights if paired else by_query(99)
    by_seed = np.empty((SETTINGS.replicates, len(SEEDS)))
    for r in range(SETTINGS.replicates):
        for s, seed in enumerate(SEEDS):
            per_draw = []
            for d in range(len(DRAWS)):
                first_map = _weighted_mean(*arrays[d][first, seed], weights[d][r])
                second_map = _weighted_mean(*arrays[d][second, seed], others[d][r])
                per_draw.append(first_map - second_map)
            by_seed[r, s] = np.mean(per_draw)
    cov = np.cov(by_seed, rowvar=False)
    return max(0.0, float(cov[~np.eye(len(SEEDS), dtype=bool)].mean()))


@pytest.mark.parametrize("effect", ["geom_R", "loss_E"])
def test_the_resampling_is_paired_as_a_plain_loop_shows(effect):
    per_query, _ = _scores()
    noise = query_noise_table(per_query, "query_micro", SETTINGS)
    row = noise[(noise["effect"] == effect) & (noise["metric"] == "map")]
    found = float(row.loc[row["level"] == "high", "shared"].iloc[0])
    assert found == pytest.approx(_plain_shared_variance(per_query, effect, "high"), rel=1e-9)


def test_pairing_cancels_the_query_difficulty_the_arms_share():
    # each query's difficulty moves every arm alike: the effect (H_R − E_R) is a steady 0.05,
    # so its shared variance is nil; resampled arm by arm it would not be
    per_query, _ = _scores()
    difficulty = per_query.groupby(["qg_seed", "query", "level"])["ap"].transform("mean")
    steady = per_query.assign(ap=difficulty + np.where(per_query["arm"] == "H_R", 0.05, 0.0))
    noise = query_noise_table(steady, "query_micro", SETTINGS)
    shared = noise[(noise["effect"] == "geom_R") & (noise["metric"] == "map")]
    assert (shared["shared"] < 1e-20).all()
    assert _plain_shared_variance(steady, "geom_R", "high") < 1e-20
    assert _plain_shared_variance(steady, "geom_R", "high", paired=False) > 1e-5
    per_seed = [0.05, 0.05 + 1e-4, 0.05 - 1e-4]
    assert t_interval(per_seed, float(shared["shared"].max()), 0.95).low > 0


def test_per_query_rows_that_are_not_the_summaries_stop_the_tables():
    per_query, summaries = _scores()
    per_query.loc[(per_query["arm"] == "H_S") & (per_query["level"] == "leaf"), "ap"] *= 0.5
    noise = query_noise_table(per_query, "query_micro", SETTINGS)
    per_seed = per_seed_from_evaluations(summaries, "query_micro")
    with pytest.raises(EffectsError, match=r"differs in its per-query rows.*evaluate again"):
        plan_effects(per_seed, SETTINGS, noise)


def test_the_same_rows_give_the_same_bytes():
    per_query, _ = _scores()
    first = query_noise_table(per_query, "group_macro", SETTINGS)
    again = query_noise_table(per_query, "group_macro", SETTINGS)
    pd.testing.assert_frame_equal(first, again, check_exact=True)


def test_hierbench_effects_takes_per_query_rows_and_records_its_seed(tmp_path, capsys):
    import json

    from hierbench.cli import main
    from hierbench.provenance.artifacts import read_parquet_metadata

    per_query, summaries = _scores()
    per_seed = per_seed_from_evaluations(summaries, "group_macro")
    per_seed.to_parquet(tmp_path / "per_seed.parquet")
    per_query.to_parquet(tmp_path / "eval.parquet")
    out = tmp_path / "tables"
    args = ["effects", str(tmp_path / "per_seed.parquet"), "--out", str(out)]
    extra = ["--per-query", str(tmp_path / "eval.parquet"), "--aggregation", "group_macro"]
    assert main([*args, *extra, "--replicates", "400", "--seed", "3", "--confidence", "0.9"]) == 0
    assert "shared variance" in capsys.readouterr().out
    expected = plan_effects(
        per_seed, SETTINGS, query_noise_table(per_query, "group_macro", SETTINGS)
    ).summary
    written = pd.read_parquet(out / "effects_summary.parquet")
    pd.testing.assert_frame_equal(written, expected, check_dtype=False)
    metadata = read_parquet_metadata(out / "effects_summary.parquet")
    assert metadata["interval_settings"] == {
        "method": "t",
        "level": 0.9,
        "replicates": 400,
        "seed": 3,
    }
    record = json.loads((out / "effects_summary.parquet.prov.json").read_text())
    assert record["params"]["intervals"]["seed"] == 3
    per_query.drop(columns="group").to_parquet(tmp_path / "eval.parquet")
    assert main([*args, *extra]) == 2
    assert "lack columns ['group']" in capsys.readouterr().err


def test_a_cell_missing_a_query_is_named():
    per_query, _ = _scores()
    gone = (per_query["arm"] == "E_S") & (per_query["seed"] == 2) & (per_query["query"] == 0)
    with pytest.raises(EffectsError, match=r"do not hold the same queries.*incomplete"):
        query_noise_table(per_query[~gone], "query_micro", SETTINGS)
