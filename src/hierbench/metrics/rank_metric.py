"""A retrieval metric of one's own: a function of where each query's strict positives rank, at
one level, which the engine calls beside AP and Recall@K (:func:`hierbench.metrics.evaluate`).

The engine finds each query's strict positives at each level and their exact ranks under the
ranking (distance, then gallery index) once; a :class:`RankMetric` turns them into one value per
query. Queries without a positive at a level get NaN there, as AP does, whatever the metric
returns. A plugin names one in its module and the config names it under ``plugins.metrics``
(:mod:`hierbench.metricnames`); :func:`rank_metrics` loads them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from hierbench.metricnames import (
    METRIC_ENTRY_POINT_GROUP,
    METRIC_PLUGINS_KEY,
    MetricPluginError,
    metric_references,
)
from hierbench.plugins import load_plugin


@dataclass(frozen=True)
class RankedPositives:
    """The strict positives of a block of queries at one level: each one's query (``rows``,
    0-based in the block) and its 0-based rank among the ``n_gallery`` gallery items, sorted by
    (row, rank)."""

    rows: np.ndarray
    ranks: np.ndarray
    n_rows: int
    n_gallery: int

    def counts(self) -> np.ndarray:
        """The number of strict positives of each query."""
        return np.bincount(self.rows, minlength=self.n_rows)


@dataclass(frozen=True)
class RankMetric:
    """A per-query metric from the ranks of its strict positives: ``score(positives)`` returns
    one value per query (``positives.n_rows``), higher better; ``name`` is its column,
    ``<name>@<cutoff>``."""

    name: str
    score: Callable[[RankedPositives], np.ndarray]


def scored(metric: RankMetric, positives: RankedPositives) -> np.ndarray:
    """``metric``'s value per query, NaN for a query without a strict positive; an error naming
    the metric when it returns the wrong shape."""
    values = np.asarray(metric.score(positives), dtype=np.float64)
    if values.shape != (positives.n_rows,):
        raise MetricPluginError(
            f"metric {metric.name!r} returned shape {values.shape}, not one value per query "
            f"({positives.n_rows},)"
        )
    return np.where(positives.counts() > 0, values, np.nan)


def rank_metrics(config: Mapping[str, Any]) -> tuple[RankMetric, ...]:
    """The config's metric plugins, loaded, in name order; an error naming the key when one is
    not a :class:`RankMetric` of that name."""
    loaded = []
    for name, reference in sorted(metric_references(config).items()):
        key = f"{METRIC_PLUGINS_KEY}.{name}"
        found = load_plugin(reference, key, METRIC_ENTRY_POINT_GROUP, MetricPluginError)
        if not isinstance(found, RankMetric):
            raise MetricPluginError(
                f"{key}: {reference!r} is a {type(found).__name__}, not a "
                "hierbench.metrics.rank_metric.RankMetric"
            )
        if found.name != name:
            raise MetricPluginError(f"{key}: {reference!r} is the metric {found.name!r}")
        loaded.append(found)
    return tuple(loaded)
