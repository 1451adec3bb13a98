"""What a null result rules out (hierbench.effects.null_results): the bounds of an interval that
holds zero, and the two one-sided tests at the config's equivalence margin."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from scipy import stats

from hierbench.effects.intervals import t_interval
from hierbench.effects.null_results import equivalence_text, null_lines, tost_interval
from hierbench.effects.render import ruled_out_text
from hierbench.effects.verdicts import MARGIN_COLUMN, endpoints_table


def _row(per_seed: list[float], shared: float = 0.0, effect: str = "geom_S") -> pd.Series:
    """An effects-summary row as the tables make it from per-seed values and a shared variance."""
    interval = t_interval(per_seed, shared, 0.95)
    values = pd.Series(per_seed)
    return pd.Series(
        {
            "dataset": "cub",
            "level": "mean_hierarchy",
            "metric": "map",
            "effect": effect,
            "mean": values.mean(),
            "sd": values.std(ddof=1),
            "n": len(values),
            "positive_seeds": int((values > 0).sum()),
            "negative_seeds": int((values < 0).sum()),
            "se": interval.se,
            "ci_low": interval.low,
            "ci_high": interval.high,
            "p_seeds": 0.25,
            "p_min": 0.25,
        }
    )


NULL = _row([-0.001, 0.0005, 0.002])  # holds zero, narrow
WIDE = _row([-0.02, 0.01, 0.03])  # holds zero, wide
CLEAR = _row([0.05, 0.051, 0.049])  # excludes zero


def test_a_null_interval_rules_out_what_lies_beyond_its_ends():
    low, high = NULL["ci_low"], NULL["ci_high"]
    assert ruled_out_text(NULL) == f"below {low:+.4f} and above {high:+.4f}"
    assert ruled_out_text(CLEAR) == ""  # not a null result
    assert ruled_out_text(NULL.copy().replace({low: math.nan})) == ""


def test_the_two_one_sided_tests_use_the_interval_at_twice_alpha():
    # no shared variance: Student's t at 1 − α one-sided, i.e. the 90 % two-sided interval
    low, high = tost_interval(NULL, 0.95)
    half = stats.t.ppf(0.95, 2) * NULL["sd"] / math.sqrt(3)
    assert (low, high) == pytest.approx((NULL["mean"] - half, NULL["mean"] + half), rel=1e-3)
    assert NULL["ci_low"] < low < high < NULL["ci_high"]
    # with the test images' shared variance the quantile is the calibrated one, still inside
    shared = _row([-0.001, 0.0005, 0.002], shared=1e-6)
    low, high = tost_interval(shared, 0.95)
    assert shared["ci_low"] < low < high < shared["ci_high"]
    assert tost_interval(NULL.copy().replace({3: 1}), 0.95) == pytest.approx(
        (math.nan,) * 2, nan_ok=True
    )


def test_equivalence_is_shown_only_when_the_interval_lies_within_the_margin():
    assert equivalence_text(NULL, 0.01, 0.95).startswith("yes: its 90% interval")
    assert equivalence_text(WIDE, 0.01, 0.95).startswith("not shown: its 90% interval")
    # every planned endpoint is tested: a clear effect is not within a small margin, and a
    # clear but small one is said to be non-zero and negligible
    assert equivalence_text(CLEAR, 0.01, 0.95).startswith("not shown: its 90% interval")
    small = _row([0.004, 0.0041, 0.0039])
    assert equivalence_text(small, 0.01, 0.95).endswith("(non-zero, and smaller than the margin)")
    assert equivalence_text(NULL, 0.001, 0.95).startswith("not shown")


def test_the_summary_says_what_null_endpoints_rule_out_and_tests_the_margin():
    planned = pd.DataFrame([NULL, WIDE, CLEAR.copy().replace({"geom_S": "loss_E"})])
    planned["effect"] = ["geom_S", "int", "loss_E"]
    without = null_lines(planned, 0.95, None)
    assert without[0].startswith("2 planned endpoint(s) have an interval that holds zero")
    assert "No equivalence margin is set" in without[1]
    with_margin = null_lines(planned, 0.95, 0.01)
    assert "show 1 of them to be smaller than the margin" in with_margin[1]
    assert null_lines(planned[planned["effect"] == "loss_E"], 0.95, 0.01) == []


def test_the_endpoints_table_carries_both_columns():
    summary = pd.DataFrame([NULL, WIDE])
    summary["effect"] = ["geom_S", "int"]
    table = endpoints_table(summary, 0.95, margin=0.01)
    assert table["rules out (interval holds 0)"].str.startswith("below").all()
    assert table[MARGIN_COLUMN].str.split(":").str[0].tolist() == ["yes", "not shown"]
    assert MARGIN_COLUMN not in endpoints_table(summary, 0.95)
