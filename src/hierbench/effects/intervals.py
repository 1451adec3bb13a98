"""Intervals for an effect that account for both sources of noise: which training seeds, which
test images. Ours, not the papers' (they report mean ± SD over seeds).

A two-stage paired bootstrap. Each replicate resamples the training seeds (with replacement),
then, within each query/gallery draw, the queries (with replacement), and recomputes the
registered aggregation on the resampled queries: query-micro (the mean over scored queries) or
group-macro (the mean over groups of each group's mean over its scored queries, groups left
without a resampled query dropping out, as the evaluation drops empty groups). Every training
seed is scored on the same test images, so one query resample per draw serves every seed of a
replicate (the design is crossed, not nested: the test images are one sample shared by all
seeds), and it serves both arms of a contrast too. Pass a contrast's per-query values (each
arm's values times its sign in the effect) and the pairing is real. An effect that is a linear
combination of aggregated values (mean hierarchy mAP: the mean of middle and high) is that
combination of the replicates made from the same :class:`Resamples`.

Everything is whole-array work (sparse group sums, chunks of replicates); no Python loop runs
over replicates or queries. The same inputs and seed give the same bytes.

Beside each interval, :func:`sign_flip_p`: an exact test over seeds of the mean of the per-seed
values, whose smallest attainable p-value (:func:`smallest_p`) says when the number of seeds,
not the data, limits the claim (three seeds can never go below 0.25 two-sided).
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

CHUNK = 2048  # replicates per block: bounds memory at CHUNK x queries, results unchanged
EXACT_SIGN_FLIP_SEEDS = 20  # 2**20 assignments; more seeds draw assignments at random
RANDOM_SIGN_FLIPS = 2**20


class IntervalError(ValueError):
    """Inputs the bootstrap cannot use; the message names what is wrong."""


@dataclass(frozen=True)
class Resamples:
    """One two-stage resampling: ``seeds`` (R, S) how often each training seed is drawn in
    each replicate, ``queries`` per query/gallery draw an (R, Q) count of each query."""

    seeds: np.ndarray
    queries: tuple[np.ndarray, ...]

    @property
    def replicates(self) -> int:
        return len(self.seeds)


def _counts(draws: np.ndarray, categories: int) -> np.ndarray:
    """(R, categories) counts of each category in each row of ``draws`` (R, n) indices."""
    rows = len(draws)
    offsets = (np.arange(rows)[:, None] * categories + draws).ravel()
    return np.bincount(offsets, minlength=rows * categories).reshape(rows, categories)


def draw_resamples(
    n_seeds: int, queries_per_draw: Sequence[int], replicates: int, seed: int
) -> Resamples:
    """The seed and query counts of ``replicates`` two-stage resamples (seeds first, then each
    draw's queries, from one generator seeded with ``seed``)."""
    if n_seeds < 1 or replicates < 1 or not queries_per_draw or min(queries_per_draw) < 1:
        raise IntervalError(
            f"a bootstrap needs at least one seed, replicate and query per draw; got {n_seeds} "
            f"seed(s), {replicates} replicate(s), queries per draw {list(queries_per_draw)}"
        )
    rng = np.random.default_rng(seed)
    seeds = _counts(rng.integers(0, n_seeds, size=(replicates, n_seeds)), n_seeds)
    queries = tuple(
        _counts(rng.integers(0, size, size=(replicates, size)), size) for size in queries_per_draw
    )
    return Resamples(seeds=seeds, queries=queries)


def observed_resample(n_seeds: int, queries_per_draw: Sequence[int]) -> Resamples:
    """The one 'replicate' that keeps every seed and query once: the observed value."""
    return Resamples(
        seeds=np.ones((1, n_seeds), dtype=np.int64),
        queries=tuple(np.ones((1, size), dtype=np.int64) for size in queries_per_draw),
    )


def _group_matrices(
    values: np.ndarray, groups: np.ndarray | None
) -> tuple[sparse.csr_matrix, sparse.csr_matrix, int]:
    """Sparse (Q, S·G) matrices of the scored values and of the scored indicator, column
    s·G + g holding seed s's queries of group g; and G."""
    seeds, queries = values.shape
    if groups is None:
        groups = np.zeros(queries, dtype=np.int64)
    _, group_index = np.unique(groups, return_inverse=True)
    n_groups = int(group_index.max()) + 1 if queries else 0
    scored = np.isfinite(values)
    seed_of, query_of = np.nonzero(scored)
    columns = seed_of * n_groups + group_index[query_of]
    shape = (queries, seeds * n_groups)
    sums = sparse.csr_matrix((values[seed_of, query_of], (query_of, columns)), shape=shape)
    hits = sparse.csr_matrix((np.ones(len(columns)), (query_of, columns)), shape=shape)
    return sums, hits, n_groups


def aggregate_replicates(
    values: np.ndarray, groups: np.ndarray | None, counts: np.ndarray
) -> np.ndarray:
    """(R, S) aggregation of one draw's per-query ``values`` (S, Q; NaN: not scored) under
    query ``counts`` (R, Q): group-macro over ``groups`` (Q,), or query-micro when None."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2 or counts.shape[1] != values.shape[1]:
        raise IntervalError(
            f"per-query values {values.shape} and query counts {counts.shape} do not match"
        )
    if groups is not None and len(groups) != values.shape[1]:
        raise IntervalError(f"{len(groups)} group labels for {values.shape[1]} queries")
    sums, hits, n_groups = _group_matrices(values, groups)
    seeds = values.shape[0]
    out = np.empty((len(counts), seeds))
    for start in range(0, len(counts), CHUNK):
        block = counts[start : start + CHUNK].astype(np.float64)
        total = np.asarray((sparse.csr_matrix(block) @ sums).todense())
        weight = np.asarray((sparse.csr_matrix(block) @ hits).todense())
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a replicate with nothing scored
            means = (total / weight).reshape(len(block), seeds, n_groups)
            out[start : start + len(block)] = np.nanmean(means, axis=2) if n_groups else np.nan
    return out


def two_stage_replicates(
    draws: Sequence[tuple[np.ndarray, np.ndarray | None]], resamples: Resamples
) -> np.ndarray:
    """(R,) replicates of an effect: per replicate, the mean over its resampled seeds of the
    mean over the draws of the aggregation of that draw's resampled queries. ``draws`` holds,
    per query/gallery draw, the per-query values (S, Q) and the group labels (or None)."""
    if len(draws) != len(resamples.queries):
        raise IntervalError(f"{len(draws)} draws of values for {len(resamples.queries)} resampled")
    per_draw = [
        aggregate_replicates(values, groups, counts)
        for (values, groups), counts in zip(draws, resamples.queries, strict=True)
    ]
    by_seed = np.mean(per_draw, axis=0)  # (R, S): a seed's value, averaged over the draws
    weights = resamples.seeds / resamples.seeds.sum(axis=1, keepdims=True)
    return np.sum(by_seed * weights, axis=1)


def percentile_interval(replicates: np.ndarray, level: float) -> tuple[float, float]:
    """The percentile interval of the replicates at confidence ``level`` (NaN replicates, from
    resamples that left nothing scored, are skipped)."""
    if not 0 < level < 1:
        raise IntervalError(f"effects.intervals.level must lie in (0, 1), got {level!r}")
    finite = replicates[np.isfinite(replicates)]
    if not len(finite):
        return float("nan"), float("nan")
    tail = (1 - level) / 2
    low, high = np.quantile(finite, [tail, 1 - tail])
    return float(low), float(high)


def smallest_p(n_seeds: int) -> float:
    """The smallest two-sided p-value the sign-flip test can give with ``n_seeds`` seeds: the
    observed signs and their mirror image are two of the 2**n assignments."""
    if n_seeds < 1:
        raise IntervalError("the sign-flip test needs at least one seed")
    return min(1.0, 2.0 ** (1 - n_seeds))


def sign_flip_p(per_seed: Sequence[float], seed: int = 0) -> float:
    """Two-sided p-value of the sign-flip test: the share of sign assignments to the per-seed
    values whose |mean| is at least the observed |mean| (exact up to 20 seeds, else 2**20
    random assignments from ``seed``). NaN when a value is not finite."""
    values = np.asarray(per_seed, dtype=np.float64)
    if not len(values) or not np.isfinite(values).all():
        return float("nan")
    if len(values) <= EXACT_SIGN_FLIP_SEEDS:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(values))))
    else:
        rng = np.random.default_rng(seed)
        signs = rng.choice((1.0, -1.0), size=(RANDOM_SIGN_FLIPS, len(values)))
    observed = abs(values.mean())
    flipped = np.abs(signs @ values) / len(values)
    tolerance = 1e-12 * max(1.0, float(np.abs(values).max()))  # equal sums rounded apart
    return float(np.mean(flipped >= observed - tolerance))
