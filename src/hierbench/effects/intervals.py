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

The test images' shared variance comes from resampling the query images as the draws were made
(:mod:`hierbench.effects.resampling`); beside each interval stands the sign-flip test over seeds
(:mod:`hierbench.effects.sign_flip`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from hierbench.effects.calibration import calibrated_quantile, effective_df
from hierbench.effects.sign_flip import sign_flip_p, smallest_p

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


def shared_variance(se: float, sd: float, seeds: int) -> float:
    """The test images' shared variance in a summary row's interval: se² − SD²/n, never below
    zero (what :func:`t_intervals` added to the seeds' part)."""
    return max(0.0, float(se) ** 2 - float(sd) ** 2 / int(seeds))


def summary_interval(
    mean: float, sd: float, seeds: int, se: float, level: float
) -> tuple[float, float]:
    """The interval of an effects-summary row (its mean, SD over seeds, n and se) at another
    ``level``, formed as :func:`t_intervals` forms it: the shared variance is se² − SD²/n and
    the calibrated quantile is taken at its ratio to SD²/n."""
    _check_level(level)
    seeds_part = sd**2 / seeds
    shared = shared_variance(se, sd, seeds)
    ratio = shared / seeds_part if seeds_part > 0 else np.inf
    half = float(calibrated_quantile(seeds, level)(np.array([ratio]))[0]) * se
    return mean - half, mean + half


def query_only_interval(observed: float, total: float, level: float) -> Interval:
    """The interval of a deterministic contrast (no training seed: PCA against the frozen
    features), whose only noise is the test images' (``total``): normal quantile."""
    _check_level(level)
    if not (np.isfinite(observed) and np.isfinite(total)):
        return NO_INTERVAL
    se = float(np.sqrt(total))
    half = float(stats.norm.ppf(0.5 + level / 2)) * se
    return Interval(float(observed) - half, float(observed) + half, se, float("inf"))


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


# The sign-flip p's header wherever it is printed: it is about these test images only (the
# seeds' effect on them); new images' noise is not in it, as it is in the interval.
P_SEEDS = "p (seeds, these test images)"
P_SEEDS_NOTE = (
    f"{P_SEEDS}: the sign-flip test over seeds, whether the seeds' effect on "
    "these test images is zero; the test images' own noise is not in it, so it is no evidence "
    "about new images"
)


def describe_intervals(settings: IntervalSettings, per_query: bool) -> str:
    """One sentence for a table's notes: what its intervals account for."""
    level = f"{settings.level:.0%}"
    if per_query:
        return (
            f"intervals: {level} t intervals, mean ± t(df) · se with se² = SD²/n + the test "
            f"images' shared variance (from {settings.replicates} leaf-stratified query "
            f"resamples, seed {settings.seed}) and a t quantile calibrated on their ratio "
            f"(its effective df in the tables), about new test images like these; {P_SEEDS_NOTE}"
        )
    return (
        f"intervals: {level} t intervals over the training seeds alone (n − 1 df; a per-seed "
        "table holds no per-query rows, so they hold their level for these test images, not "
        f"for new ones); {P_SEEDS_NOTE}"
    )
