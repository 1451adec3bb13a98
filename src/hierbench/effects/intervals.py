"""Intervals for an effect estimated from a few training seeds scored on one shared test set.
Ours, not the papers' (they report mean ± SD over seeds).

The model: a seed's effect is the true effect, plus what that training seed adds, plus what
the test images add. Every seed (and both arms of a contrast) is scored on the same images, so
part of the images' noise is *shared*: the same in every seed, it does not average out over
seeds. The rest differs from seed to seed and is already in the seeds' spread. So the variance
of the seed mean is estimated as

    se² = s² / n + V_shared

with s² the sample variance of the n per-seed effects and V_shared the covariance between two
seeds' effects when the test queries are resampled (averaged over the pairs of seeds; a
variance, so never below 0; it comes from hundreds of queries and is counted as known). The
interval is mean ± q · se, q calibrated on the observed ratio V_shared / (s²/n)
(:mod:`hierbench.effects.calibration`): Student's t on n − 1 degrees of freedom when the seeds
dominate, the normal quantile when the test images do, and in between the value that makes the
coverage the stated level; the tables report it as mean ± t(df) · se with its effective df.
Without per-query rows V_shared is 0 and this is the plain t interval over seeds, calibrated for
these test images, not for new ones. Set aside, with their measured coverage (docs/protocol.md):
the percentile bootstrap over seeds, which with three seeds is in effect their range and covers
about 75 %, and Welch–Satterthwaite degrees of freedom, about 92 % at three seeds.

The test images are resampled as the draws were made. The query/gallery draws are stratified
by leaf, so each replicate resamples, within their leaf, the test images that serve as queries
in any draw (the Rao–Wu rescaled bootstrap: n − 1 draws with replacement from a leaf's n images,
each weighing n / (n − 1), which is unbiased for the stratified variance and keeps every leaf's
count of query images), and a query takes its image's weight in every draw that holds it: the
three draws come from one test set and share images, and resampling each draw on its own would
count their overlap as independent evidence (measured in benchmarks/coverage.py: about 90 %
coverage where the test images dominate). A leaf with one query image has no spread to resample;
such leaves are pooled with the other one-image leaves of the same middle group, those still
alone with the ones of the same high group, then with all remaining ones (the collapsed-strata
estimator, which errs on the wide side). The gallery of each draw stays fixed: its sampling is
not in the interval (docs/protocol.md).

Everything is whole-matrix work (GEMMs over blocks of replicates, every effect and metric of a
draw as columns of one matrix). The same inputs and seed give the same bytes.

Beside each interval, :func:`sign_flip_p`: an exact test over seeds of the mean of the per-seed
values, whose smallest attainable p-value (:func:`smallest_p`) says when the number of seeds,
not the data, limits the claim (three seeds can never go below 0.25 two-sided).
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from hierbench.effects.calibration import calibrated_quantile, effective_df

CHUNK = 2048  # replicates per block: bounds memory at CHUNK x queries, results unchanged
EXACT_SIGN_FLIP_SEEDS = 20  # 2**20 assignments; more seeds draw assignments at random
RANDOM_SIGN_FLIPS = 2**20 - 1  # with the observed one, 2**20 assignments
SIGN_FLIP_BLOCK = 2**22  # sign-assignment x value cells per block of the exact test

INTERVALS_KEY = "effects.intervals"
METHOD = "t"  # the interval's name in the tables' metadata


class IntervalError(ValueError):
    """Inputs the intervals cannot use; the message names what is wrong."""


@dataclass(frozen=True)
class IntervalSettings:
    """The config's ``effects.intervals``: confidence level, query resamples and their seed."""

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

    def metadata(self) -> dict[str, Any]:
        """The settings as a table's metadata records them (the resampling seed included)."""
        return {
            "method": METHOD,
            "level": self.level,
            "replicates": self.replicates,
            "seed": self.seed,
        }


DEFAULT_INTERVALS = IntervalSettings()


