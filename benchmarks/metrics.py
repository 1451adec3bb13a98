"""Speed check of the retrieval metrics at CUB size against a plain per-query reference.

Run: ``.venv/bin/python benchmarks/metrics.py [--geometry euclidean|poincare] [--repeats N]
[--cores N] [--reference auto|scikit-learn|numpy]``. It builds CUB-like tree labels (200 leaves,
124 middles, 37 highs), 870 query and 4,924 gallery items with class-structured 32-D embeddings,
and in one run times :func:`hierbench.metrics.evaluate` (best of ``--repeats``) and a plain loop
over queries that computes one distance row, ranks it and scores each level: scikit-learn's
``average_precision_score`` (auto: when installed), else a NumPy AP per query. Both must agree
(AP within 1e-9, equal validity and Recall@K). Limits: evaluate at most 0.5 s, and at least 50x
faster than the scikit-learn reference (5x against the much faster NumPy reference).

OT@K (K = 10, 50, 100): evaluate is timed without and with ``ot_ks`` (which also computes the
tree-referenced ot_tree scores), the runs interleaved, and the best with OT may take at most 1.5x
the best without. Its reference is a loop over
queries that ranks each distance row by (distance, index) and calls
``scipy.stats.wasserstein_distance`` on the relation codes of the top K and of the ideal top K;
both must agree within 1e-12.

The process runs on ``--cores`` CPUs with as many evaluate threads and, unless
``OPENBLAS_NUM_THREADS`` is exported, one BLAS thread. Exit status 0 when all hold, 1 when a
speed limit is missed, 2 when the results disagree. For ``make bench``, :func:`rows` records
the two ratios (speed-up against the reference loop, OT@K slowdown) per geometry.
"""

from __future__ import annotations

import os

# One BLAS thread unless the caller exports another count: evaluate parallelises with its own
# threads, and idle OpenBLAS threads spin on the cores they would need (set before NumPy loads).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from benchrows import Row, row
from scipy.stats import wasserstein_distance

from hierbench.metrics import evaluate, worker_count

N_QUERIES, N_GALLERY, DIM = 870, 4924, 32
N_LEAVES, N_MIDDLES, N_HIGHS = 200, 124, 37
KS = (1, 5, 10, 20)
OT_KS = (10, 50, 100)
MAX_OT_SLOWDOWN = 1.5
OT_TOLERANCE = 1e-12
CURVATURE = 0.1
LIMIT_S = 0.5
MIN_SPEEDUP = {"scikit-learn": 50.0, "numpy": 5.0}
AP_TOLERANCE = 1e-9


def cub_like_labels(rng: np.random.Generator) -> np.ndarray:
    """(leaf, middle, high) labels of 5,794 items on a random tree shaped like CUB's."""
    high_of_middle = rng.permutation(
        np.concatenate([np.arange(N_HIGHS), rng.integers(0, N_HIGHS, N_MIDDLES - N_HIGHS)])
    )
    middle_of_leaf = rng.permutation(
        np.concatenate([np.arange(N_MIDDLES), rng.integers(0, N_MIDDLES, N_LEAVES - N_MIDDLES)])
    )
    leaves = rng.permutation(np.resize(np.arange(N_LEAVES), N_QUERIES + N_GALLERY))
    middles = middle_of_leaf[leaves]
    return np.stack([leaves, middles, high_of_middle[middles]], axis=1)


def embeddings(rng: np.random.Generator, labels: np.ndarray, geometry: str) -> np.ndarray:
    """Class-structured embeddings: high, middle and leaf offsets plus noise (in the ball)."""
    parts = [
        rng.normal(scale=scale, size=(count, DIM))[labels[:, level]]
        for level, (scale, count) in enumerate([(0.5, N_LEAVES), (0.7, N_MIDDLES), (1.0, N_HIGHS)])
    ]
    points = sum(parts) + rng.normal(scale=0.6, size=(len(labels), DIM))
    if geometry == "euclidean":
        return points
    norms = np.linalg.norm(points, axis=1, keepdims=True)
    return points / norms * np.tanh(norms / 4.0) * 0.95 / np.sqrt(CURVATURE)


def reference_distances(query: np.ndarray, gallery: np.ndarray, geometry: str) -> np.ndarray:
    """One query's distances, from coordinate differences or the written-out Möbius sum."""
    if geometry == "euclidean":
        return np.sqrt(((gallery - query) ** 2).sum(axis=1))
    c, u = CURVATURE, -query
    uv, uu, vv = gallery @ u, u @ u, (gallery**2).sum(axis=1)
    numerator = (1 + 2 * c * uv + c * vv)[:, None] * u + (1 - c * uu) * gallery
    norm = np.linalg.norm(numerator, axis=1) / (1 + 2 * c * uv + c * c * uu * vv)
    return 2 / np.sqrt(c) * np.arctanh(np.sqrt(c) * norm)


def numpy_ap(relevant: np.ndarray, dist: np.ndarray, order: np.ndarray) -> float:
    """AP of one query at one level from its stable ranking."""
    positions = np.flatnonzero(relevant[order]) + 1
    return float(np.mean(np.arange(1, len(positions) + 1) / positions))


