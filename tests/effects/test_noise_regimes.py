"""The noise-regime detector (hierbench.effects.noise_regimes): it names "few images" when a
handful of test images carry an effect and "outlying seed" when one seed lies far from the
others, stays silent on plain data, and takes what the tables stage holds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scored_arms import scored_arms

from hierbench.effects import EffectsError, per_seed_from_evaluations
from hierbench.effects.noise_regimes import (
    FEW_IMAGES,
    OUTLYING_SEED,
    REGIME_COLUMNS,
    RegimeThresholds,
    image_contrasts,
    noise_regimes,
    top_image_shares,
)
from hierbench.effects.outlying_seeds import esd_outliers, grubbs_critical
from hierbench.effects.statistics import effects_by_seed

ARMS = {"E_R": ("E", "R"), "E_S": ("E", "S"), "H_R": ("H", "R"), "H_S": ("H", "S")}
LEVELS = ("leaf", "middle", "high")
LEAVES, PER_LEAF, SEEDS, DRAWS = 40, 5, 3, (42, 2024)


def _per_query(carriers: int, lift: float = 0.6, seed: int = 0) -> pd.DataFrame:
    """Per-query rows of 200 test images (40 leaves of 5) on two draws that share them, four
    arms and three seeds: AP near 0.5 with a small spread, the H_R arm 0.01 above E_R, and
    ``carriers`` images whose H_R AP is ``lift`` above the rest in every seed."""
    rng = np.random.default_rng(seed)
    images = LEAVES * PER_LEAF
    leaf = np.repeat(np.arange(LEAVES), PER_LEAF)
    groups = np.stack([leaf, leaf // 4, leaf // 20], axis=1)
    difficulty = rng.normal(0, 0.05, images)
    frames = []
    for draw in DRAWS:
        for arm, (geometry, loss) in ARMS.items():
            for seed in range(SEEDS):
                for index, level in enumerate(LEVELS):
                    ap = 0.5 + difficulty + rng.normal(0, 0.03, images)
                    if arm == "H_R":
                        ap = ap + 0.01
                        ap[:carriers] += lift
                    frames.append(
                        pd.DataFrame(
                            {
                                "image_id": [f"img{i:03d}" for i in range(images)],
                                "query": np.arange(images),
                                "level": level,
                                "group": groups[:, index],
                                "valid": True,
                                "ap": np.clip(ap, 0.0, 1.0),
                                "qg_seed": draw,
                                "dataset": "toy",
                                "arm": arm,
                                "geometry": geometry,
                                "loss": loss,
                                "seed": seed,
                            }
                        )
                    )
    return pd.concat(frames, ignore_index=True)


def _by_seed(values: list[float], effect: str = "geom_R") -> pd.DataFrame:
    """Effects by seed of one effect at mean hierarchy on mAP."""
    return pd.DataFrame(
        {
            "dataset": "toy",
            "level": "mean_hierarchy",
            "metric": "map",
            "effect": effect,
            "seed": range(len(values)),
            "value": values,
        }
    )


EMPTY_BY_SEED = _by_seed([]).iloc[:0]


def test_a_few_images_that_carry_the_effect_are_named():
    found = noise_regimes(_per_query(carriers=2), EMPTY_BY_SEED, effects=["geom_R"])
    named = found[(found["level"] == "mean_hierarchy") & (found["metric"] == "map")]
    assert list(named["regime"]) == [FEW_IMAGES]
    row = named.iloc[0]
    assert row["effect"] == "geom_R" and row["dataset"] == "toy"
    assert row["statistic"] >= row["threshold"] == RegimeThresholds().image_share
    assert "2 of 200 query images" in row["detail"]
    # the carriers are named at every level they lift, and for geom_R only
    assert set(found["level"]) == {"leaf", "middle", "high", "mean_hierarchy"}
    assert set(found["effect"]) == {"geom_R"}


def test_images_that_each_carry_a_little_are_not_named():
    found = noise_regimes(_per_query(carriers=0), EMPTY_BY_SEED)
    assert found.empty and list(found.columns) == list(REGIME_COLUMNS)


def test_the_top_images_share_is_their_part_of_the_spread_within_strata():
    contrasts = image_contrasts(_per_query(carriers=2), ["geom_R"], ["leaf"], ["map"])
    assert len(contrasts) == LEAVES * PER_LEAF
    assert contrasts["stratum"].nunique() == LEAVES  # five images per leaf: a stratum each
    shares = top_image_shares(contrasts, 0.01).iloc[0]
    assert (shares["images"], shares["top"]) == (200, 2)
    assert shares["share"] > 0.5
    assert shares["without"] == pytest.approx(0.01, abs=0.005)  # the others' small effect
    plain = top_image_shares(
        image_contrasts(_per_query(carriers=0), ["geom_R"], ["leaf"], ["map"]), 0.01
    )
    assert plain["share"].iloc[0] < 0.1  # normal-ish contrasts: about 9 %


def test_a_seed_far_from_the_others_is_named():
    values = [0.010, 0.012, 0.011, 0.009, 0.010, 0.011, 0.012, 0.010, 0.009, -0.05]
    found = noise_regimes(_per_query(carriers=0).iloc[:0], _by_seed(values))
    assert list(found["regime"]) == [OUTLYING_SEED]
    row = found.iloc[0]
    assert row["statistic"] > row["threshold"] == pytest.approx(grubbs_critical(10, 0.05))
    assert "seed 9 gives -0.05" in row["detail"] and "other 9" in row["detail"]


def test_a_second_failed_seed_does_not_hide_the_first():
    values = [0.010, 0.012, 0.011, 0.009, 0.010, 0.011, 0.012, 0.010, -0.048, -0.05]
    [row] = noise_regimes(_per_query(0).iloc[:0], _by_seed(values)).to_dict("records")
    assert row["regime"] == OUTLYING_SEED
    assert row["detail"].startswith("2 seeds lie far from the others: seed 9 gives -0.05, seed 8")


def test_normal_seeds_are_named_at_the_tests_level():
    rng = np.random.default_rng(1)
    frames = [
        _by_seed(list(rng.normal(0.01, 0.005, 5))).assign(dataset=f"study{k}") for k in range(2000)
    ]
    found = noise_regimes(_per_query(0).iloc[:0], pd.concat(frames, ignore_index=True))
    assert 0.035 <= len(found) / 2000 <= 0.065  # Grubbs' test at α = 0.05


def test_grubbs_critical_values_match_the_published_table():
    assert grubbs_critical(10, 0.05) == pytest.approx(2.290, abs=0.001)
    assert grubbs_critical(20, 0.05) == pytest.approx(2.709, abs=0.001)
    assert grubbs_critical(2, 0.05) == np.inf  # two seeds: no outlier can be told
    assert esd_outliers(np.array([0.0, 1.0]), 0.05).positions == ()


def test_it_takes_the_tables_stages_own_frames():
    """Per-query rows from the scoring code and effects by seed from the per-seed table."""
    per_query_rows, summaries = scored_arms()
    by_seed = effects_by_seed(per_seed_from_evaluations(summaries, "query_micro"))
    found = noise_regimes(per_query_rows, by_seed, thresholds=RegimeThresholds(image_share=0.01))
    assert list(found.columns) == list(REGIME_COLUMNS)
    few = found[found["regime"] == FEW_IMAGES]  # a threshold of 1 % names every effect
    assert {"mean_hierarchy", "all"} <= set(few["level"])
    assert {"map", "r@1", "ot@5"} <= set(few["metric"])
    assert set(few["effect"]) == {"geom_R", "geom_S", "loss_E", "loss_H", "int"}


def test_rows_without_images_or_seeds_are_refused_with_what_they_lack():
    with pytest.raises(EffectsError, match="image_id"):
        noise_regimes(_per_query(0).drop(columns="image_id"), EMPTY_BY_SEED)
    with pytest.raises(EffectsError, match="effects_by_seed"):
        noise_regimes(_per_query(0).iloc[:0], _by_seed([0.1, 0.2, 0.3]).drop(columns="seed"))
    with pytest.raises(EffectsError, match="image_share"):
        RegimeThresholds(image_share=0.0)