def interval_settings(block: Mapping[str, Any] | None) -> IntervalSettings:
    """The settings of a rule's ``effects.intervals`` parameter (defaults when None)."""
    return IntervalSettings.from_config({"effects": {"intervals": dict(block or {})}})


# ----------------------------------------------------------------------- query resampling


@dataclass(frozen=True)
class QueryResamples:
    """Per query/gallery draw an (R, Q) array of each query's weight in each replicate."""

    weights: tuple[np.ndarray, ...]

    @property
    def replicates(self) -> int:
        return len(self.weights[0])

    @classmethod
    def of_images(cls, images: np.ndarray, positions: Sequence[np.ndarray]) -> QueryResamples:
        """Each draw's query weights from the (R, U) weights of the test images, a query
        taking its image's (``positions``: per draw, each query's image among the U)."""
        return cls(tuple(images[:, np.asarray(where)] for where in positions))


def collapsed_strata(labels: np.ndarray) -> np.ndarray:
    """(U,) stratum of each query image from its labels (U, L), leaf first: its leaf, or, for a
    leaf with one image, a pool of such leaves under the same middle group, then the same high
    group, then the remaining ones together."""
    labels = np.asarray(labels)
    if labels.ndim != 2 or not labels.shape[1]:
        raise IntervalError(f"image labels {labels.shape} are not (images, levels)")
    depth = labels.shape[1]
    keys: list[tuple[int, Any]] = [(0, label) for label in labels[:, 0].tolist()]
    for level in range(1, depth + 1):
        sizes = Counter(keys)
        alone = [index for index, key in enumerate(keys) if sizes[key] == 1]
        for index in alone:
            keys[index] = (level, labels[index, level].item() if level < depth else None)
    ordered = {key: number for number, key in enumerate(sorted(set(keys), key=repr))}
    return np.array([ordered[key] for key in keys], dtype=np.int64)


def draw_image_weights(strata: np.ndarray, replicates: int, seed: int) -> np.ndarray:
    """(R, U) Rao–Wu weights of the query images in ``replicates`` resamples within their
    ``strata`` (:func:`collapsed_strata`): per stratum of n images, n − 1 draws with
    replacement, each weighing n / (n − 1); a stratum of one keeps weight 1."""
    strata = np.asarray(strata)
    if replicates < 2 or not len(strata):
        raise IntervalError(
            f"resampling the test images needs two replicates and an image; got {replicates} "
            f"replicate(s) and {len(strata)} image(s)"
        )
    rng = np.random.default_rng(seed)
    weights = np.ones((replicates, len(strata)))
    _, inverse, sizes = np.unique(strata, return_inverse=True, return_counts=True)
    for size in sorted(set(sizes.tolist()) - {1}):
        chosen = np.flatnonzero(sizes == size)
        members = np.stack([np.flatnonzero(inverse == stratum) for stratum in chosen])
        picks = rng.integers(0, size, size=(replicates, len(chosen), size - 1))
        slots = np.arange(replicates * len(chosen))[:, None] * size
        counts = np.bincount(
            (slots + picks.reshape(len(slots), size - 1)).ravel(),
            minlength=replicates * len(chosen) * size,
        ).reshape(replicates, len(chosen), size)
        weights[:, members] = counts * (size / (size - 1))
    return weights


def observed_weights(queries_per_draw: Sequence[int]) -> QueryResamples:
    """The one 'replicate' that keeps every query once: the observed value."""
    return QueryResamples(tuple(np.ones((1, size)) for size in queries_per_draw))


