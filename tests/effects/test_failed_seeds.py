"""The failed-seed rule (hierbench.effects.failed_seeds): a flat loss or an outlying arm value
names a cell, never an effect; a failed cell drops its seed from the effects that hold its arm;
the failure count's interval is Clopper–Pearson's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from hierbench.effects.failed_seeds import (
    FailureRule,
    arms_of_effect,
    failed_cells,
    failure_rate_text,
    trained_seed_values,
)

SEEDS = (1, 2, 3, 4, 5, 6)


def _per_seed(values: dict[str, list[float]]) -> pd.DataFrame:
    rows = [
        {"dataset": "cub", "geometry": arm[0], "loss": arm[2], "seed": seed,
         "level": "mean_hierarchy", "metric": "map", "value": value}
        for arm, seeds in values.items()
        for seed, value in zip(SEEDS, seeds, strict=True)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def _log(losses: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"epoch": range(1, len(losses) + 1), "loss": losses})


NORMAL = [0.50, 0.51, 0.49, 0.505, 0.495, 0.50]


def test_a_flat_loss_names_its_cell():
    logs = {("ER", 1): _log([0.3, 0.2]), ("HS", 4): _log([0.3, 0.3, 0.3])}
    failed = failed_cells(logs, _per_seed({"E_R": NORMAL}), FailureRule(outlier_alpha=None))
    assert failed.to_dict("records") == [
        {"arm": "H_S", "seed": 4, "reason": "training loss flat over 3 epochs"}
    ]
    assert failed_cells(logs, _per_seed({}), FailureRule(False, None)).empty


def test_an_outlying_arm_value_names_its_seed_and_a_normal_arm_none():
    values = {"E_R": NORMAL, "H_R": [0.50, 0.51, 0.49, 0.505, 0.10, 0.50]}
    failed = failed_cells({}, _per_seed(values), FailureRule(flat_loss=False))
    assert list(zip(failed["arm"], failed["seed"], strict=True)) == [("H_R", 5)]
    assert "ESD critical value" in failed["reason"].iloc[0]


def test_the_outlier_rule_is_blind_to_the_effect():
    """Moving a whole arm (an effect) names nothing: only a seed apart from its own arm."""
    shifted = {"E_R": NORMAL, "H_R": [v + 0.2 for v in NORMAL]}
    assert failed_cells({}, _per_seed(shifted), FailureRule(flat_loss=False)).empty


def test_a_failed_cell_drops_its_seed_from_the_effects_holding_its_arm():
    assert arms_of_effect("int") == {"E_R", "H_R", "E_S", "H_S"}
    assert arms_of_effect("geom_S") == {"H_S", "E_S"}
    by_seed = pd.DataFrame(
        [
            {
                "effect": effect,
                "seed": seed,
                "metric": "map",
                "level": "mean_hierarchy",
                "value": 0.0,
            }
            for effect in ("geom_R", "geom_S", "int")
            for seed in (1, 2, 3)
        ]
    )
    failed = pd.DataFrame({"arm": ["H_R"], "seed": [2], "reason": ["x"]})
    kept = trained_seed_values(by_seed, failed)
    assert sorted(kept.groupby("effect")["seed"].apply(tuple).items()) == [
        ("geom_R", (1, 3)),
        ("geom_S", (1, 2, 3)),
        ("int", (1, 3)),
    ]


def test_the_failure_count_has_an_exact_interval():
    text = failure_rate_text(1, 24, 0.95)
    interval = stats.binomtest(1, 24).proportion_ci(0.95, method="exact")
    assert text.startswith("1 of 24 factorial cells failed (4.2%; 95% Clopper–Pearson interval")
    assert f"{interval.low:.1%} to {interval.high:.1%}" in text
    assert np.isclose(interval.low, 1 - 0.975 ** (1 / 24), rtol=0.05)


def test_unknown_rule_keys_are_refused():
    with pytest.raises(ValueError, match=r"effects\.failed_seeds"):
        FailureRule.from_config({"flat": True})
