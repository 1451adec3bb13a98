"""Every number chosen or reported for a dataset uses its registered aggregation (CUB
query-micro, NABirds group-macro), the other one only as the sensitivity analysis."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from hierbench.metrics import summarise
from hierbench.protocol import REGISTERED_AGGREGATION, sensitivity_aggregation
from hierbench.training.tuning import hierarchy_scores, select_temperatures

# Five validation queries: four in middle/high group 0, one alone in group 1.
LABELS = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0], [4, 1, 1]])


def _frame(middle_high_ap: list[float]) -> pd.DataFrame:
    """A per-query frame whose middle and high AP of query i is ``middle_high_ap[i]``."""
    rows = []
    for query, ap in enumerate(middle_high_ap):
        rows.append({"query": query, "level": "leaf", "valid": False, "ap": math.nan})
        rows += [
            {"query": query, "level": lvl, "valid": True, "ap": ap} for lvl in ("middle", "high")
        ]
    return pd.DataFrame(rows)


# τ 0.1 serves the large group well (query-micro 0.68, group-macro 0.5);
# τ 0.5 serves the lone group well (query-micro 0.52, group-macro 0.6).
FRAMES = {0.1: _frame([0.8, 0.8, 0.8, 0.8, 0.2]), 0.5: _frame([0.4, 0.4, 0.4, 0.4, 0.8])}


def _selected(aggregation: str) -> float:
    """The τ the selection picks when every candidate is scored under ``aggregation``."""
    records = [
        {"geometry": "E", "tau": tau, **hierarchy_scores(summarise(frame, LABELS, aggregation))}
        for tau, frame in FRAMES.items()
    ]
    table = select_temperatures(records)
    return float(table.loc[table["selected"], "tau"].item())


def test_the_registered_aggregation_decides_the_temperature():
    # The two aggregations disagree on this case ...
    assert _selected("query_micro") == 0.1
    assert _selected("group_macro") == 0.5
    # ... and each dataset's search scores by its own registered one.
    assert _selected(REGISTERED_AGGREGATION["nabirds"]) == 0.5
    assert _selected(REGISTERED_AGGREGATION["cub"]) == 0.1


def test_hierarchy_scores_are_the_mean_of_middle_and_high():
    scores = hierarchy_scores(summarise(FRAMES[0.1], LABELS, "group_macro"))
    assert scores["map_middle"] == pytest.approx((0.8 + 0.2) / 2)
    assert scores["score"] == pytest.approx(0.5)
    assert math.isnan(scores["map_leaf"])  # no valid leaf query


def test_the_sensitivity_is_the_other_aggregation():
    assert sensitivity_aggregation("query_micro") == "group_macro"
    assert sensitivity_aggregation("group_macro") == "query_micro"
    with pytest.raises(ValueError, match="aggregation must be one of"):
        sensitivity_aggregation("macro")
    with pytest.raises(ValueError, match="aggregation must be"):
        summarise(FRAMES[0.1], LABELS, "macro")
