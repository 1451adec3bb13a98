"""Seeds that lie far from the others: the generalized ESD test (Rosner, 1983) on one effect's
per-seed values, Grubbs' test repeated so that a second failed seed cannot mask the first.

For n normal values its level is about α whatever n; below three values nothing can be told
(the critical value is infinite), and with three the test fires only when two values nearly
agree and the third lies apart. :mod:`hierbench.effects.noise_regimes` names the regime from it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats


def grubbs_critical(seeds: int, alpha: float) -> float:
    """The critical value of Grubbs' two-sided test for one outlier among ``seeds`` normal
    values at level ``alpha``: max |x − mean| / SD beyond it is rare (``alpha``) for normal
    seeds; infinite below three seeds, where no seed can be told from the others."""
    if seeds < 3:
        return math.inf
    t = float(stats.t.ppf(1 - alpha / (2 * seeds), seeds - 2))
    return (seeds - 1) / math.sqrt(seeds) * math.sqrt(t * t / (seeds - 2 + t * t))


def most_outliers(seeds: int) -> int:
    """How many seeds the outlier test may set aside: a third of them, at least one, and never
    so many that fewer than three remain to judge the last."""
    return max(0, min(seeds - 2, max(1, seeds // 3)))


@dataclass(frozen=True)
class SeedOutliers:
    """The generalized ESD test's verdict on one effect's seeds: the outlying seeds' positions
    (farthest first), and the statistic and critical value of the last step that rejected."""

    positions: tuple[int, ...]
    statistic: float
    critical: float


def esd_outliers(values: np.ndarray, alpha: float) -> SeedOutliers:
    """The outlying values among ``values`` by the generalized ESD test (Rosner, 1983): set
    aside the value farthest from the mean, in SDs, up to :func:`most_outliers` times; the
    outliers are those set aside up to the last step whose statistic passes Grubbs' critical
    value for the values left (:func:`grubbs_critical`). One step is Grubbs' test; more steps
    keep a second failed seed from masking the first. Its level is about ``alpha`` for normal
    values."""
    remaining = list(range(len(values)))
    removed: list[int] = []
    found = SeedOutliers((), math.nan, math.nan)
    for _ in range(most_outliers(len(values))):
        current = values[remaining]
        spread = float(np.std(current, ddof=1))
        if not spread > 0:
            break
        distance = np.abs(current - current.mean())
        farthest = int(np.argmax(distance))
        statistic = float(distance[farthest]) / spread
        critical = grubbs_critical(len(current), alpha)
        removed.append(remaining.pop(farthest))
        if statistic > critical:
            found = SeedOutliers(tuple(removed), statistic, critical)
    return found
