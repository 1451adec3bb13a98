"""OT@K, the optimal-transport hierarchy score of a ranking's top K (lower is better).

Every gallery item stands in one relation to a query, read on the ordinal support
leaf = 0, middle = 1, high = 2, other = 3 (the strict relations c, m, h, o of
:mod:`hierbench.relations`). The relation histogram of the actual top K is compared with that
of the ideal top K, the gallery sorted by relation (how ties are ordered does not change the
histogram): OT@K is the 1-D Wasserstein-1 distance between the two histograms as probability
distributions (counts / K) with unit spacing, Σ_{t=0}^{2} |F_actual(t) − F_ideal(t)|, F the
cumulative share up to relation t. It is 0 when the top K holds the ideal mix and at most 3
(K "other" items where K same-leaf items were available). The ideal cumulative shares are never
below the actual ones, so OT@K also equals the mean relation of the top K minus that of the
ideal top K, and the ranking that puts "other" first, then high, middle, leaf, scores the most.

OT@K is our ideal-referenced adaptation of the companion method's score to the query's relation
levels. The method's own score compares the label distribution of the query's own hierarchy
tree (its part tree) with that of what was retrieved; our images have no part tree. Our second
adaptation, also over relation levels, is taxonomy-tree-referenced, ``ot_tree@K``: the
reference is the query's taxonomy tree, the gallery items that share at
least the query's high group (every strict positive), as a relation histogram h over leaf,
middle and high divided by the tree's size; the top K's histogram r over all four relations is
divided by K; the score is the same W1 on the support 0..3, Σ_{t=0}^{2} |R(t) − H(t)|.
``ot_tree@tree`` takes K = the query's tree size T; the ideal top T is then the tree itself, so
it equals OT@T. A query whose tree holds no gallery item has no tree score (NaN).

The engine knows the exact rank of every strict positive (every item in relation 0, 1 or 2), so
the top-K histogram is a count of positives with rank < K per relation; "other" fills the rest.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

N_RELATIONS = 4  # leaf, middle, high, other: the support 0..3
OT_PREFIX = "ot@"
OT_TREE_PREFIX = "ot_tree@"
TREE_CUTOFF = "tree"  # ot_tree@tree: K = the size of the query's tree in the gallery


def ot_columns(ks: Sequence[int]) -> list[str]:
    """Column names of the OT@K scores, ``ot@K``, in the order of ``ks``."""
    return [f"{OT_PREFIX}{k}" for k in ks]


def ot_tree_columns(ks: Sequence[int]) -> list[str]:
    """Column names of the tree-referenced scores: ``ot_tree@K`` in the order of ``ks``, then
    ``ot_tree@tree``."""
    return [f"{OT_TREE_PREFIX}{k}" for k in (*ks, TREE_CUTOFF)]


def is_ot_column(name: object) -> bool:
    """Whether a column holds an OT score, ``ot@K`` or ``ot_tree@…`` (lower is better)."""
    return str(name).startswith((OT_PREFIX, OT_TREE_PREFIX))


def check_ot_ks(ks: Sequence[int], gallery_size: int, name: str = "ot_ks") -> tuple[int, ...]:
    """OT cut-offs as distinct positive ints no larger than the gallery; errors name ``name``."""
    values = tuple(ks)
    for k in values:
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise ValueError(f"{name} must be positive integers, got {k!r} in {values!r}")
    if len(set(values)) != len(values):
        raise ValueError(f"{name} must not repeat a value, got {values!r}")
    too_large = [int(k) for k in values if k > gallery_size]
    if too_large:
        raise ValueError(
            f"{name}: K = {too_large} is larger than the gallery ({gallery_size} items); "
            "OT@K compares K retrieved items with the ideal K, so K must not exceed the gallery"
        )
    return tuple(int(k) for k in values)


def ideal_counts(totals: np.ndarray, k: int) -> np.ndarray:
    """Relation counts (..., 4) of the ideal top ``k`` from the gallery's relation counts.

    The ideal ranking takes every leaf item first, then middle, high and other, so the ideal
    top K holds min(K, items up to relation t) items up to each t.
    """
    cumulative = np.minimum(np.cumsum(totals, axis=-1), k)
    return np.diff(cumulative, axis=-1, prepend=0)


def ordinal_wasserstein(actual: np.ndarray, ideal: np.ndarray) -> np.ndarray:
    """W1 between histograms (..., 4) of equal positive mass on the support 0, 1, 2, 3."""
    actual, ideal = np.asarray(actual, dtype=np.int64), np.asarray(ideal, dtype=np.int64)
    mass = actual.sum(axis=-1)
    if np.any(mass != ideal.sum(axis=-1)) or np.any(mass <= 0):
        raise ValueError("histograms must have the same positive mass (K) to be compared")
    gap = np.abs(np.cumsum(actual - ideal, axis=-1)[..., :-1]).sum(axis=-1)
    return gap / mass


def tree_wasserstein(top: np.ndarray, tree: np.ndarray) -> np.ndarray:
    """W1 between top-K histograms (..., 4) as shares of K and tree histograms (..., 3) as shares
    of the tree, on the support 0, 1, 2, 3; NaN where the tree is empty.

    Σ_t |R(t) − H(t)| is summed in integers as Σ_t |T·cumtop(t) − K·cumtree(t)| / (K·T).
    """
    top, tree = np.asarray(top, dtype=np.int64), np.asarray(tree, dtype=np.int64)
    k, size = top.sum(axis=-1), tree.sum(axis=-1)
    if np.any((k <= 0) & (size > 0)):
        raise ValueError("top-K histograms must hold at least one item to be compared")
    cumulative_top = np.cumsum(top[..., :3], axis=-1)
    cumulative_tree = np.cumsum(tree, axis=-1)
    gap = np.abs(size[..., None] * cumulative_top - k[..., None] * cumulative_tree).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(size > 0, gap / (k * size), np.nan)


def relation_totals(rows: np.ndarray, levels: np.ndarray, n_rows: int) -> np.ndarray:
    """Strict positives per row and relation (n_rows, 3): each query's tree histogram."""
    return np.bincount(rows * 3 + levels, minlength=n_rows * 3).reshape(n_rows, 3)


