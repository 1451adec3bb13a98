"""Retrieval metrics: AP and Recall@K per query at the leaf, middle and high levels.

Definitions (SPEC "Evaluation", strict positives from :mod:`hierbench.relations`):

- The strict positives of a query at a level are the gallery items in that level's relation:
  leaf → same leaf; middle → same middle, different leaf; high → same high, different middle.
  Every other gallery item is non-relevant at that level and stays in the ranking (for example
  same-leaf items count as non-relevant at the middle level; nothing is removed).
- A query is valid at a level only if the gallery holds at least one strict positive for it.
- Ranking: the whole gallery in ascending distance; ties (equal computed float64 distances)
  are broken by ascending gallery index, i.e. a stable sort by (distance, gallery index).
  Bitwise identical gallery embeddings always get equal distances, so they always tie.
- Recall@K = 1 if a strict positive is among the first K, else 0.
- AP(q) = (1/N⁺) Σ_k precision@k · rel_k over the whole ranking, N⁺ the number of positives.
- Distances: Euclidean, or the geodesic distance of ``geoopt.PoincareBall(c=curvature)``,
  (2/√c)·artanh(√c·‖(−x)⊕_c y‖), both in float64 from ‖x − y‖² = ‖x‖² + ‖y‖² − 2⟨x, y⟩ (one
  BLAS product; absolute error about 1e-16·(‖x‖² + ‖y‖²)). Non-finite distances (NaN
  embeddings, points on or outside the ball) become ``distance_clip``; all distances are clipped
  to [0, distance_clip]. Unlike geoopt, artanh is not clamped below 1 and small c is not
  approximated by a Taylor series.

Formats:

- Per-query frame (:func:`evaluate`): one row per (query, level), rows sorted by query index,
  then leaf, middle, high; columns ``query`` (index into the query arrays), ``level``, ``valid``,
  ``ap`` and one ``r@K`` column per K (float 0/1); metrics are NaN where ``valid`` is False.
- Summary frame (:func:`query_micro`, :func:`group_macro`): one row per level in the order
  leaf, middle, high; columns ``level``, ``n_valid`` (valid queries), ``n_groups`` (groups with a
  valid query; group-macro only), ``map`` (mean AP) and the ``r@K`` means. Levels without any
  valid query have NaN metrics.

The engine avoids a full comparison sort: per chunk of queries it ranks the gallery by 16-bit
monotone quantised distances (NumPy's stable radix sort), then makes the ranks of the strict
positives exact by re-ordering them inside their runs of equal keys by (distance, index) (rows
with very long runs are sorted exactly instead). The ranks equal those of a stable sort by
(distance, gallery index).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from hierbench.relations import LEVELS

GEOMETRIES: tuple[str, ...] = ("euclidean", "poincare")
_KEY_MAX = np.iinfo(np.uint16).max
_RUN_SCAN_LIMIT = 32  # longer runs of equal keys: the whole row is sorted exactly
_BLOCK_ROWS = 64  # queries ranked together; their distance rows stay in cache (~2.5 MB at 5k)


class _Metric(NamedTuple):
    """Validated distance settings."""

    geometry: str
    curvature: float | None
    clip: float


class _Gallery(NamedTuple):
    """Unique gallery rows as [−2·y, 1, ‖y‖²]ᵀ, their ‖y‖² and the map back to all rows."""

    augmented_t: np.ndarray
    sq_norm: np.ndarray
    inverse: np.ndarray | None


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
    geometry: str = "euclidean",
    curvature: float | None = None,
    ks: Sequence[int] = (1, 5, 10, 20),
    chunk_size: int = 256,
    distance_clip: float = 1e6,
) -> pd.DataFrame:
    """AP and Recall@K per query and level (the per-query frame), computed chunk by chunk.

    At most ``chunk_size`` queries' distance rows are held at once; each chunk is ranked in
    blocks of at most 64 queries, spread over :func:`worker_count` threads. Results depend on
    neither. The Gram product is one BLAS call per chunk in the calling thread; keep
    ``OPENBLAS_NUM_THREADS=1``, as idle OpenBLAS threads spin on the cores the blocks need.
    """
    queries, gallery = _embeddings(query_emb, gallery_emb)
    query_codes, gallery_codes = _label_codes(
        query_labels, gallery_labels, len(queries), len(gallery)
    )
    ks = _check_ks(ks)
    chunk_size = _check_chunk_size(chunk_size)
    metric = _check_metric(geometry, curvature, distance_clip)
    prepared = _prepare_gallery(gallery)

    workers = max(1, min(worker_count(), chunk_size, len(queries)))
    results = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for start in range(0, len(queries), chunk_size):
            rows = slice(start, start + chunk_size)
            # The BLAS product runs here, outside the threads: concurrent BLAS calls thrash.
            squared = _squared_distances(queries[rows], prepared)
            run = partial(
                _evaluate_block,
                squared,
                queries[rows],
                query_codes[rows],
                prepared,
                gallery_codes,
                metric,
                ks,
            )
            block = min(_BLOCK_ROWS, -(-len(squared) // workers))
            blocks = [slice(first, first + block) for first in range(0, len(squared), block)]
            results.extend(pool.map(run, blocks))
    ap = np.concatenate([chunk_ap for chunk_ap, _ in results])
    hits = np.concatenate([chunk_hits for _, chunk_hits in results])
    return _per_query_frame(ap, hits, ks)


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


def pairwise_distances(
    a: Any,
    b: Any,
    *,
    geometry: str = "euclidean",
    curvature: float | None = None,
    distance_clip: float = 1e6,
) -> np.ndarray:
    """Distance matrix (len(a), len(b)) in float64, exactly as :func:`evaluate` ranks by."""
    left, right = _embeddings(a, b, names=("a", "b"))
    metric = _check_metric(geometry, curvature, distance_clip)
    return _distance_block(left, _prepare_gallery(right), metric)


def query_micro(frame: pd.DataFrame) -> pd.DataFrame:
    """Summary frame of means over valid queries per level (CUB's registered endpoint)."""
    metrics = _metric_columns(frame)
    rows = []
    for level in LEVELS:
        valid = frame[(frame["level"] == level) & frame["valid"]]
        means = {_summary_name(name): _mean(valid[name]) for name in metrics}
        rows.append({"level": level, "n_valid": len(valid), **means})
    return pd.DataFrame(rows, columns=["level", "n_valid", *map(_summary_name, metrics)])


def group_macro(frame: pd.DataFrame, query_labels: Any) -> pd.DataFrame:
    """Summary frame weighting each group equally (NABirds' endpoint).

    The group of a query at a level is its own label at that level (leaf label at "leaf",
    middle label at "middle", high label at "high"). Metrics are averaged over the valid
    queries of each group, then over the groups that hold at least one valid query.
    """
    metrics = _metric_columns(frame)
    labels = _check_labels(query_labels, None, "query_labels")
    queries = frame["query"].to_numpy()
    if len(queries) and (queries.min() < 0 or queries.max() >= len(labels)):
        raise ValueError(
            f"frame has query indices outside 0..{len(labels) - 1}; pass the query_labels "
            "that the frame was evaluated with"
        )
    rows = []
    for index, level in enumerate(LEVELS):
        chosen = ((frame["level"] == level) & frame["valid"]).to_numpy()
        valid = frame.loc[chosen, list(metrics)]
        groups = labels[queries[chosen], index]
        group_means = valid.groupby(groups, sort=True).mean()
        means = {_summary_name(name): _mean(group_means[name]) for name in metrics}
        rows.append({"level": level, "n_valid": len(valid), "n_groups": len(group_means), **means})
    columns = ["level", "n_valid", "n_groups", *map(_summary_name, metrics)]
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


def _embeddings(
    first: Any, second: Any, names: tuple[str, str] = ("query_emb", "gallery_emb")
) -> tuple[np.ndarray, np.ndarray]:
    """Both embedding matrices as float64 NumPy arrays of equal width."""
    arrays = []
    for value, name in zip((first, second), names, strict=True):
        if hasattr(value, "detach"):
            value = value.detach().cpu().numpy()
        array = np.asarray(value)
        if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0:
            raise ValueError(f"{name} must be a non-empty (n, d) array, got shape {array.shape}")
        if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
            raise TypeError(f"{name} must hold real numbers, got dtype {array.dtype}")
        arrays.append(np.ascontiguousarray(array, dtype=np.float64))
    if arrays[0].shape[1] != arrays[1].shape[1]:
        raise ValueError(
            f"{names[0]} has dimension {arrays[0].shape[1]} but {names[1]} has "
            f"{arrays[1].shape[1]}; embed both with the same model"
        )
    return arrays[0], arrays[1]


def _check_labels(labels: Any, rows: int | None, name: str) -> np.ndarray:
    """Labels as an int64 (n, 3) array (leaf, middle, high), ``rows`` long when given."""
    array = np.asarray(labels)
    if array.ndim != 2 or array.shape[1] != len(LEVELS):
        raise ValueError(
            f"{name} must have shape (n, 3) with columns leaf, middle, high; got {array.shape}"
        )
    if array.dtype == bool or not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"{name} must hold integer label codes, got dtype {array.dtype}")
    if rows is not None and len(array) != rows:
        raise ValueError(f"{name} has {len(array)} rows but the embeddings have {rows}")
    return array.astype(np.int64, copy=False)


