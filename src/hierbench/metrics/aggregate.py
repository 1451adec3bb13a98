"""Summaries of the per-query frame: query-micro (mean over valid queries), group-macro (equal
weight per group) and the mean hierarchy mAP.

OT@K scores every query once, on the rows of level ``all`` (all valid): both summaries give
its plain mean over all queries. At that level every query is its own group (it belongs to no
single level's group), so its group-macro value equals the query mean. The tree-referenced
``ot_tree@…`` scores are NaN for a query whose tree holds no gallery item; both summaries skip
those, so they are means over the queries that have a tree, and ``n_tree`` counts them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from hierbench.metricnames import is_plugin_metric
from hierbench.metrics.labels import check_labels
from hierbench.metrics.ot import OT_TREE_PREFIX, TREE_CUTOFF, is_ot_column
from hierbench.protocol import ALL_LEVELS
from hierbench.relations import LEVELS


def query_micro(frame: pd.DataFrame) -> pd.DataFrame:
    """Summary frame of means over valid queries per level (CUB's registered endpoint)."""
    metrics = _metric_columns(frame)
    rows = []
    for level in _levels(frame):
        valid = frame[(frame["level"] == level) & frame["valid"]]
        means = {_summary_name(name): _mean(valid[name], name, level) for name in metrics}
        rows.append({"level": level, "n_valid": len(valid), **_tree_count(valid), **means})
    counts = ["n_valid", *_tree_count(frame)]
    return pd.DataFrame(rows, columns=["level", *counts, *map(_summary_name, metrics)])


def group_macro(frame: pd.DataFrame, query_labels: Any) -> pd.DataFrame:
    """Summary frame weighting each group equally (NABirds' endpoint).

    The group of a query at a level is its own label at that level (leaf label at "leaf",
    middle label at "middle", high label at "high"). Metrics are averaged over the valid
    queries of each group, then over the groups that hold at least one valid query.
    """
    metrics = _metric_columns(frame)
    labels = check_labels(query_labels, None, "query_labels")
    queries = frame["query"].to_numpy()
    if len(queries) and (queries.min() < 0 or queries.max() >= len(labels)):
        raise ValueError(
            f"frame has query indices outside 0..{len(labels) - 1}; pass the query_labels "
            "that the frame was evaluated with"
        )
    rows = []
    for level in _levels(frame):
        chosen = ((frame["level"] == level) & frame["valid"]).to_numpy()
        valid = frame.loc[chosen, list(metrics)]
        # At level "all" each query is its own group; the group mean is then the query mean.
        groups = (
            queries[chosen] if level == ALL_LEVELS else labels[queries[chosen], LEVELS.index(level)]
        )
        group_means = valid.groupby(groups, sort=True).mean()
        means = {_summary_name(name): _mean(group_means[name], name, level) for name in metrics}
        counts = {"n_valid": len(valid), "n_groups": len(group_means), **_tree_count(valid)}
        rows.append({"level": level, **counts, **means})
    columns = ["level", "n_valid", "n_groups", *_tree_count(frame), *map(_summary_name, metrics)]
    return pd.DataFrame(rows, columns=columns)


def mean_hierarchy(summary: pd.DataFrame) -> float:
    """Mean hierarchy mAP: mean of the middle and high mAP of a summary frame (leaf excluded)."""
    missing = {"level", "map"} - set(summary.columns)
    if missing:
        raise ValueError(
            f"summary frame lacks columns {sorted(missing)}; pass query_micro or group_macro output"
        )
    values = []
    for level in ("middle", "high"):
        found = summary.loc[summary["level"] == level, "map"]
        if len(found) != 1:
            raise ValueError(f"summary frame needs exactly one {level!r} row, found {len(found)}")
        values.append(float(found.iloc[0]))
    return float(np.mean(values))


def summarise(frame: pd.DataFrame, query_labels: Any, aggregation: str) -> pd.DataFrame:
    """The summary frame under a named aggregation, ``query_micro`` or ``group_macro`` (whose
    groups are read from ``query_labels``), so that callers pick one by a dataset's setting."""
    if aggregation == "query_micro":
        return query_micro(frame)
    if aggregation == "group_macro":
        return group_macro(frame, query_labels)
    raise ValueError(f"aggregation must be 'query_micro' or 'group_macro', got {aggregation!r}")


def _metric_columns(frame: pd.DataFrame) -> list[str]:
    """Metric columns of a per-query frame, checked: ``ap`` first, then the ``r@K`` columns,
    any plugin's metric, and the OT scores."""
    required = {"query", "level", "valid", "ap"}
    missing = required - set(frame.columns)
    if missing:
        raise ValueError(
            f"per-query frame lacks columns {sorted(missing)}; pass the output of evaluate()"
        )
    recalls = [name for name in frame.columns if str(name).startswith("r@")]
    own = [name for name in frame.columns if is_plugin_metric(name)]
    return ["ap", *recalls, *own, *[name for name in frame.columns if is_ot_column(name)]]


def _tree_count(rows: pd.DataFrame) -> dict[str, int]:
    """``n_tree``, the rows scored by ``ot_tree@tree`` (queries whose tree holds a gallery
    item), when the frame has tree scores; else nothing."""
    name = f"{OT_TREE_PREFIX}{TREE_CUTOFF}"
    return {"n_tree": int(rows[name].notna().sum())} if name in rows.columns else {}


def _levels(frame: pd.DataFrame) -> tuple[str, ...]:
    """The summary's levels: leaf, middle, high, and all when the frame holds OT@K rows."""
    return (*LEVELS, ALL_LEVELS) if (frame["level"] == ALL_LEVELS).any() else LEVELS


def _summary_name(metric: str) -> str:
    """Summary column of a per-query metric: ``ap`` becomes ``map``, ``r@K`` stays."""
    return "map" if metric == "ap" else metric


def _mean(values: pd.Series, metric: str, level: str) -> float:
    """Mean of a column, NaN when empty or when the metric is not scored at the level.

    OT scores are scored only at level ``all``, AP and Recall@K only at leaf, middle and high;
    NaN values (a tree score of a query without a tree) are skipped.
    """
    scored = is_ot_column(metric) == (level == ALL_LEVELS)
    return float(values.mean()) if len(values) and scored else float("nan")
