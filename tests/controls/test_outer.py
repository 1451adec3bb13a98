"""The outer hierarchy-disjoint splits' library code: which splits and cells, the per-split
rows, the table over splits, the paired gains, and the scorer's refusal of a miswired cell."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from hierbench.controls.outer import OuterSplitError, outer_cells, outer_splits
from hierbench.controls.outer_tables import outer_gains, outer_per_split, outer_table
from hierbench.effects.intervals import IntervalSettings
from hierbench.stages.outer import _checked_spec

# Mean hierarchy mAP is the mean of middle and high: these values make it exact.
ENDPOINTS = {
    "outer-1": {"frozen": 0.30, "E_R": 0.31, "H_R": 0.32, "H_S": 0.36},
    "outer-2": {"frozen": 0.28, "E_R": 0.30, "H_R": 0.29, "H_S": 0.31},
    "outer-3": {"frozen": 0.33, "E_R": 0.32, "H_R": 0.34, "H_S": 0.38},
}


def _config(enabled: bool = True, count: int = 3) -> dict:
    block = {
        "splits": {"outer": {"count": count}},
        "controls": {"outer": {"enabled": enabled, "seeds": [42]}},
    }
    return {"datasets": {"cub": block}}


def test_splits_and_cells_follow_the_config() -> None:
    assert outer_splits(_config(), "cub") == ["outer-1", "outer-2", "outer-3"]
    assert outer_splits(_config(enabled=False), "cub") == []
    # the paper's arms: matched E, matched H and SupCon (H by default, E when configured)
    assert outer_cells(_config(), "cub") == ["ER-42", "HR-42", "HS-42"]
    euclidean = _config()
    euclidean["datasets"]["cub"]["controls"]["outer"]["supcon_geometry"] = "E"
    assert outer_cells(euclidean, "cub") == ["ER-42", "HR-42", "ES-42"]
    with pytest.raises(OuterSplitError, match=r"datasets.cub.splits.outer.count is 0"):
        outer_splits(_config(count=0), "cub")


def _scores() -> pd.DataFrame:
    rows = []
    for split, arms in ENDPOINTS.items():
        for arm, value in arms.items():
            geometry, loss = ("frozen", "frozen") if arm == "frozen" else arm.split("_")
            for qg in (42, 2024):
                for aggregation, shift in (("group_macro", 0.0), ("query_micro", 0.1)):
                    for level, level_value in (("leaf", 0.9), ("middle", value), ("high", value)):
                        rows.append(
                            {
                                "dataset": "cub",
                                "split": split,
                                "arm": arm,
                                "geometry": geometry,
                                "loss": loss,
                                "seed": -1 if arm == "frozen" else 42,
                                "qg_seed": qg,
                                "aggregation": aggregation,
                                "level": level,
                                "n_valid": 3,
                                "map": level_value + shift,
                            }
                        )
    return pd.DataFrame(rows)


def test_table_reads_group_macro_mean_hierarchy_over_splits() -> None:
    per_split = outer_per_split(_scores(), "group_macro")
    table = outer_table(per_split).set_index("arm")
    assert list(table.index) == ["frozen", "E_R", "H_R", "H_S"]
    assert table["role"].tolist() == ["Frozen features", "matched E", "matched H", "SupCon"]
    for split, arms in ENDPOINTS.items():
        for arm, value in arms.items():
            assert table.loc[arm, split] == pytest.approx(value)
    values = [ENDPOINTS[s]["H_S"] for s in ENDPOINTS]
    expected = f"{np.mean(values):.4f} ± {np.std(values, ddof=1):.4f}"
    assert table.loc["H_S", "mean_sd"] == expected


def test_the_paper_s_gains_are_paired_per_split_at_every_level() -> None:
    gains = outer_gains(outer_per_split(_scores(), "group_macro"))
    assert list(zip(gains["gain"], gains["level"], strict=True)) == [
        (gain, level)
        for gain in ("SupCon − matched H", "matched H − matched E")
        for level in ("middle", "high", "mean_hierarchy")
    ]
    table = gains.set_index(["gain", "level"])
    differences = [ENDPOINTS[s]["H_S"] - ENDPOINTS[s]["H_R"] for s in ENDPOINTS]
    row = table.loc[("SupCon − matched H", "mean_hierarchy")]
    assert row["mean"] == pytest.approx(np.mean(differences))
    assert row["sd"] == pytest.approx(np.std(differences, ddof=1))
    assert row["positive_splits"] == sum(d > 0 for d in differences) and row["splits"] == 3
    geometry = table.loc[("matched H − matched E", "middle")]
    assert geometry["positive_splits"] == 2  # +0.01, −0.01, +0.02


def test_gains_carry_an_interval_and_sign_flip_test_over_splits() -> None:
    settings = IntervalSettings(level=0.9, replicates=2000, seed=1)
    gains = outer_gains(outer_per_split(_scores(), "group_macro"), settings)
    table = gains.set_index(["gain", "level"])
    differences = np.array([ENDPOINTS[s]["H_R"] - ENDPOINTS[s]["E_R"] for s in ENDPOINTS])
    row = table.loc[("matched H − matched E", "mean_hierarchy")]  # +0.01, −0.01, +0.02
    # the t interval over the three splits (each split's test side is its own: no shared part)
    low, high = stats.t.interval(0.9, 2, loc=differences.mean(), scale=stats.sem(differences))
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high)) and row["df"] == 2
    assert row["p_splits"] == pytest.approx(_hand_sign_flip(differences))
    assert row["p_min"] == pytest.approx(0.25)
    same_sign = table.loc[("SupCon − matched H", "mean_hierarchy")]  # +0.04, +0.02, +0.04
    assert same_sign["p_splits"] == pytest.approx(0.25) and same_sign["ci_low"] > 0


def _hand_sign_flip(values: np.ndarray) -> float:
    """The share of the 2**n sign assignments whose |sum| reaches the observed |sum|."""
    import itertools

    observed = abs(values.sum())
    flips = [abs(np.dot(signs, values)) for signs in itertools.product((1, -1), repeat=3)]
    return float(np.mean([flip >= observed - 1e-12 for flip in flips]))


def test_a_cell_trained_on_another_split_is_refused(tmp_path) -> None:
    record = tmp_path / "record.json"
    record.write_text(json.dumps({"train_split": "outer-2", "spec": {}}))
    with pytest.raises(OuterSplitError, match="trained on 'outer-2', not on 'outer-1'"):
        _checked_spec(record, "outer-1")


def test_a_split_without_valid_upper_queries_stays_in_the_table_as_nan() -> None:
    scores = _scores()
    scores.loc[(scores["split"] == "outer-2") & (scores["level"] == "high"), "map"] = float("nan")
    table = outer_table(outer_per_split(scores, "group_macro")).set_index("arm")
    assert list(table.index) == ["frozen", "E_R", "H_R", "H_S"]
    assert np.isnan(table.loc["E_R", "outer-2"])
    assert table.loc["E_R", "outer-1"] == pytest.approx(0.31)