def _label_codes(
    query_labels: Any, gallery_labels: Any, n_queries: int, n_gallery: int
) -> tuple[np.ndarray, np.ndarray]:
    """Dense int32 codes of both label arrays, checked to form one tree."""
    query = _check_labels(query_labels, n_queries, "query_labels")
    gallery = _check_labels(gallery_labels, n_gallery, "gallery_labels")
    both = np.concatenate([query, gallery])
    codes = np.stack(
        [np.unique(both[:, level], return_inverse=True)[1] for level in range(len(LEVELS))]
    ).T  # column-contiguous
    codes = codes.astype(np.int32, order="F")
    for child, parent in ((0, 1), (1, 2)):
        child_codes, parent_codes = codes[:, child].astype(np.int64), codes[:, parent]
        pairs = np.unique(child_codes * (int(parent_codes.max()) + 1) + parent_codes)
        if len(pairs) != codes[:, child].max() + 1:
            raise ValueError(
                f"labels do not form a tree: some {LEVELS[child]} label has more than one "
                f"{LEVELS[parent]} label across query_labels and gallery_labels"
            )
    return codes[:n_queries], codes[n_queries:]


def _check_ks(ks: Sequence[int]) -> tuple[int, ...]:
    """Recall cut-offs as a tuple of distinct positive ints."""
    values = tuple(ks)
    for k in values:
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise ValueError(f"ks must be positive integers, got {k!r} in {values!r}")
    if len(set(values)) != len(values):
        raise ValueError(f"ks must not repeat a value, got {values!r}")
    return tuple(int(k) for k in values)


