"""The metric engine: AP and Recall@K per query and level, and our OT scores (OT@K and the
taxonomy-tree-referenced ot_tree) per query, chunk by chunk, without a full comparison sort (see
:mod:`hierbench.metrics` for the definitions and the method)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from hierbench.metrics.labels import label_codes
from hierbench.metrics.ot import check_ot_ks, ot_columns, ot_scores, ot_tree_columns
from hierbench.metrics.pair_scores import (
    DEFAULT_DISTANCE_CLIP,
    DEFAULT_GEOMETRY,
    PairScores,
    check_no_distance_settings,
    checked_pair_scores,
    score_rows,
)
from hierbench.metrics.rank_distances import (
    Gallery,
    Metric,
    as_embeddings,
    check_metric,
    prepare_gallery,
    sanitised_distances,
    squared_distances,
    unique_rows,
)
from hierbench.metrics.rank_metric import RankedPositives, RankMetric, scored
from hierbench.protocol import ALL_LEVELS
from hierbench.relations import LEVELS

_KEY_MAX = np.iinfo(np.uint16).max
_RUN_SCAN_LIMIT = 32  # longer runs of equal keys: the whole row is sorted exactly
_BLOCK_ROWS = 64  # queries ranked together; their distance rows stay in cache (~2.5 MB at 5k)

# What the ranking blocks get from a chunk's matrix: (matrix, chunk queries, block rows) -> the
# block's finite scores against every gallery row.
_BlockScores = Callable[[np.ndarray, np.ndarray, slice], np.ndarray]


class _Positives(NamedTuple):
    """Strict positives of a chunk of queries: query row, exact rank and level (0, 1, 2)."""

    rows: np.ndarray
    ranks: np.ndarray
    levels: np.ndarray


def recall_columns(ks: Sequence[int]) -> list[str]:
    """Column names of the Recall@K metrics, ``r@K``, in the order of ``ks``."""
    return [f"r@{k}" for k in ks]


def evaluate(
    query_emb: Any,
    gallery_emb: Any,
    query_labels: Any,
    gallery_labels: Any,
    *,
    geometry: str = DEFAULT_GEOMETRY,
    curvature: float | None = None,
    ks: Sequence[int] = (1, 5, 10, 20),
    chunk_size: int = 256,
    distance_clip: float = DEFAULT_DISTANCE_CLIP,
    ot_ks: Sequence[int] = (),
    pair_scores: PairScores | None = None,
    rank_metrics: Sequence[RankMetric] = (),
) -> pd.DataFrame:
    """AP and Recall@K per query and level, and OT@K per query (the per-query frame).

    ``ot_ks`` are the cut-offs of OT@K (none by default; each at most the gallery size); with
    any, every query gets a row of level ``all`` holding its ``ot@K`` scores and the
    tree-referenced ``ot_tree@K`` (same cut-offs) and ``ot_tree@tree``. Each of
    ``rank_metrics`` (a researcher's, :mod:`hierbench.metrics.rank_metric`) adds its column
    after Recall@K, scored at each level from the same ranks of the strict positives.

    ``pair_scores`` ranks the gallery by another score than a distance (ascending, ties by
    gallery index, as distances): it is called once per chunk of queries with the bitwise
    distinct gallery rows; geometry, curvature and distance_clip must then keep their defaults.

    At most ``chunk_size`` queries' distance rows are held at once; each chunk is ranked in
    blocks of at most 64 queries, spread over :func:`worker_count` threads. Results depend on
    neither. The Gram product is one BLAS call per chunk in the calling thread; keep
    ``OPENBLAS_NUM_THREADS=1``, as idle OpenBLAS threads spin on the cores the blocks need.
    """
    queries, gallery = as_embeddings(query_emb, gallery_emb)
    query_codes, gallery_codes = label_codes(
        query_labels, gallery_labels, len(queries), len(gallery)
    )
    ks = _check_ks(ks)
    ot_ks = check_ot_ks(ot_ks, len(gallery))
    chunk_size = _check_chunk_size(chunk_size)
    if pair_scores is None:
        metric = check_metric(geometry, curvature, distance_clip)
        prepared = prepare_gallery(gallery)
        chunk_matrix = partial(squared_distances, gallery=prepared)
        block_scores: _BlockScores = partial(_distance_rows, gallery=prepared, metric=metric)
    else:
        check_no_distance_settings(geometry, curvature, distance_clip)
        chunk_matrix = partial(checked_pair_scores, pair_scores, unique_rows(gallery))
        block_scores = score_rows

    workers = max(1, min(worker_count(), chunk_size, len(queries)))
    results = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for start in range(0, len(queries), chunk_size):
            rows = slice(start, start + chunk_size)
            # The BLAS product (or the pair scores) runs here, outside the threads: concurrent
            # BLAS calls thrash.
            matrix = chunk_matrix(queries[rows])
            run = partial(
                _evaluate_block,
                matrix,
                queries[rows],
                query_codes[rows],
                gallery_codes,
                block_scores,
                ks,
                ot_ks,
                tuple(rank_metrics),
            )
            block = min(_BLOCK_ROWS, -(-len(matrix) // workers))
            blocks = [slice(first, first + block) for first in range(0, len(matrix), block)]
            results.extend(pool.map(run, blocks))
    ap, hits, own, ot, ot_tree = (np.concatenate(p) for p in zip(*results, strict=True))
    names = [metric.name for metric in rank_metrics]
    frame = _per_query_frame(ap, hits, np.concatenate([ot, ot_tree], axis=1), ks, ot_ks)
    return _with_rank_metrics(frame, own, names, len(ks))


def worker_count() -> int:
    """Threads that :func:`evaluate` splits each chunk between; results do not depend on it.

    ``OMP_NUM_THREADS`` when set (its first entry; Snakemake sets it to a job's threads), else
    the CPUs this process may run on.
    """
    value = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if value:
        try:
            return max(1, int(value))
        except ValueError as error:
            raise ValueError(f"OMP_NUM_THREADS must be an integer, got {value!r}") from error
    return max(1, len(os.sched_getaffinity(0)))


def _check_ks(ks: Sequence[int]) -> tuple[int, ...]:
    """Recall cut-offs as a tuple of distinct positive ints."""
    values = tuple(ks)
    for k in values:
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise ValueError(f"ks must be positive integers, got {k!r} in {values!r}")
    if len(set(values)) != len(values):
        raise ValueError(f"ks must not repeat a value, got {values!r}")
    return tuple(int(k) for k in values)


def _distance_rows(
    squared: np.ndarray, queries: np.ndarray, rows: slice, *, gallery: Gallery, metric: Metric
) -> np.ndarray:
    """Sanitised distances of a block of a chunk, from the chunk's squared distances."""
    return sanitised_distances(squared[rows], queries[rows], gallery, metric)


def _check_chunk_size(chunk_size: int) -> int:
    """The number of queries per chunk, a positive int."""
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int | np.integer):
        raise TypeError(f"chunk_size must be an int, got {chunk_size!r}")
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
    return int(chunk_size)


def _sort_keys(dist: np.ndarray) -> np.ndarray:
    """16-bit keys per row, a non-decreasing function of the distance.

    Each row is mapped linearly from [row min, row max] onto 0..65535; subtraction, scaling by a
    positive number and truncation are all monotone in IEEE arithmetic, so a smaller key always
    means a smaller distance and equal distances always share a key.
    """
    low = dist.min(axis=1, keepdims=True)
    span = dist.max(axis=1, keepdims=True) - low
    with np.errstate(divide="ignore", over="ignore"):
        scale = np.where(span > 0, _KEY_MAX / span, 0.0)
    scale[~np.isfinite(scale)] = 0.0
    keys = np.empty(dist.shape, dtype=np.uint16)
    # (dist − low)·scale ≤ _KEY_MAX·(1 + 4ε); the cast to uint16 truncates, like floor
    np.multiply(np.subtract(dist, low), scale, out=keys, casting="unsafe")
    return keys


def _evaluate_block(
    matrix: np.ndarray,
    queries: np.ndarray,
    query_codes: np.ndarray,
    gallery_codes: np.ndarray,
    block_scores: _BlockScores,
    ks: tuple[int, ...],
    ot_ks: tuple[int, ...],
    rank_metrics: tuple[RankMetric, ...],
    rows: slice,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """AP (rows, levels), Recall@K (rows, levels, ks), the rank metrics (rows, levels,
    metrics), OT@K (rows, ot_ks) and the tree scores (rows, ot_ks + 1) of ``rows``."""
    dist = block_scores(matrix, queries, rows)
    query_codes = query_codes[rows]
    positives = _positive_ranks(dist, query_codes, gallery_codes)
    ap = np.empty((len(dist), len(LEVELS)))
    hits = np.empty((len(dist), len(LEVELS), len(ks)))
    own = np.empty((len(dist), len(LEVELS), len(rank_metrics)))
    for level in range(len(LEVELS)):
        chosen = positives.levels == level  # keeps the (row, rank) order
        ap[:, level], hits[:, level] = _level_scores(
            positives.rows[chosen], positives.ranks[chosen], len(dist), ks
        )
        at_level = RankedPositives(
            positives.rows[chosen], positives.ranks[chosen], len(dist), dist.shape[1]
        )
        for index, metric in enumerate(rank_metrics):
            own[:, level, index] = scored(metric, at_level)
    ot, ot_tree = np.empty((len(dist), 0)), np.empty((len(dist), 0))
    if ot_ks:
        ot, ot_tree = ot_scores(
            positives.rows, positives.ranks, positives.levels, len(dist), dist.shape[1], ot_ks
        )
    return ap, hits, own, ot, ot_tree


def _positive_ranks(
    dist: np.ndarray, query_codes: np.ndarray, gallery_codes: np.ndarray
) -> _Positives:
    """Exact 0-based ranks and levels of every strict positive of a chunk of queries.

    The gallery is ordered by (key, index) with one stable radix sort; every strict positive
    at any level shares the query's high label, so those are found in that order, then given
    their exact rank under (distance, gallery index). The result is sorted by (row, rank).
    """
    n_gallery = dist.shape[1]
    keys = _sort_keys(dist)
    order = np.argsort(keys, axis=1, kind="stable")
    same_high = gallery_codes[:, 2][order] == query_codes[:, 2][:, None]
    positions = np.flatnonzero(same_high)
    rows = positions // n_gallery
    ranks, items = _exact_ranks(dist.ravel(), keys.ravel(), order, rows, positions)
    ranked = np.argsort(rows * n_gallery + ranks, kind="stable")  # nearly sorted already
    rows, ranks, items = rows[ranked], ranks[ranked], items[ranked]
    levels = np.full(len(rows), 2, dtype=np.int8)
    levels[gallery_codes[items, 1] == query_codes[rows, 1]] = 1
    levels[gallery_codes[items, 0] == query_codes[rows, 0]] = 0
    return _Positives(rows, ranks, levels)


def _exact_ranks(
    dist: np.ndarray, keys: np.ndarray, order: np.ndarray, rows: np.ndarray, positions: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Ranks under (distance, index), and gallery indices, of items in the (key, index) order.

    ``dist`` and ``keys`` are flattened chunk matrices, ``positions`` flat positions in
    ``order``. Only items whose run of equal keys is longer than one can move; their rank is
    the run start plus the run members that precede them by (distance, index). Rows with a run
    longer than ``_RUN_SCAN_LIMIT`` around a positive are ranked by a full stable sort instead.
    """
    n_gallery = order.shape[1]
    flat_order = order.ravel()
    row_start = rows * n_gallery
    items = flat_order[positions]
    item_keys = keys[row_start + items]
    first, last = positions.copy(), positions.copy()
    long_rows = []
    for bound, step, edge in ((first, -1, row_start), (last, 1, row_start + n_gallery - 1)):
        active = np.flatnonzero(bound != edge)
        for _ in range(_RUN_SCAN_LIMIT):
            if not active.size:
                break
            neighbour = flat_order[bound[active] + step]
            active = active[keys[row_start[active] + neighbour] == item_keys[active]]
            bound[active] += step
            active = active[bound[active] != edge[active]]
        long_rows.append(rows[active])
    ranks = positions - row_start
    in_long_row = np.isin(rows, np.concatenate(long_rows))
    moved = np.flatnonzero((last > first) & ~in_long_row)
    if moved.size:
        ranks[moved] = _rank_in_runs(
            dist, flat_order, row_start[moved], items[moved], first[moved], last[moved]
        )
    for row in np.unique(rows[in_long_row]):
        chosen = np.flatnonzero(rows == row)
        row_dist = dist[row * n_gallery : (row + 1) * n_gallery]
        ranks[chosen] = _stable_ranks(row_dist)[items[chosen]]
    return ranks, items


def _stable_ranks(values: np.ndarray) -> np.ndarray:
    """0-based rank of each element under a stable sort by (value, index)."""
    ranks = np.empty(len(values), dtype=np.intp)
    ranks[np.argsort(values, kind="stable")] = np.arange(len(values))
    return ranks


def _rank_in_runs(
    dist: np.ndarray,
    flat_order: np.ndarray,
    row_start: np.ndarray,
    items: np.ndarray,
    first: np.ndarray,
    last: np.ndarray,
) -> np.ndarray:
    """Run start plus the run members before each item by (distance, index), 0-based in row."""
    item_dist = dist[row_start + items]
    ranks = first - row_start
    for offset in range(int((last - first).max()) + 1):
        inside = np.flatnonzero(first + offset <= last)
        other = flat_order[first[inside] + offset]
        other_dist = dist[row_start[inside] + other]
        before = (other_dist < item_dist[inside]) | (
            (other_dist == item_dist[inside]) & (other < items[inside])
        )
        ranks[inside] += before
    return ranks


def _level_scores(
    rows: np.ndarray, ranks: np.ndarray, n_rows: int, ks: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """AP and Recall@K per row from 0-based positive ranks sorted by (row, rank); NaN if none."""
    counts = np.bincount(rows, minlength=n_rows)
    starts = np.cumsum(counts) - counts
    hits_so_far = np.arange(1, len(rows) + 1) - starts[rows]  # positives up to this one
    precision = hits_so_far / (ranks + 1.0)
    valid = counts > 0
    ap = np.full(n_rows, np.nan)
    ap[valid] = np.bincount(rows, weights=precision, minlength=n_rows)[valid] / counts[valid]
    hits = np.full((n_rows, len(ks)), np.nan)
    first_rank = ranks[starts[valid]]
    hits[valid] = (first_rank[:, None] < np.asarray(ks)[None, :]).astype(float)
    return ap, hits


def _per_query_frame(
    ap: np.ndarray,
    hits: np.ndarray,
    ot: np.ndarray,
    ks: tuple[int, ...],
    ot_ks: tuple[int, ...],
) -> pd.DataFrame:
    """The per-query frame: rows by query, then leaf, middle, high (and all, with ``ot_ks``).

    ``ot`` holds OT@K then the tree scores, one column each. Rows of level ``all`` are valid and
    hold the OT scores only (``ot_tree`` NaN for a query without a tree); the level rows hold
    them as NaN.
    """
    n_queries = len(ap)
    levels = (*LEVELS, ALL_LEVELS) if ot_ks else LEVELS
    extra = len(levels) - len(LEVELS)
    ap = np.pad(ap, ((0, 0), (0, extra)), constant_values=np.nan)
    hits = np.pad(hits, ((0, 0), (0, extra), (0, 0)), constant_values=np.nan)
    valid = ~np.isnan(ap)
    valid[:, len(LEVELS) :] = True
    columns = {
        "query": np.repeat(np.arange(n_queries), len(levels)),
        "level": np.tile(np.array(levels, dtype=object), n_queries),
        "valid": valid.ravel(),
        "ap": ap.ravel(),
    }
    for index, name in enumerate(recall_columns(ks)):
        columns[name] = hits[:, :, index].ravel()
    ot_names = [*ot_columns(ot_ks), *ot_tree_columns(ot_ks)] if ot_ks else []
    for index, name in enumerate(ot_names):
        scores = np.full((n_queries, len(levels)), np.nan)
        scores[:, len(LEVELS) :] = ot[:, index : index + 1]
        columns[name] = scores.ravel()
    return pd.DataFrame(columns)


def _with_rank_metrics(
    frame: pd.DataFrame, own: np.ndarray, names: list[str], n_recalls: int
) -> pd.DataFrame:
    """The per-query frame with a column per rank metric after Recall@K (NaN at level all)."""
    if not names:
        return frame
    extra = len(frame) // len(own) - len(LEVELS)  # the rows of level all, with OT@K
    position = frame.columns.get_loc("ap") + 1 + n_recalls
    for index, name in enumerate(names):
        values = np.pad(own[:, :, index], ((0, 0), (0, extra)), constant_values=np.nan)
        frame.insert(position + index, name, values.ravel())
    return frame