def top_tree_counts(
    rows: np.ndarray, ranks: np.ndarray, levels: np.ndarray, totals: np.ndarray
) -> np.ndarray:
    """Relation counts (n_rows, 4) of each row's top T, T its tree size (the positives)."""
    n_rows = len(totals)
    size = totals.sum(axis=1)
    kept = ranks < size[rows]
    counts = np.zeros((n_rows, N_RELATIONS), dtype=np.int64)
    counts[:, :3] = relation_totals(rows[kept], levels[kept], n_rows)
    counts[:, 3] = size - counts[:, :3].sum(axis=1)
    return counts


def top_k_counts(
    rows: np.ndarray, ranks: np.ndarray, levels: np.ndarray, n_rows: int, ks: Sequence[int]
) -> np.ndarray:
    """Relation counts (n_rows, len(ks), 4) of each row's top K from its positives' exact ranks.

    ``rows``, ``ranks`` (0-based) and ``levels`` (0 leaf, 1 middle, 2 high) list every strict
    positive of every row; a top K holds K items, the ones that are no positive are "other".
    """
    order = np.argsort(ks, kind="stable")
    ascending = np.asarray(ks, dtype=np.int64)[order]
    n_ks = len(ascending)
    # A positive at rank r is in the top K_j (ascending) for every j from its bucket on.
    bucket = np.searchsorted(ascending, ranks, side="right")
    keep = bucket < n_ks
    flat = (rows[keep] * 3 + levels[keep]) * n_ks + bucket[keep]
    counts = np.bincount(flat, minlength=n_rows * 3 * n_ks).reshape(n_rows, 3, n_ks)
    counts = np.cumsum(counts, axis=2).transpose(0, 2, 1)  # (rows, ks ascending, 3)
    result = np.empty((n_rows, n_ks, N_RELATIONS), dtype=np.int64)
    result[:, order, :3] = counts
    result[:, :, 3] = np.asarray(ks, dtype=np.int64)[None, :] - result[:, :, :3].sum(axis=2)
    return result


def ot_scores(
    rows: np.ndarray,
    ranks: np.ndarray,
    levels: np.ndarray,
    n_rows: int,
    n_gallery: int,
    ks: Sequence[int],
) -> tuple[np.ndarray, np.ndarray]:
    """OT@K (n_rows, len(ks)) and the tree-referenced scores (n_rows, len(ks) + 1: ot_tree@K,
    then ot_tree@tree) from the exact ranks and levels of every strict positive."""
    totals = np.zeros((n_rows, N_RELATIONS), dtype=np.int64)
    totals[:, :3] = relation_totals(rows, levels, n_rows)
    totals[:, 3] = n_gallery - totals[:, :3].sum(axis=1)
    actual = top_k_counts(rows, ranks, levels, n_rows, ks)
    scores = np.empty((n_rows, len(ks)))
    for index, k in enumerate(ks):
        scores[:, index] = ordinal_wasserstein(actual[:, index], ideal_counts(totals, k))
    tree = totals[:, :3]
    tree_scores = np.empty((n_rows, len(ks) + 1))
    tree_scores[:, :-1] = tree_wasserstein(actual, tree[:, None, :])
    tree_scores[:, -1] = tree_wasserstein(top_tree_counts(rows, ranks, levels, tree), tree)
    return scores, tree_scores
