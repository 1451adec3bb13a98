"""The per-query rows carry each row's group, so the group-macro summary can be recomputed
from them alone (what the effects' bootstrap does)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hierbench.metrics.scoring import metric_settings, score_draws


def test_the_group_column_recomputes_the_group_macro_summary():
    rng = np.random.default_rng(4)
    leaf = rng.integers(0, 8, size=40)
    labels = np.stack([leaf, leaf // 2, leaf // 4], axis=1)
    ids = pd.Series([f"img{i}" for i in range(40)])
    sealed = pd.DataFrame(
        {"split": "qg-7", "role": ["query"] * 15 + ["gallery"] * 25, "image_id": ids}
    )
    config = {
        "evaluation": {"recall_ks": [1, 5], "ot_ks": [5], "query_chunk": 8},
        "training": {"distance_clip_test": 1e6},
    }
    metric = metric_settings(config, "euclidean", None)
    per_query, summary = score_draws(rng.normal(size=(40, 4)), labels, ids, sealed, [7], metric)
    macro = summary[summary["aggregation"] == "group_macro"].set_index("level")
    for level, column in (("leaf", "ap"), ("middle", "ap"), ("high", "r@5"), ("all", "ot@5")):
        rows = per_query[(per_query["level"] == level) & per_query["valid"]]
        recomputed = rows.groupby("group")[column].mean().mean()
        name = "map" if column == "ap" else column
        assert recomputed == pytest.approx(macro.loc[level, name])
    leaf_rows = per_query[per_query["level"] == "leaf"]
    rows_of_images = leaf_rows["image_id"].str.removeprefix("img").astype(int).to_numpy()
    assert (leaf_rows["group"].to_numpy() == leaf[rows_of_images]).all()