def _query_micro(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(R, K) weighted means of the scored values (Q, K) under query weights (R, Q)."""
    scored = np.isfinite(values)
    total = weights @ np.where(scored, values, 0.0)
    weight = weights @ scored.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return total / weight


def _group_macro(values: np.ndarray, groups: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(R, K) means over groups of each group's weighted mean of its scored values (Q, K); a
    group whose queries all weigh 0 drops out. A query is scored in every column or in none
    (the evaluation's valid flag), so a group's weight is shared by the columns."""
    scored = np.isfinite(values)
    rows = scored.any(axis=1)
    if (scored[rows] != rows[rows, None]).any():
        raise IntervalError("group-macro needs each query scored in every column or in none")
    members = np.flatnonzero(rows)
    _, group_of = np.unique(groups[members], return_inverse=True)
    one_hot = np.zeros((len(members), int(group_of.max(initial=-1)) + 1))
    one_hot[np.arange(len(members)), group_of] = 1.0
    drawn = weights[:, members]
    group_weights = drawn @ one_hot  # (R, G)
    per_query = group_weights[:, group_of]
    shares = np.divide(drawn, per_query, out=np.zeros_like(drawn), where=per_query > 0)
    present = (group_weights > 0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (shares @ values[members]) / present[:, None]


def aggregate_replicates(
    values: np.ndarray, groups: np.ndarray | None, weights: np.ndarray
) -> np.ndarray:
    """(R, K) aggregation of one draw's per-query ``values`` (Q, K: a column per seed, effect
    or metric; NaN: not scored) under query ``weights`` (R, Q): group-macro over ``groups``
    (Q,), or query-micro when None. Work is whole-matrix, in blocks of replicates."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2 or weights.ndim != 2 or weights.shape[1] != values.shape[0]:
        raise IntervalError(
            f"per-query values {values.shape} and query weights {weights.shape} do not match"
        )
    if groups is not None and len(groups) != values.shape[0]:
        raise IntervalError(f"{len(groups)} group labels for {values.shape[0]} queries")
    out = np.empty((len(weights), values.shape[1]))
    for start in range(0, len(weights), CHUNK):
        block = weights[start : start + CHUNK]
        part = (
            _query_micro(values, block)
            if groups is None
            else _group_macro(values, np.asarray(groups), block)
        )
        out[start : start + len(block)] = part
    return out


def per_seed_replicates(
    draws: Sequence[tuple[np.ndarray, np.ndarray | None]], resamples: QueryResamples
) -> np.ndarray:
    """(R, S, K) replicates of every seed's value of K effects at once: per replicate and
    seed, the mean over the draws of the aggregation of that draw's reweighted queries.
    ``draws`` holds, per query/gallery draw, the per-query values (S, Q, K) and the group
    labels (Q,) (or None: query-micro)."""
    if len(draws) != len(resamples.weights):
        raise IntervalError(f"{len(draws)} draws of values for {len(resamples.weights)} resampled")
    per_draw = []
    for (values, groups), weights in zip(draws, resamples.weights, strict=True):
        values = np.asarray(values, dtype=np.float64)
        if values.ndim != 3:
            raise IntervalError(f"per-query values {values.shape} are not (seeds, Q, K)")
        seeds = values.shape[0]
        columns = values.transpose(1, 0, 2).reshape(values.shape[1], -1)  # (Q, S·K)
        per_draw.append(
            aggregate_replicates(columns, groups, weights).reshape(len(weights), seeds, -1)
        )
    shapes = {part.shape[1:] for part in per_draw}
    if len(shapes) != 1:
        raise IntervalError(f"the draws hold different seeds or effects: {sorted(shapes)}")
    return np.mean(per_draw, axis=0)


# ------------------------------------------------------------------------ the test images


@dataclass(frozen=True)
class QueryNoise:
    """What the test images add to the seed mean of K effects: ``shared`` (K,) the
    covariance of two seeds' values over query resamples (NaN with one seed), ``total`` (K,)
    the variance of the seed mean over query resamples."""

    shared: np.ndarray
    total: np.ndarray


def query_noise(replicates: np.ndarray) -> QueryNoise:
    """The test images' share of the seed mean's variance from (R, S, K) per-seed replicates
    (:func:`per_seed_replicates`); a replicate that leaves a seed unscored is skipped for
    that column. ``shared`` is clipped at 0 (a sample covariance can fall below it)."""
    values = np.asarray(replicates, dtype=np.float64)
    if values.ndim != 3:
        raise IntervalError(f"replicates {values.shape} are not (replicates, seeds, K)")
    seeds = values.shape[1]
    complete = np.isfinite(values).all(axis=1, keepdims=True)
    values = np.where(complete, values, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column no replicate scored: NaN
        total = np.nanvar(values.mean(axis=1), axis=0, ddof=1)
        if seeds < 2:
            return QueryNoise(shared=np.full(values.shape[2], np.nan), total=total)
        own = np.nanvar(values, axis=0, ddof=1).sum(axis=0)
        shared = (seeds**2 * total - own) / (seeds * (seeds - 1))
    return QueryNoise(shared=np.maximum(shared, 0.0), total=total)


# ------------------------------------------------------------------------------ intervals


@dataclass(frozen=True)
class Interval:
    """mean ± t(df) · se at a confidence level: the ends, the standard error and the degrees
    of freedom (inf: the normal quantile)."""

    low: float
    high: float
    se: float
    df: float


NO_INTERVAL = Interval(float("nan"), float("nan"), float("nan"), float("nan"))


def _check_level(level: float) -> None:
    if not 0 < level < 1:
        raise IntervalError(f"effects.intervals.level must lie in (0, 1), got {level!r}")


def t_intervals(
    values: np.ndarray, shared: float | np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(low, high, se, df) of each row of ``values`` (N, n ≥ 2): mean ± q · se with se² =
    s²/n + ``shared`` (the test images' shared variance, 0 for none) and q the calibrated
    quantile at the row's ratio shared / (s²/n), reported as its effective df."""
    _check_level(level)
    values = np.atleast_2d(np.asarray(values, dtype=np.float64))
    seeds = values.shape[1]
    if seeds < 2:
        raise IntervalError(f"an interval over seeds needs two seeds or more, got {seeds}")
    seeds_part = np.var(values, axis=1, ddof=1) / seeds
    shared = np.broadcast_to(np.maximum(shared, 0.0), seeds_part.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(seeds_part > 0, shared / seeds_part, np.where(shared > 0, np.inf, 0.0))
    quantile = calibrated_quantile(seeds, level)(ratio)
    se = np.sqrt(seeds_part + shared)
    means = values.mean(axis=1)
    return (
        means - quantile * se,
        means + quantile * se,
        se,
        effective_df(quantile, seeds, level),
    )


def t_interval(per_seed: Sequence[float], shared: float, level: float) -> Interval:
    """The interval of the mean of per-seed values whose test images add the variance
    ``shared`` to it (0: none, or no per-query rows; :func:`t_intervals`). NaN with fewer than
    two seeds."""
    _check_level(level)
    values = np.asarray(per_seed, dtype=np.float64)
    values = values[np.isfinite(values)]
    if len(values) < 2 or not np.isfinite(shared):
        return NO_INTERVAL
    low, high, se, df = (float(part[0]) for part in t_intervals(values[None, :], shared, level))
    return Interval(low, high, se, df)


def query_only_interval(observed: float, total: float, level: float) -> Interval:
    """The interval of a deterministic contrast (no training seed: PCA against the frozen
    features), whose only noise is the test images' (``total``): normal quantile."""
    _check_level(level)
    if not (np.isfinite(observed) and np.isfinite(total)):
        return NO_INTERVAL
    se = float(np.sqrt(total))
    half = float(stats.norm.ppf(0.5 + level / 2)) * se
    return Interval(float(observed) - half, float(observed) + half, se, float("inf"))


# ------------------------------------------------------------------------ sign-flip test


def smallest_p(n_seeds: int) -> float:
    """The smallest two-sided p-value the sign-flip test can give with ``n_seeds`` seeds: the
    observed signs and their mirror image are two of the 2**n assignments."""
    if n_seeds < 1:
        raise IntervalError("the sign-flip test needs at least one seed")
    return min(1.0, 2.0 ** (1 - n_seeds))


def _all_signs(n: int) -> np.ndarray:
    """(2**n, n) every assignment of ±1 to n values, from the bits of 0 … 2**n − 1."""
    bits = (np.arange(2**n, dtype=np.int64)[:, None] >> np.arange(n)) & 1
    return 1.0 - 2.0 * bits


def sign_flip_pvalues(
    values: np.ndarray,
    seed: int = 0,
    exact_up_to: int = EXACT_SIGN_FLIP_SEEDS,
    flips: int = RANDOM_SIGN_FLIPS,
) -> np.ndarray:
    """(N,) two-sided sign-flip p-values of the rows of ``values`` (N, n): the share of sign
    assignments whose |mean| reaches the row's observed |mean|. Exact (every assignment) up
    to ``exact_up_to`` values per row; beyond, ``flips`` random assignments B from ``seed``
    and (1 + hits) / (1 + B), which is never 0. NaN for a row with a missing value."""
    values = np.atleast_2d(np.asarray(values, dtype=np.float64))
    rows, n = values.shape
    out = np.full(rows, np.nan)
    finite = np.isfinite(values).all(axis=1) & (n > 0)
    if not finite.any():
        return out
    data = values[finite]
    observed = np.abs(data.sum(axis=1))
    tolerance = 1e-12 * np.maximum(1.0, np.abs(data).max(axis=1)) * n  # equal sums rounded apart
    if n <= exact_up_to:
        signs, extra = _all_signs(n), 0
    else:
        rng = np.random.default_rng(seed)
        signs, extra = rng.choice((1.0, -1.0), size=(flips, n)), 1
    hits = np.zeros(len(data))
    block = max(1, SIGN_FLIP_BLOCK // len(signs))
    for start in range(0, len(data), block):
        part = data[start : start + block]
        flipped = np.abs(signs @ part.T)  # (assignments, rows)
        reach = flipped >= (observed - tolerance)[start : start + block]
        hits[start : start + block] = reach.sum(axis=0)
    out[finite] = (hits + extra) / (len(signs) + extra)
    return out


def sign_flip_p(per_seed: Sequence[float], seed: int = 0) -> float:
    """Two-sided p-value of the sign-flip test of one effect's per-seed values
    (:func:`sign_flip_pvalues`). NaN when a value is not finite."""
    values = np.asarray(per_seed, dtype=np.float64)
    if not len(values):
        return float("nan")
    return float(sign_flip_pvalues(values[None, :], seed)[0])


# ------------------------------------------------------------------------- table columns

UNCERTAINTY_COLUMNS = ("se", "df", "ci_low", "ci_high", "p_seeds", "p_min")


def uncertainty(
    per_seed: Sequence[float], settings: IntervalSettings, shared: float | None = None
) -> dict[str, float]:
    """The columns beside an effect: ``se`` and ``df`` of its interval ``ci_low``, ``ci_high``
    (:func:`t_interval`; ``shared`` the test images' shared variance from per-query rows, or
    None: the seeds alone), ``p_seeds`` (the sign-flip test of the per-seed values) and
    ``p_min`` (its floor with this many seeds)."""
    values = np.asarray(per_seed, dtype=np.float64)
    values = values[~np.isnan(values)]
    if not len(values):
        return dict.fromkeys(UNCERTAINTY_COLUMNS, float("nan"))
    interval = t_interval(values, 0.0 if shared is None else shared, settings.level)
    return {
        "se": interval.se,
        "df": interval.df,
        "ci_low": interval.low,
        "ci_high": interval.high,
        "p_seeds": sign_flip_p(values, settings.seed),
        "p_min": smallest_p(len(values)),
    }


def describe_intervals(settings: IntervalSettings, per_query: bool) -> str:
    """One sentence for a table's notes: what its intervals account for."""
    level = f"{settings.level:.0%}"
    if per_query:
        return (
            f"intervals: {level} t intervals, mean ± t(df) · se with se² = SD²/n + the test "
            f"images' shared variance (from {settings.replicates} leaf-stratified query "
            f"resamples, seed {settings.seed}) and a t quantile calibrated on their ratio "
            "(its effective df in the tables); p (seeds): the sign-flip test over seeds"
        )
    return (
        f"intervals: {level} t intervals over the training seeds alone (n − 1 df; a per-seed "
        "table holds no per-query rows, so they hold their level for these test images, not "
        "for new ones); p (seeds): the sign-flip test over seeds"
    )
