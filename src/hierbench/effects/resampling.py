"""Resampling the test images behind an effect: what the test images add to its seed mean.

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
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hierbench.effects.intervals import IntervalError

CHUNK = 2048  # replicates per block: bounds memory at CHUNK x queries, results unchanged


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