def reference_ap(choice: str) -> tuple[str, Callable[[np.ndarray, np.ndarray, np.ndarray], float]]:
    """scikit-learn's average_precision_score if chosen or installed, else the NumPy AP."""
    if choice == "numpy":
        return "numpy", numpy_ap
    try:
        from sklearn.metrics import average_precision_score
    except ImportError:
        if choice == "scikit-learn":
            raise SystemExit("--reference scikit-learn needs scikit-learn installed") from None
        return "numpy", numpy_ap
    return "scikit-learn", lambda relevant, dist, order: average_precision_score(relevant, -dist)


def reference(
    queries: np.ndarray,
    gallery: np.ndarray,
    query_labels: np.ndarray,
    gallery_labels: np.ndarray,
    geometry: str,
    ap_function: Callable[[np.ndarray, np.ndarray, np.ndarray], float],
) -> tuple[np.ndarray, np.ndarray]:
    """AP (queries, levels) and Recall@K (queries, levels, ks) from a loop over queries."""
    ap = np.full((len(queries), 3), np.nan)
    hits = np.full((len(queries), 3, len(KS)), np.nan)
    for q in range(len(queries)):
        dist = reference_distances(queries[q], gallery, geometry)
        order = np.argsort(dist, kind="stable")
        same = gallery_labels == query_labels[q]
        relevant_by_level = [same[:, 0], same[:, 1] & ~same[:, 0], same[:, 2] & ~same[:, 1]]
        for level, relevant in enumerate(relevant_by_level):
            if relevant.any():
                ap[q, level] = ap_function(relevant, dist, order)
                ranked = relevant[order]
                hits[q, level] = [float(ranked[:k].any()) for k in KS]
    return ap, hits


def reference_ot(
    queries: np.ndarray,
    gallery: np.ndarray,
    query_labels: np.ndarray,
    gallery_labels: np.ndarray,
    geometry: str,
) -> np.ndarray:
    """OT@K (queries, OT_KS) from a loop over queries with scipy's 1-D Wasserstein distance."""
    scores = np.empty((len(queries), len(OT_KS)))
    index = np.arange(len(gallery))
    for q in range(len(queries)):
        dist = reference_distances(queries[q], gallery, geometry)
        order = np.lexsort((index, dist))
        same = gallery_labels == query_labels[q]
        relation = np.select([same[:, 0], same[:, 1], same[:, 2]], [0, 1, 2], default=3)
        ideal = np.sort(relation)
        for column, k in enumerate(OT_KS):
            scores[q, column] = wasserstein_distance(relation[order][:k], ideal[:k])
    return scores


def limit_cores(cores: int) -> int:
    """Run this process on at most ``cores`` CPUs; the number it may use afterwards."""
    available = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, available[:cores])
    os.environ["OMP_NUM_THREADS"] = str(min(cores, len(available)))
    return len(os.sched_getaffinity(0))


@dataclass(frozen=True)
class Timings:
    """One run's measurements on the same data, and how far evaluate and the references agree."""

    reference_name: str
    seconds: list[float]  # evaluate without OT@K, per repeat
    ot_seconds: list[float]  # evaluate with OT@K, per repeat (interleaved with the above)
    reference_s: float  # the per-query AP and Recall@K loop
    ot_reference_s: float  # the per-query scipy OT@K loop
    ap_error: float
    ot_error: float
    agree: bool
    valid: np.ndarray  # valid queries per level


def measure(geometry: str, repeats: int, reference_choice: str) -> Timings:
    """Time evaluate (without and with OT@K, interleaved) and both reference loops once."""
    rng = np.random.default_rng(20260818)
    labels = cub_like_labels(rng)
    points = embeddings(rng, labels, geometry)
    queries, gallery = points[:N_QUERIES], points[N_QUERIES:]
    query_labels, gallery_labels = labels[:N_QUERIES], labels[N_QUERIES:]
    curvature = CURVATURE if geometry == "poincare" else None

    seconds: list[float] = []
    ot_seconds: list[float] = []
    evaluate(
        queries,
        gallery,
        query_labels,
        gallery_labels,
        geometry=geometry,
        ot_ks=OT_KS,
        curvature=curvature,
        ks=KS,
    )  # warm-up: thread pool, first allocations
    for _ in range(repeats):  # interleaved, so both see the same machine load
        for ot_ks, times in (((), seconds), (OT_KS, ot_seconds)):
            start = time.perf_counter()
            frame = evaluate(
                queries,
                gallery,
                query_labels,
                gallery_labels,
                geometry=geometry,
                curvature=curvature,
                ks=KS,
                ot_ks=ot_ks,
            )
            times.append(time.perf_counter() - start)
    name, ap_function = reference_ap(reference_choice)
    start = time.perf_counter()
    ref_ap, ref_hits = reference(
        queries, gallery, query_labels, gallery_labels, geometry, ap_function
    )
    reference_s = time.perf_counter() - start
    start = time.perf_counter()
    ref_ot = reference_ot(queries, gallery, query_labels, gallery_labels, geometry)
    ot_reference_s = time.perf_counter() - start

    by_level = frame[frame["level"] != "all"]
    ap = by_level["ap"].to_numpy().reshape(-1, 3)
    hits = by_level[[f"r@{k}" for k in KS]].to_numpy().reshape(-1, 3, len(KS))
    ot = frame.loc[frame["level"] == "all", [f"ot@{k}" for k in OT_KS]].to_numpy()
    ot_error = float(np.max(np.abs(ot - ref_ot))) if ot.shape == ref_ot.shape else float("inf")
    same_valid = np.array_equal(np.isnan(ap), np.isnan(ref_ap))
    ap_error = float(np.nanmax(np.abs(ap - ref_ap))) if same_valid else float("inf")
    agree = same_valid and ap_error <= AP_TOLERANCE and np.array_equal(hits, ref_hits, True)
    agree = bool(agree and ot_error <= OT_TOLERANCE)
    return Timings(
        name,
        seconds,
        ot_seconds,
        reference_s,
        ot_reference_s,
        ap_error,
        ot_error,
        agree,
        (~np.isnan(ap)).sum(axis=0),
    )


