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

Everything is whole-matrix work (GEMMs over blocks of replicates, every effect and metric of a
draw as columns of one matrix); no Python loop runs over replicates or queries. The same
inputs and seed give the same bytes.

Beside each interval, :func:`sign_flip_p`: an exact test over seeds of the mean of the per-seed
values, whose smallest attainable p-value (:func:`smallest_p`) says when the number of seeds,
not the data, limits the claim (three seeds can never go below 0.25 two-sided).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

CHUNK = 2048  # replicates per block: bounds memory at CHUNK x queries, results unchanged
EXACT_SIGN_FLIP_SEEDS = 20  # 2**20 assignments; more seeds draw assignments at random
RANDOM_SIGN_FLIPS = 2**20


INTERVALS_KEY = "effects.intervals"


class IntervalError(ValueError):
    """Inputs the bootstrap cannot use; the message names what is wrong."""


@dataclass(frozen=True)
class IntervalSettings:
    """The config's ``effects.intervals``: confidence level, replicates and resampling seed."""

    level: float = 0.95
    replicates: int = 10_000
    seed: int = 0

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> IntervalSettings:
        """The settings of a validated config (schema defaults filled in)."""
        block = config.get("effects", {}).get("intervals", {})
        unknown = set(block) - {"level", "replicates", "seed"}
        if unknown:
            raise IntervalError(f"unknown key(s) under {INTERVALS_KEY}: {sorted(unknown)}")
        return cls(**block)


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


def _query_micro(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(R, K) means of the scored values (Q, K) under query counts (R, Q): two GEMMs."""
    scored = np.isfinite(values)
    total = counts @ np.where(scored, values, 0.0)
    weight = counts @ scored.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return total / weight


def _group_macro(values: np.ndarray, groups: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(R, K) means over groups of each group's mean of its scored values (Q, K) under query
    counts (R, Q); a group without a resampled scored query drops out. A query is scored in
    every column or in none (the evaluation's valid flag), so a group's weight is shared by
    the columns, and the mean over groups of group means is one weighted sum per replicate:
    each query's count over its group's count, over the number of groups drawn (two GEMMs)."""
    scored = np.isfinite(values)
    rows = scored.any(axis=1)
    if (scored[rows] != rows[rows, None]).any():
        raise IntervalError("group-macro needs each query scored in every column or in none")
    members = np.flatnonzero(rows)
    _, group_of = np.unique(groups[members], return_inverse=True)
    one_hot = np.zeros((len(members), int(group_of.max(initial=-1)) + 1))
    one_hot[np.arange(len(members)), group_of] = 1.0
    drawn = counts[:, members]
    group_counts = drawn @ one_hot  # (R, G): each group's resampled queries
    per_query = group_counts[:, group_of]
    weights = np.divide(drawn, per_query, out=np.zeros_like(drawn), where=per_query > 0)
    present = (group_counts > 0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (weights @ values[members]) / present[:, None]


def aggregate_replicates(
    values: np.ndarray, groups: np.ndarray | None, counts: np.ndarray
) -> np.ndarray:
    """(R, K) aggregation of one draw's per-query ``values`` (Q, K: a column per seed, effect
    or metric; NaN: not scored) under query ``counts`` (R, Q): group-macro over ``groups``
    (Q,), or query-micro when None. Work is whole-matrix, in blocks of replicates."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2 or counts.ndim != 2 or counts.shape[1] != values.shape[0]:
        raise IntervalError(
            f"per-query values {values.shape} and query counts {counts.shape} do not match"
        )
    if groups is not None and len(groups) != values.shape[0]:
        raise IntervalError(f"{len(groups)} group labels for {values.shape[0]} queries")
    out = np.empty((len(counts), values.shape[1]))
    for start in range(0, len(counts), CHUNK):
        block = counts[start : start + CHUNK].astype(np.float64)
        part = (
            _query_micro(values, block)
            if groups is None
            else _group_macro(values, np.asarray(groups), block)
        )
        out[start : start + len(block)] = part
    return out


def two_stage_batch(
    draws: Sequence[tuple[np.ndarray, np.ndarray | None]], resamples: Resamples
) -> np.ndarray:
    """(R, K) replicates of K effects at once: per replicate, the mean over its resampled seeds
    of the mean over the draws of the aggregation of that draw's resampled queries. ``draws``
    holds, per query/gallery draw, the per-query values (S, Q, K) and the group labels (Q,)
    (or None: query-micro)."""
    if len(draws) != len(resamples.queries):
        raise IntervalError(f"{len(draws)} draws of values for {len(resamples.queries)} resampled")
    seeds = resamples.seeds.shape[1]
    per_draw = []
    for (values, groups), counts in zip(draws, resamples.queries, strict=True):
        values = np.asarray(values, dtype=np.float64)
        if values.ndim != 3 or values.shape[0] != seeds:
            raise IntervalError(f"per-query values {values.shape} are not ({seeds} seeds, Q, K)")
        columns = values.transpose(1, 0, 2).reshape(values.shape[1], -1)  # (Q, S·K)
        per_draw.append(
            aggregate_replicates(columns, groups, counts).reshape(len(counts), seeds, -1)
        )
    by_seed = np.mean(per_draw, axis=0)  # (R, S, K): a seed's value, averaged over the draws
    weights = resamples.seeds / resamples.seeds.sum(axis=1, keepdims=True)
    return np.einsum("rs,rsk->rk", weights, by_seed)


def two_stage_replicates(
    draws: Sequence[tuple[np.ndarray, np.ndarray | None]], resamples: Resamples
) -> np.ndarray:
    """(R,) replicates of one effect (:func:`two_stage_batch` with per-query values (S, Q))."""
    batch = [(np.asarray(values, dtype=np.float64)[:, :, None], groups) for values, groups in draws]
    return two_stage_batch(batch, resamples)[:, 0]


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


DEFAULT_INTERVALS = IntervalSettings()


def interval_settings(block: Mapping[str, Any] | None) -> IntervalSettings:
    """The settings of a rule's ``effects.intervals`` parameter (defaults when None)."""
    return IntervalSettings.from_config({"effects": {"intervals": dict(block or {})}})


def seed_replicates(per_seed: np.ndarray, settings: IntervalSettings) -> np.ndarray:
    """(R,) replicates of the mean of per-seed values, resampling the seeds only: the interval
    of a table that has no per-query rows (a per-seed table published elsewhere)."""
    values = np.asarray(per_seed, dtype=np.float64)
    resamples = draw_resamples(len(values), [1], settings.replicates, settings.seed)
    return two_stage_replicates([(values[:, None], None)], resamples)


def uncertainty(
    per_seed: Sequence[float], settings: IntervalSettings, replicates: np.ndarray | None = None
) -> dict[str, float]:
    """The columns beside an effect: ``ci_low``, ``ci_high`` (from ``replicates``, the
    two-stage ones when the caller has per-query rows, else the seeds' alone), ``p_seeds`` (the
    sign-flip test of the per-seed values) and ``p_min`` (its floor with this many seeds)."""
    values = np.asarray(per_seed, dtype=np.float64)
    values = values[~np.isnan(values)]
    if not len(values):
        nan = float("nan")
        return {"ci_low": nan, "ci_high": nan, "p_seeds": nan, "p_min": nan}
    if replicates is None:
        replicates = seed_replicates(values, settings)
    low, high = percentile_interval(replicates, settings.level)
    return {
        "ci_low": low,
        "ci_high": high,
        "p_seeds": sign_flip_p(values, settings.seed),
        "p_min": smallest_p(len(values)),
    }