def _check_chunk_size(chunk_size: int) -> int:
    """The number of queries per chunk, a positive int."""
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int | np.integer):
        raise TypeError(f"chunk_size must be an int, got {chunk_size!r}")
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
    return int(chunk_size)


def _check_metric(geometry: str, curvature: float | None, distance_clip: float) -> _Metric:
    """Validated geometry, curvature and clip value."""
    if geometry not in GEOMETRIES:
        raise ValueError(f"geometry must be one of {GEOMETRIES}, got {geometry!r}")
    clip = float(distance_clip)
    if not np.isfinite(clip) or clip <= 0:
        raise ValueError(f"distance_clip must be a finite positive number, got {distance_clip!r}")
    if geometry == "euclidean":
        if curvature is not None:
            raise ValueError("curvature is only used with geometry='poincare'; pass None")
        return _Metric(geometry, None, clip)
    if curvature is None:
        raise ValueError("geometry='poincare' needs the ball's curvature, e.g. curvature=0.1")
    c = float(curvature)
    if not np.isfinite(c) or c <= 0:
        raise ValueError(f"curvature must be a finite positive number, got {curvature!r}")
    return _Metric(geometry, c, clip)


def _prepare_gallery(gallery: np.ndarray) -> _Gallery:
    """Deduplicate gallery rows so bitwise identical embeddings get identical distances."""
    rows = gallery.view(np.dtype((np.void, gallery.dtype.itemsize * gallery.shape[1]))).ravel()
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    unique, inverse = (gallery, None) if len(first) == len(gallery) else (gallery[first], inverse)
    sq_norm = np.einsum("ij,ij->i", unique, unique)
    augmented_t = np.concatenate([-2.0 * unique.T, np.ones((1, len(unique))), sq_norm[None]])
    return _Gallery(np.ascontiguousarray(augmented_t), sq_norm, inverse)


def _distance_block(queries: np.ndarray, gallery: _Gallery, metric: _Metric) -> np.ndarray:
    """Sanitised float64 distances from each query to each gallery row."""
    return _distances(_squared_distances(queries, gallery), queries, gallery, metric)


