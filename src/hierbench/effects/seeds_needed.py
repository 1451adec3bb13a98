"""How many training seeds an effect needs (``hierbench seeds``): the power of the interval and
the test the tables actually report, and their rate at a true zero.

From one row of a run's effects summary: the effect's mean, the SD of its per-seed values
(σ_seed) and the standard error of its interval. The interval's variance is SD²/n plus the test
images' shared variance (:mod:`hierbench.effects.intervals`), so the shared part is exactly
V_shared = se² − SD²/n; more seeds shrink only the first part, as the test set stays the same.

The simulation draws, for n seeds, per-seed values N(μ, σ_seed²) plus one test-set offset
N(0, V_shared) shared by every seed of a simulated study, then forms what the tables print:
the t interval (mean ± t(df) · se, V_shared counted as known) and the sign-flip test over seeds.
It reports how often the interval excludes zero and how often the test's p falls at or below
1 − level, with μ the observed mean and with μ = 0. The first takes the observed effect as the
truth, which it is not known to be: read it as "if the effect is what this run measured". The
second is the false-exclusion rate, near 1 − level for the interval; the sign-flip test, exact
for these test images, also reacts to the shared offset, so with many seeds its rate at zero
rises above 1 − level where the test images' noise is large. With too few seeds the sign-flip
test cannot reach the level at all (its floor 2¹⁻ⁿ): its power is then zero whatever the
effect. Seeded: the same row gives the same table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from hierbench.effects.intervals import IntervalSettings, t_intervals
from hierbench.effects.sign_flip import sign_flip_pvalues, smallest_p

SEED_COUNTS = (3, 5, 10, 20)
STUDIES = 4_000  # simulated studies per seed count and truth
EXACT_UP_TO = 12  # seeds for which the simulated sign-flip test enumerates every assignment
RANDOM_FLIPS = 1_999  # beyond, random assignments per simulated study


@dataclass(frozen=True)
class Noise:
    """An effect's measured mean and the two sources of noise the simulation draws from."""

    mean: float
    seed_sd: float
    shared_sd: float


def measured_noise(row: pd.Series) -> Noise:
    """The effect's mean, σ_seed (its sample SD over seeds) and the test images' shared SD
    (√(se² − SD²/n), which the interval added to the seeds' part) from one summary row."""
    seed_sd = float(row["sd"]) if np.isfinite(row["sd"]) else 0.0
    seeds = max(int(row["n"]), 1)
    shared = max(0.0, float(row["se"]) ** 2 - seed_sd**2 / seeds)
    return Noise(float(row["mean"]), seed_sd, float(np.sqrt(shared)))


@dataclass(frozen=True)
class Rates:
    """What ``seeds`` seeds give over the simulated studies at one true effect."""

    interval_excludes_zero: float
    test_rejects: float
    median_width: float


def simulate(noise: Noise, seeds: int, truth: float, settings: IntervalSettings) -> Rates:
    """Simulated studies of ``seeds`` seeds whose true effect is ``truth``: how often the t
    interval excludes zero, how often the sign-flip p is at most 1 − level, and the
    interval's median width."""
    rng = np.random.default_rng(settings.seed)
    values = rng.normal(truth, noise.seed_sd, size=(STUDIES, seeds))
    values += rng.normal(0.0, noise.shared_sd, size=(STUDIES, 1))
    low, high, _, _ = t_intervals(values, noise.shared_sd**2, settings.level)
    p = sign_flip_pvalues(values, settings.seed, exact_up_to=EXACT_UP_TO, flips=RANDOM_FLIPS)
    return Rates(
        interval_excludes_zero=float(np.mean((low > 0) | (high < 0))),
        test_rejects=float(np.mean(p <= 1 - settings.level)),
        median_width=float(np.median(high - low)),
    )


def seeds_table(
    row: pd.Series, settings: IntervalSettings, counts: Sequence[int] = SEED_COUNTS
) -> pd.DataFrame:
    """For each number of seeds: the interval's and the sign-flip test's rate at the observed
    effect and at a true zero, the test's floor, and the interval's median width."""
    noise = measured_noise(row)
    rows = []
    for seeds in counts:
        observed = simulate(noise, seeds, noise.mean, settings)
        null = simulate(noise, seeds, 0.0, settings)
        rows.append(
            {
                "seeds": seeds,
                "interval excludes 0, at observed": observed.interval_excludes_zero,
                "interval excludes 0, at zero": null.interval_excludes_zero,
                "sign-flip p ≤ α, at observed": observed.test_rejects,
                "sign-flip p ≤ α, at zero": null.test_rejects,
                "sign-flip floor": smallest_p(seeds),
                "median width": observed.median_width,
            }
        )
    return pd.DataFrame(rows)


def describe(row: pd.Series, noise: Noise, level: float) -> list[str]:
    """What the simulation starts from, and how to read it."""
    alpha = 1 - level
    lines = [
        f"{row['dataset']} {row['effect']} on {row['metric']} at {row['level']}: mean "
        f"{noise.mean:+.4f}, SD over seeds {noise.seed_sd:.4f}, the test images' shared SD "
        f"{noise.shared_sd:.4f} (from its {level:.0%} interval over {int(row['n'])} seeds).",
        f"Each row simulates {STUDIES} studies. The columns at the observed effect take "
        f"{noise.mean:+.4f} as the truth, which it is not known to be; those at a true zero "
        f"give the false-exclusion rate (near {alpha:.0%} for the interval). α = {alpha:.2g}.",
    ]
    blind = [n for n in SEED_COUNTS if smallest_p(n) > alpha]
    if blind:
        lines.append(
            f"With {', '.join(map(str, blind))} seeds the sign-flip test's floor is above "
            f"{alpha:.2g}: it has zero power there, whatever the effect."
        )
    return lines


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
