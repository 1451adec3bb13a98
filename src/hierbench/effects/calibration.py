"""The interval's quantile, calibrated so that its coverage is the stated level whatever the
share of the test images' noise.

The interval is mean ± q · se, se² = s²/n + V (``hierbench.effects.intervals``): s² from n
seeds, V the test images' shared variance, counted as known. With V = 0 the exact quantile is
Student's t on n − 1 degrees of freedom; with the seeds' part negligible it is the normal one. In
between no fixed-degrees-of-freedom rule is exact: Welch–Satterthwaite's covers about 92 % with
three seeds when V is a tenth to a third of σ²/n, because a small s² by chance raises its degrees
of freedom exactly when se is already too small. So q is a function of the observed ratio
r̂ = V / (s²/n), chosen to solve the coverage equation: for normal seeds,

    P(|mean − μ| ≤ q(r̂) · se) = E_W[ 2Φ(q(r · (n−1)/W) · √((W/(n−1) + r) / (1 + r))) − 1 ]

with W ~ χ²(n−1) and r = V / (σ²/n) the true ratio, must equal the level for every r. q runs
from the t quantile (r̂ ≤ 10⁻⁴) down to the normal one (r̂ ≥ 10⁴), monotonically, piecewise
linear in log r̂ between 12 knots; the knots' values are fitted by least squares on 30 ratios
from 10⁻⁴ to 10⁴, the expectation over W taken at 1,000 quantile midpoints of χ²(n−1). Solved
once per (n, level) in a fraction of a second and cached. Measured (tests/effects/
test_calibration.py, on 400 ratios from 10⁻⁶ to 10⁶ with 20,000 nodes): within 0.005 of a 95 %
level from three seeds on, within 0.002 from four; two seeds (χ²(1)) only reach 0.946–0.966.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import optimize, stats

LOWEST, HIGHEST = np.log(1e-4), np.log(1e4)  # log r̂ where q is t, and where it is normal
KNOTS = 12
RATIOS = np.exp(np.linspace(LOWEST, HIGHEST, 30))
NODES = 1_000


def chi2_nodes(seeds: int, nodes: int = NODES) -> np.ndarray:
    """The quantile midpoints of χ²(seeds − 1): the expectation over W as an average."""
    return stats.chi2.ppf((np.arange(nodes) + 0.5) / nodes, seeds - 1)


class Quantile:
    """q(r̂) of one (seeds, level): the t quantile blended into the normal one by a share that
    falls monotonically from 1 to 0 over the knots."""

    def __init__(self, seeds: int, level: float, shares: np.ndarray) -> None:
        self.t = float(stats.t.ppf(0.5 + level / 2, seeds - 1))
        self.z = float(stats.norm.ppf(0.5 + level / 2))
        self.knots = np.linspace(LOWEST, HIGHEST, len(shares))
        self.shares = shares

    def __call__(self, ratio: np.ndarray) -> np.ndarray:
        """q at the observed ratios r̂ (0: the t quantile, inf: the normal one)."""
        with np.errstate(divide="ignore"):
            where = np.clip(np.log(np.asarray(ratio, dtype=np.float64)), LOWEST, HIGHEST)
        return self.z + (self.t - self.z) * np.interp(where, self.knots, self.shares)


def _shares(increments: np.ndarray) -> np.ndarray:
    """Shares falling from 1 to 0 by the positive ``exp(increments)`` steps."""
    steps = np.exp(increments)
    return 1.0 - np.concatenate([[0.0], np.cumsum(steps)]) / steps.sum()


def coverage(quantile: Quantile, seeds: int, ratios: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """The interval's coverage at each true ratio r (normal seeds, V known), from the
    coverage equation averaged over the χ² ``nodes``."""
    ratios = np.asarray(ratios, dtype=np.float64)[:, None]
    observed = ratios * (seeds - 1) / nodes[None, :]
    scale = np.sqrt((nodes[None, :] / (seeds - 1) + ratios) / (1 + ratios))
    return (2 * stats.norm.cdf(quantile(observed) * scale) - 1).mean(axis=1)


@functools.lru_cache(maxsize=64)
def calibrated_quantile(seeds: int, level: float) -> Quantile:
    """The calibrated q(r̂) for ``seeds`` seeds at confidence ``level`` (seeds ≥ 2)."""
    if seeds < 2:
        raise ValueError(f"a calibrated interval needs two seeds or more, got {seeds}")
    nodes = chi2_nodes(seeds)
    knots = np.linspace(LOWEST, HIGHEST, KNOTS)
    t = stats.t.ppf(0.5 + level / 2, seeds - 1)
    z = stats.norm.ppf(0.5 + level / 2)
    # start from the share of the rule df = (n − 1)(1 + r̂), close to the answer
    start = (stats.t.ppf(0.5 + level / 2, (seeds - 1) * (1 + np.exp(knots))) - z) / (t - z)
    start = np.clip(start, 0.0, 1.0)
    start[0], start[-1] = 1.0, 0.0
    increments = np.log(np.maximum(-np.diff(start), 1e-6))

    def misses(values: np.ndarray) -> np.ndarray:
        found = coverage(Quantile(seeds, level, _shares(values)), seeds, RATIOS, nodes)
        return found - level

    fitted = optimize.least_squares(misses, increments, method="trf", xtol=1e-10, ftol=1e-10)
    return Quantile(seeds, level, _shares(fitted.x))


def effective_df(quantile: np.ndarray, seeds: int, level: float) -> np.ndarray:
    """The degrees of freedom whose t quantile is ``quantile`` (n − 1 at the t quantile, inf at
    the normal one), so that an interval reads mean ± t(df) · se."""
    grid = (seeds - 1) * np.exp(np.linspace(0.0, np.log(1e7), 4000))
    values = stats.t.ppf(0.5 + level / 2, grid)  # falling
    found = np.interp(np.asarray(quantile), values[::-1], grid[::-1])
    return np.where(np.asarray(quantile) <= values[-1], np.inf, found)