def _squared_distances(queries: np.ndarray, gallery: _Gallery) -> np.ndarray:
    """‖x − y‖² (at least 0) to each unique gallery row as one BLAS product.

    [x, ‖x‖², 1]·[−2y, 1, ‖y‖²] = ‖x‖² + ‖y‖² − 2⟨x, y⟩, so the absolute error is about
    1e-16·(‖x‖² + ‖y‖²).
    """
    sq_norm = np.einsum("ij,ij->i", queries, queries)[:, None]
    augmented = np.concatenate([queries, sq_norm, np.ones_like(sq_norm)], axis=1)
    squared = augmented @ gallery.augmented_t
    return np.maximum(squared, 0.0, out=squared)


def _distances(
    squared: np.ndarray, queries: np.ndarray, gallery: _Gallery, metric: _Metric
) -> np.ndarray:
    """Sanitised distances (queries, all gallery rows), in place on the squared distances."""
    if metric.geometry == "euclidean":
        dist = np.sqrt(squared, out=squared)
    else:
        query_sq = np.einsum("ij,ij->i", queries, queries)
        dist = _poincare(squared, query_sq, gallery.sq_norm, metric.curvature)
    np.fmin(dist, metric.clip, out=dist)  # NaN and +inf become the clip value; all are ≥ 0
    if gallery.inverse is not None:
        dist = dist[:, gallery.inverse]
    return dist


def _poincare(squared: np.ndarray, x_sq: np.ndarray, y_sq: np.ndarray, c: float) -> np.ndarray:
    """Poincaré-ball distance (2/√c)·artanh(√c·‖(−x)⊕_c y‖) from ‖x − y‖², in place.

    Uses c·‖(−x)⊕_c y‖² = ‖x − y‖² / (‖x − y‖² + (1 − c‖x‖²)(1 − c‖y‖²)/c) (Ungar's identity
    rearranged): inside the ball both terms of the denominator are non-negative.
    """
    denominator = np.multiply.outer((1.0 - c * x_sq) / c, 1.0 - c * y_sq)
    denominator += squared
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(squared, denominator, out=squared)
        np.sqrt(squared, out=squared)  # NaN outside the ball, where the factors can be < 0
        np.arctanh(squared, out=squared)  # inf on the boundary, NaN beyond it
    squared *= 2.0 / np.sqrt(c)
    return squared


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
    squared: np.ndarray,
    queries: np.ndarray,
    query_codes: np.ndarray,
    gallery: _Gallery,
    gallery_codes: np.ndarray,
    metric: _Metric,
    ks: tuple[int, ...],
    rows: slice,
) -> tuple[np.ndarray, np.ndarray]:
    """AP (rows, levels) and Recall@K (rows, levels, ks) of the query ``rows`` of a chunk."""
    dist = _distances(squared[rows], queries[rows], gallery, metric)
    query_codes = query_codes[rows]
    positives = _positive_ranks(dist, query_codes, gallery_codes)
    ap = np.empty((len(dist), len(LEVELS)))
    hits = np.empty((len(dist), len(LEVELS), len(ks)))
    for level in range(len(LEVELS)):
        chosen = positives.levels == level  # keeps the (row, rank) order
        ap[:, level], hits[:, level] = _level_scores(
            positives.rows[chosen], positives.ranks[chosen], len(dist), ks
        )
    return ap, hits


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


def _per_query_frame(ap: np.ndarray, hits: np.ndarray, ks: tuple[int, ...]) -> pd.DataFrame:
    """The per-query frame: rows by query, then leaf, middle, high."""
    n_queries, n_levels = ap.shape
    columns = {
        "query": np.repeat(np.arange(n_queries), n_levels),
        "level": np.tile(np.array(LEVELS, dtype=object), n_queries),
        "valid": ~np.isnan(ap.ravel()),
        "ap": ap.ravel(),
    }
    for index, name in enumerate(recall_columns(ks)):
        columns[name] = hits[:, :, index].ravel()
    return pd.DataFrame(columns)


def _metric_columns(frame: pd.DataFrame) -> list[str]:
    """Metric columns of a per-query frame, checked: ``ap`` first, then the ``r@K`` columns."""
    required = {"query", "level", "valid", "ap"}
    missing = required - set(frame.columns)
    if missing:
        raise ValueError(
            f"per-query frame lacks columns {sorted(missing)}; pass the output of evaluate()"
        )
    return ["ap", *[name for name in frame.columns if str(name).startswith("r@")]]


def _summary_name(metric: str) -> str:
    """Summary column of a per-query metric: ``ap`` becomes ``map``, ``r@K`` stays."""
    return "map" if metric == "ap" else metric


def _mean(values: pd.Series) -> float:
    """Mean of a column, NaN when empty."""
    return float(values.mean()) if len(values) else float("nan")
