"""The sign-flip test over seeds beside every interval.

An exact test over seeds of the mean of the per-seed
values, whose smallest attainable p-value (:func:`smallest_p`) says when the number of seeds,
not the data, limits the claim (three seeds can never go below 0.25 two-sided).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

EXACT_SIGN_FLIP_SEEDS = 20  # 2**20 assignments; more seeds draw assignments at random
RANDOM_SIGN_FLIPS = 2**20 - 1  # with the observed one, 2**20 assignments
SIGN_FLIP_BLOCK = 2**22  # sign-assignment x value cells per block of the exact test


def smallest_p(n_seeds: int) -> float:
    """The smallest two-sided p-value the sign-flip test can give with ``n_seeds`` seeds: the
    observed signs and their mirror image are two of the 2**n assignments."""
    if n_seeds < 1:
        raise ValueError("the sign-flip test needs at least one seed")
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
