"""How many training seeds an effect needs (``hierbench seeds``): what more seeds would give the
interval the tables print, stated as a range that carries what a few seeds cannot tell.

From one row of a run's effects summary: the effect's mean, the SD of its n per-seed values
(s) and the standard error of its interval. The interval's variance is s²/n plus the test
images' shared variance V (:mod:`hierbench.effects.intervals`), so V = se² − s²/n exactly; it
comes from hundreds of queries and is counted as known, as the interval counts it. More seeds
shrink only the first part: the test set stays the same.

Power, the share of studies of m seeds whose interval excludes zero, depends on the true effect
μ and the true seed SD σ, and three seeds pin down neither: the effect's own interval is wide and
s can be a third or a ninth of σ by chance. Plugging the measured values in as the truth
("observed power") promised 20-seed power of 50 % or more to about a third of 3-seed studies
whose true effect was zero. So the command states power as a range: the smallest and the largest
power over every (μ, σ) the data allow jointly at the tables' level, μ in its interval at
1 − α/2 (the tables' calibrated interval) and σ in its χ² interval at 1 − α/2, so the pair
holds the truth at least at the level (Bonferroni). Power rises with |μ| and falls with σ, and
the range's ends are the extremes over a grid of that region, widened by the simulation's
Monte-Carlo error. When the effect's interval holds zero, the low end is the false-exclusion
rate: the data do not rule out an effect of zero, so nothing can be promised.

Each power is simulated: m per-seed values N(μ, σ²) plus one test-set offset N(0, V) shared by
every seed of a study (new test images of the same kind), the interval formed as the tables form
it (:func:`hierbench.effects.intervals.t_intervals`), the same normal draws for every grid point
(common random numbers, so the grid is smooth). ``benchmarks/seeds_advice.py`` checks, through
:func:`power_table`, both promises: at a true zero few studies are told "≥ 50 % with 20 seeds",
and at real effects the range holds the true power at its stated rate.

Beside it stands the sign-flip test the tables print, which is about these test images only
(:mod:`hierbench.effects.sign_flip`): at a true zero for new test images it rejects far more
often than α once the seeds can reach the level, because the shared offset is an effect on these
images that every seed sees. Its floor 2¹⁻ⁿ says when it cannot reject at all. Seeded: the same
row gives the same tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from hierbench.effects.intervals import (
    IntervalSettings,
    shared_variance,
    summary_interval,
    t_intervals,
)
from hierbench.effects.sign_flip import sign_flip_pvalues, smallest_p

SEED_COUNTS = (3, 5, 10, 20)
STUDIES = 4_000  # simulated studies per seed count and grid point
GRID = 5  # grid points per side of the plausible region (|μ| and σ)
MC_SPREAD = 2.0  # the range's ends widened by this many Monte-Carlo SEs of a simulated rate
EXACT_UP_TO = 12  # seeds for which the simulated sign-flip test enumerates every assignment
RANDOM_FLIPS = 1_999  # beyond, random assignments per simulated study
PROMISE = 0.5  # the power the benchmark asks how often a null study is promised
DETECT_POWER = 0.8  # the power of the smallest detectable effect the command leads with
EFFECT_GRID = 81  # effects per search for the smallest detectable one


@dataclass(frozen=True)
class Noise:
    """An effect's measured mean, its seed SD s, its seeds n and the test images' shared SD."""

    mean: float
    seed_sd: float
    shared_sd: float
    seeds: int = 3


def measured_noise(row: pd.Series) -> Noise:
    """The effect's mean, s (its sample SD over seeds), n and the test images' shared SD
    (√(se² − s²/n), which the interval added to the seeds' part) from one summary row."""
    seed_sd = float(row["sd"]) if np.isfinite(row["sd"]) else 0.0
    seeds = max(int(row["n"]), 1)
    shared = shared_variance(row["se"], seed_sd, seeds)
    return Noise(float(row["mean"]), seed_sd, float(np.sqrt(shared)), seeds)


@dataclass(frozen=True)
class Plausible:
    """The true effects |μ| and seed SDs σ the data allow jointly at ``level``."""

    effect_low: float
    effect_high: float
    seed_sd_low: float
    seed_sd_high: float
    level: float


def plausible_region(noise: Noise, level: float) -> Plausible:
    """|μ| over the tables' calibrated interval and σ over its χ² interval, each at
    1 − (1 − level)/2, so that together they hold the truth at least at ``level``."""
    if noise.seeds < 2:
        raise ValueError(f"what more seeds would give needs two seeds or more, got {noise.seeds}")
    each = 1 - (1 - level) / 2
    se = float(np.sqrt(noise.seed_sd**2 / noise.seeds + noise.shared_sd**2))
    low, high = summary_interval(noise.mean, noise.seed_sd, noise.seeds, se, each)
    nearest = 0.0 if low <= 0 <= high else min(abs(low), abs(high))
    df = noise.seeds - 1
    tail = (1 - each) / 2
    scale = noise.seed_sd * np.sqrt(df)
    return Plausible(
        effect_low=nearest,
        effect_high=max(abs(low), abs(high)),
        seed_sd_low=float(scale / np.sqrt(stats.chi2.ppf(1 - tail, df))),
        seed_sd_high=float(scale / np.sqrt(stats.chi2.ppf(tail, df))),
        level=level,
    )


def exclusion_rates(
    effects: np.ndarray,
    seed_sds: np.ndarray,
    shared_sd: float,
    seeds: int,
    settings: IntervalSettings,
) -> tuple[np.ndarray, np.ndarray]:
    """For each (effect, seed SD) pair: the share of simulated ``seeds``-seed studies whose
    interval excludes zero, and the interval's median width (the same draws for every pair)."""
    effects = np.asarray(effects, dtype=np.float64)
    seed_sds = np.asarray(seed_sds, dtype=np.float64)
    rng = np.random.default_rng(settings.seed)
    seed_draws = rng.standard_normal((STUDIES, seeds))
    offsets = shared_sd * rng.standard_normal((STUDIES, 1))
    values = effects[:, None, None] + seed_sds[:, None, None] * seed_draws + offsets
    flat = values.reshape(-1, seeds)
    low, high, _, _ = t_intervals(flat, shared_sd**2, settings.level)
    excluded = ((low > 0) | (high < 0)).reshape(len(effects), STUDIES)
    widths = (high - low).reshape(len(effects), STUDIES)
    return excluded.mean(axis=1), np.median(widths, axis=1)


def _grid(low: float, high: float, geometric: bool) -> np.ndarray:
    """GRID points from ``low`` to ``high`` (geometric when both are positive and asked)."""
    if geometric and low > 0:
        return np.geomspace(low, high, GRID)
    return np.linspace(low, high, GRID)


@dataclass(frozen=True)
class PowerRange:
    """What ``seeds`` seeds give over the plausible region: power's ends and width's ends."""

    seeds: int
    power_low: float
    power_high: float
    width_low: float
    width_high: float
    at_zero: float


def power_range(
    region: Plausible, shared_sd: float, seeds: int, settings: IntervalSettings
) -> PowerRange:
    """The smallest and largest power and median width of ``seeds``-seed studies over the
    region's grid, the power's ends widened by MC_SPREAD Monte-Carlo SEs; and the rate at a
    true zero (σ at the region's middle), which the calibration keeps near 1 − level."""
    effect, sd = np.meshgrid(
        _grid(region.effect_low, region.effect_high, geometric=False),
        _grid(region.seed_sd_low, region.seed_sd_high, geometric=True),
    )
    middle_sd = float(np.sqrt(region.seed_sd_low * region.seed_sd_high))
    effects = np.append(effect.ravel(), 0.0)
    sds = np.append(sd.ravel(), middle_sd)
    rates, widths = exclusion_rates(effects, sds, shared_sd, seeds, settings)
    grid_rates, grid_widths = rates[:-1], widths[:-1]
    low, high = float(grid_rates.min()), float(grid_rates.max())
    return PowerRange(
        seeds=seeds,
        power_low=max(0.0, low - _mc_error(low)),
        power_high=min(1.0, high + _mc_error(high)),
        width_low=float(grid_widths.min()),
        width_high=float(grid_widths.max()),
        at_zero=float(rates[-1]),
    )


def _mc_error(rate: float) -> float:
    """MC_SPREAD Monte-Carlo SEs of a rate simulated over STUDIES studies."""
    return MC_SPREAD * float(np.sqrt(max(rate * (1 - rate), 1 / STUDIES) / STUDIES))


def power_table(
    noise: Noise, settings: IntervalSettings, counts: Sequence[int] = SEED_COUNTS
) -> pd.DataFrame:
    """For each number of seeds: the interval's power as a range over what the data allow
    (``power low``, ``power high``), its rate at a true zero and its median width's range."""
    region = plausible_region(noise, settings.level)
    rows = [power_range(region, noise.shared_sd, seeds, settings) for seeds in counts]
    return pd.DataFrame(
        {
            "seeds": [r.seeds for r in rows],
            "power low": [r.power_low for r in rows],
            "power high": [r.power_high for r in rows],
            "at a true zero": [r.at_zero for r in rows],
            "width low": [r.width_low for r in rows],
            "width high": [r.width_high for r in rows],
        }
    )


def smallest_detectable(
    seed_sd: float, shared_sd: float, seeds: int, settings: IntervalSettings
) -> float:
    """The smallest true effect that ``seeds``-seed studies detect (interval excludes zero) with
    DETECT_POWER, at seed SD ``seed_sd`` and the test images' shared SD: simulated over a grid of
    effects with common random numbers, the crossing interpolated between grid points."""
    normal = stats.norm.ppf(0.5 + settings.level / 2) + stats.norm.ppf(DETECT_POWER)
    guess = float(normal * np.sqrt(seed_sd**2 / seeds + shared_sd**2))
    effects = np.linspace(0.0, 3 * guess, EFFECT_GRID)
    rates, _ = exclusion_rates(effects, np.full(EFFECT_GRID, seed_sd), shared_sd, seeds, settings)
    rates = np.maximum.accumulate(rates)  # power rises with the effect; smooth Monte-Carlo dips
    if rates[-1] < DETECT_POWER:
        return float("inf")
    return float(np.interp(DETECT_POWER, rates, effects))


def detectable_floor(shared_sd: float, level: float) -> float:
    """The smallest effect detected with DETECT_POWER by any number of seeds: with infinitely
    many the seed mean's error is the test images' alone, N(0, V), so it is
    (z(1 − α/2) + z(power)) · √V."""
    return float((stats.norm.ppf(0.5 + level / 2) + stats.norm.ppf(DETECT_POWER)) * shared_sd)


def detectable_table(
    noise: Noise, settings: IntervalSettings, counts: Sequence[int] = SEED_COUNTS
) -> pd.DataFrame:
    """For each number of seeds: the smallest effect detected with DETECT_POWER, as the range
    over the seed SDs the data allow (its χ² interval at 1 − (1 − level)/2)."""
    region = plausible_region(noise, settings.level)
    return pd.DataFrame(
        {
            "seeds": list(counts),
            "detectable low": [
                smallest_detectable(region.seed_sd_low, noise.shared_sd, n, settings)
                for n in counts
            ],
            "detectable high": [
                smallest_detectable(region.seed_sd_high, noise.shared_sd, n, settings)
                for n in counts
            ],
        }
    )


def sign_flip_at_zero(noise: Noise, seeds: int, settings: IntervalSettings) -> float:
    """How often the sign-flip test's p is at most 1 − level in ``seeds``-seed studies whose
    effect on new test images is zero (σ and the shared SD as measured): its rate beyond α is
    the shared offset, an effect on these test images, which is what the test is about."""
    rng = np.random.default_rng(settings.seed)
    values = rng.normal(0.0, noise.seed_sd, size=(STUDIES, seeds))
    values += rng.normal(0.0, noise.shared_sd, size=(STUDIES, 1))
    p = sign_flip_pvalues(values, settings.seed, exact_up_to=EXACT_UP_TO, flips=RANDOM_FLIPS)
    return float(np.mean(p <= 1 - settings.level))


def seeds_table(
    row: pd.Series, settings: IntervalSettings, counts: Sequence[int] = SEED_COUNTS
) -> pd.DataFrame:
    """``hierbench seeds``' table: the smallest detectable effect's range
    (:func:`detectable_table`), then :func:`power_table`, the sign-flip test's floor and its
    rate at a true zero for new test images."""
    noise = measured_noise(row)
    table = detectable_table(noise, settings, counts).merge(
        power_table(noise, settings, counts), on="seeds"
    )
    table["sign-flip floor"] = [smallest_p(seeds) for seeds in counts]
    table["sign-flip at a true zero"] = [sign_flip_at_zero(noise, s, settings) for s in counts]
    return table


def describe(row: pd.Series, noise: Noise, level: float) -> list[str]:
    """What the simulation starts from, what the data allow, and how to read the table."""
    alpha = 1 - level
    region = plausible_region(noise, level)
    floor = detectable_floor(noise.shared_sd, level)
    lines = [
        f"{row['dataset']} {row['effect']} on {row['metric']} at {row['level']}: mean "
        f"{noise.mean:+.4f}, SD over seeds {noise.seed_sd:.4f}, the test images' shared SD "
        f"{noise.shared_sd:.4f} (from its {level:.0%} interval over {noise.seeds} seeds).",
        f"Smallest effect detected with {DETECT_POWER:.0%} power (the interval excludes zero): "
        f"the first columns give it for each number of seeds, as the range over the seed SDs "
        f"these seeds allow. No number of seeds detects less than {floor:.4f}: the test "
        "images' shared variance, which more seeds do not shrink, sets that floor.",
        *unknown_images_warning(noise),
        f"What {noise.seeds} seeds allow, jointly at {level:.0%}: a true effect of size "
        f"{region.effect_low:.4f} to {region.effect_high:.4f} and a seed SD of "
        f"{region.seed_sd_low:.4f} to {region.seed_sd_high:.4f}. Power is given as the range "
        "over all of them, not at the measured values (which are not known to be the truth); "
        f"each row simulates {STUDIES} studies per point of a {GRID}×{GRID} grid.",
    ]
    if region.effect_low == 0:
        lines.append(
            "The effect's interval holds zero, so the low end is the false-exclusion rate: "
            "these data cannot promise that any number of seeds will settle it."
        )
    lines.append(
        f"At a true zero the interval excludes it near {alpha:.0%} of the time. The sign-flip "
        "p the tables print is about these test images only: a true zero for new images is "
        "not one for these, whose shared offset every seed sees, so with enough seeds it "
        f"rejects far more often than {alpha:.0%} (last column); read it for these test images."
    )
    blind = [n for n in SEED_COUNTS if smallest_p(n) > alpha]
    if blind:
        lines.append(
            f"With {', '.join(map(str, blind))} seeds the sign-flip test's floor is above "
            f"{alpha:.2g}: it cannot reject at that level, whatever the effect."
        )
    return lines


def unknown_images_warning(noise: Noise) -> list[str]:
    """A warning when the row's se holds no test-image part: the table was made without
    per-query rows (the variance is unknown, not zero) or it was estimated as zero."""
    if noise.shared_sd > 0:
        return []
    return [
        "Warning: this row's se holds no test-image part. Either its table was made without "
        "per-query rows (then the test images' variance is unknown, not zero, and every figure "
        "below holds for these test images only, and the floor of 0 is not measured) or it was "
        "estimated as zero. A run's own tables/effects_summary.parquet carries it."
    ]


def choose_row(
    summary: pd.DataFrame, dataset: str, effect: str, metric: str, level: str
) -> pd.Series:
    """The effects-summary row of one effect; none is an error listing what the table has."""
    chosen = summary[
        (summary["dataset"] == dataset)
        & (summary["effect"] == effect)
        & (summary["metric"] == metric)
        & (summary["level"] == level)
    ]
    if len(chosen) != 1:
        for column, value in (
            ("dataset", dataset),
            ("effect", effect),
            ("metric", metric),
            ("level", level),
        ):
            if value not in set(summary[column]):
                raise ValueError(
                    f"the effects table has no {column} {value!r}; it has "
                    f"{sorted(set(summary[column].astype(str)))}"
                )
        raise ValueError(f"the effects table has no row {dataset} {effect} {metric} {level}")
    return chosen.iloc[0]