def rows(
    geometries: tuple[str, ...] = ("euclidean", "poincare"),
    repeats: int = 5,
    cores: int = 2,
    reference_choice: str = "auto",
) -> list[Row]:
    """evaluate against the per-query reference loop, and with OT@K against without, per
    geometry; raises when evaluate and a reference disagree (a wrong result has no speed)."""
    cores = limit_cores(cores)
    result = []
    for geometry in geometries:
        t = measure(geometry, repeats, reference_choice)
        if not t.agree:
            raise RuntimeError(
                f"{geometry}: evaluate and the reference disagree (max |AP difference| "
                f"{t.ap_error:.2e}, max |OT@K difference| {t.ot_error:.2e})"
            )
        best, best_ot = min(t.seconds), min(t.ot_seconds)
        size = (
            f"{N_QUERIES} x {N_GALLERY}, {DIM}-D, {cores} core(s), {worker_count()} evaluate "
            f"thread(s), best of {repeats}"
        )
        fallback = "" if t.reference_name == "scikit-learn" else " (scikit-learn not installed)"
        result += [
            row(
                "evaluation",
                f"{geometry}: evaluate queries/s vs a per-query {t.reference_name} loop",
                N_QUERIES / best,
                N_QUERIES / t.reference_s,
                "queries/s",
                f">= {MIN_SPEEDUP[t.reference_name]:g}",
                note=f"{size}; AP agrees to {t.ap_error:.1e}{fallback}",
            ),
            row(
                "evaluation",
                f"{geometry}: evaluate with OT@{'/'.join(map(str, OT_KS))} vs without",
                best_ot,
                best,
                "s",
                f"<= {MAX_OT_SLOWDOWN:g}",
                note=f"{size}, runs interleaved; OT@K agrees with scipy to {t.ot_error:.1e}",
            ),
        ]
    return result


def main() -> int:
    """Time both implementations once on the same data and check the limits."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--geometry", choices=("euclidean", "poincare"), default="euclidean")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--reference", choices=("auto", "scikit-learn", "numpy"), default="auto")
    args = parser.parse_args()
    cores = limit_cores(args.cores)
    t = measure(args.geometry, args.repeats, args.reference)
    name, valid = t.reference_name, t.valid
    best, best_ot = min(t.seconds), min(t.ot_seconds)
    speedup = t.reference_s / best
    slowdown = best_ot / best
    print(
        f"{args.geometry}: {N_QUERIES} queries x {N_GALLERY} gallery, {DIM}-D, levels "
        f"{N_LEAVES}/{N_MIDDLES}/{N_HIGHS}, valid queries leaf/middle/high "
        f"{valid[0]}/{valid[1]}/{valid[2]}; {cores} core(s), {worker_count()} evaluate thread(s), "
        f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}"
    )
    print(
        f"evaluate: best {best:.3f} s of {args.repeats} (median "
        f"{statistics.median(t.seconds):.3f} s); {name} reference: {t.reference_s:.2f} s; "
        f"speed-up {speedup:.1f}x (limits {LIMIT_S} s, {MIN_SPEEDUP[name]:.0f}x)"
    )
    print(
        f"with OT@{'/'.join(map(str, OT_KS))}: best {best_ot:.3f} s (median "
        f"{statistics.median(t.ot_seconds):.3f} s), {slowdown:.2f}x the time without "
        f"(limit {MAX_OT_SLOWDOWN}x); scipy reference loop: {t.ot_reference_s:.2f} s"
    )
    print(
        f"agreement: max |AP difference| {t.ap_error:.2e}, max |OT@K difference| "
        f"{t.ot_error:.2e}, recalls and validity equal: {t.agree}"
    )
    if not t.agree:
        print("FAILED: evaluate and the reference disagree", file=sys.stderr)
        return 2
    if best > LIMIT_S or speedup < MIN_SPEEDUP[name] or slowdown > MAX_OT_SLOWDOWN:
        print("FAILED: speed limit missed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
