"""How many training seeds an effect needs for its interval to exclude zero (``hierbench seeds``).

From one row of a run's effects summary: the effect's mean, the spread of its per-seed values
(the sample SD over seeds, σ_seed) and its interval. The interval's width holds both sources of
noise; what the seeds' spread does not explain is the test images' share,
σ_query² = max(0, σ_total² − σ_seed²/n), σ_total being the half-width over the normal quantile.
More seeds shrink only the first part: the test set stays the same.

The simulation draws, for n seeds, per-seed values N(mean, σ_seed²) and one test-set offset
N(0, σ_query²) per simulated study, then forms the interval as the two-stage bootstrap would:
the percentile interval of replicates that resample the n seeds and add the test images'
spread. The share of simulated studies whose interval excludes zero is the chance that n seeds
give a clear result, if the effect is what this run measured. Seeded: the same row gives the
same table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from hierbench.effects.intervals import IntervalSettings

SEED_COUNTS = (3, 5, 10, 20)
STUDIES = 1_000  # simulated studies per seed count
REPLICATES = 500  # bootstrap replicates per simulated study


@dataclass(frozen=True)
class Noise:
    """An effect's measured mean and the two standard deviations the simulation draws from."""

    mean: float
    seed_sd: float
    query_sd: float


def measured_noise(row: pd.Series, level: float) -> Noise:
    """The effect's mean, σ_seed (its sample SD over seeds) and σ_query (the interval's width
    beyond what the seeds explain) from one effects-summary row."""
    z = stats.norm.ppf(0.5 + level / 2)
    total = (float(row["ci_high"]) - float(row["ci_low"])) / (2 * z)
    seed_sd = float(row["sd"]) if np.isfinite(row["sd"]) else 0.0
    query_var = max(0.0, total**2 - seed_sd**2 / max(int(row["n"]), 1))
    return Noise(float(row["mean"]), seed_sd, float(np.sqrt(query_var)))


def simulate(noise: Noise, seeds: int, settings: IntervalSettings) -> tuple[float, float]:
    """The share of simulated studies with ``seeds`` seeds whose interval excludes zero, and
    their median interval width."""
    rng = np.random.default_rng(settings.seed)
    values = rng.normal(noise.mean, noise.seed_sd, size=(STUDIES, seeds))
    offsets = rng.normal(0.0, noise.query_sd, size=(STUDIES, 1))
    picks = rng.integers(0, seeds, size=(STUDIES, REPLICATES, seeds), dtype=np.int32)
    resampled = np.take_along_axis(values[:, None, :], picks, axis=2).mean(axis=2)
    spread = rng.normal(0.0, noise.query_sd, size=(STUDIES, REPLICATES))
    replicates = resampled + offsets + spread
    tail = (1 - settings.level) / 2
    low, high = np.quantile(replicates, [tail, 1 - tail], axis=1)
    clear = (low > 0) | (high < 0)
    return float(clear.mean()), float(np.median(high - low))


def seeds_table(
    row: pd.Series, settings: IntervalSettings, counts: Sequence[int] = SEED_COUNTS
) -> pd.DataFrame:
    """For each number of seeds: the chance its interval excludes zero and its median width."""
    noise = measured_noise(row, settings.level)
    rows = []
    for seeds in counts:
        share, width = simulate(noise, seeds, settings)
        rows.append({"seeds": seeds, "interval excludes zero": share, "median width": width})
    return pd.DataFrame(rows)


def describe(row: pd.Series, noise: Noise, level: float) -> str:
    """One line saying what the simulation starts from."""
    return (
        f"{row['dataset']} {row['effect']} on {row['metric']} at {row['level']}: mean "
        f"{noise.mean:+.4f}, SD over seeds {noise.seed_sd:.4f}, test images' SD "
        f"{noise.query_sd:.4f} (from its {level:.0%} interval over {int(row['n'])} seeds)"
    )


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
