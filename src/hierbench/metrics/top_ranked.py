"""What a retrieval gallery shows (issue #63): which queries, chosen by a fixed rule from their
labels alone, so every arm shows the same ones; each query's top-ranked gallery items in the
metric engine's order; and the deepest level each item shares with its query."""

from __future__ import annotations

from typing import Any

import numpy as np

from hierbench.metrics.labels import check_labels
from hierbench.metrics.rank_distances import pairwise_distances
from hierbench.relations import LEVELS

NO_SHARED_LEVEL = "none"
# The deepest level a gallery item shares with its query, deepest first; "none": not even the
# high group. A shared-level array holds indices into this tuple.
SHARED_LEVELS: tuple[str, ...] = (*LEVELS, NO_SHARED_LEVEL)
HIGH = LEVELS.index("high")


def picture_queries(labels: np.ndarray, count: int, seed: int) -> np.ndarray:
    """Indices of ``count`` queries (rows of ``labels``, the draw's queries) chosen by a fixed
    rule: the high groups in a seeded random order, then one query of each group in turn (a
    seeded order within each group), round after round, until ``count`` are chosen or none is
    left. It reads labels only, so every arm gets the same queries, spread over high groups."""
    codes = check_labels(labels, None, "query labels")
    if isinstance(count, bool) or not isinstance(count, int | np.integer) or count < 1:
        raise ValueError(f"the number of pictured queries must be a positive int, got {count!r}")
    rng = np.random.default_rng(seed)
    groups = np.unique(codes[:, HIGH])
    members = [rng.permutation(np.flatnonzero(codes[:, HIGH] == group)) for group in groups]
    members = [members[index] for index in rng.permutation(len(groups))]
    chosen: list[int] = []
    for turn in range(max((len(group) for group in members), default=0)):
        chosen += [int(group[turn]) for group in members if turn < len(group)]
    return np.asarray(chosen[:count], dtype=np.int64)


def top_ranked(distances: np.ndarray, k: int) -> np.ndarray:
    """Each row's ``k`` nearest gallery columns (all of them when fewer), nearest first, ties
    by gallery index: the order in which the metric engine ranks a gallery."""
    matrix = np.asarray(distances)
    if matrix.ndim != 2:
        raise ValueError(f"distances must be a (queries, gallery) matrix, got shape {matrix.shape}")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return np.argsort(matrix, axis=1, kind="stable")[:, :k]


def ranked_gallery(
    queries: np.ndarray, gallery: np.ndarray, metric: dict[str, Any], k: int
) -> np.ndarray:
    """The top ``k`` gallery rows of each query under ``metric`` (the engine's distance
    settings: ``geometry``, ``curvature``, ``distance_clip``), as the evaluation ranks them."""
    return top_ranked(pairwise_distances(queries, gallery, **metric), k)


def shared_levels(query_labels: np.ndarray, ranked_labels: np.ndarray) -> np.ndarray:
    """The deepest level each ranked item shares with its query, as an index into
    ``SHARED_LEVELS``: ``query_labels`` (queries, 3), ``ranked_labels`` (queries, k, 3)."""
    query = check_labels(query_labels, None, "query labels")
    ranked = np.asarray(ranked_labels)
    if ranked.ndim != 3 or ranked.shape[0] != len(query) or ranked.shape[2] != len(LEVELS):
        raise ValueError(
            f"ranked labels must have shape ({len(query)}, k, {len(LEVELS)}), got {ranked.shape}"
        )
    same = ranked == query[:, None, :]
    return np.where(same.any(axis=2), same.argmax(axis=2), len(LEVELS))
