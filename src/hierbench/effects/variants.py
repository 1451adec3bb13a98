"""What the controls share: per-seed rows of labelled variants, mean ± SD over seeds as text."""

from __future__ import annotations

import pandas as pd

from hierbench.effects import mean_sd, per_seed_from_evaluations
from hierbench.effects.intervals import (
    DEFAULT_INTERVALS,
    IntervalSettings,
    query_only_interval,
    uncertainty,
)
from hierbench.effects.query_contrasts import ContrastNoise
from hierbench.protocol import FROZEN


def per_seed_by_variant(summaries: pd.DataFrame, aggregation: str) -> pd.DataFrame:
    """Per-seed rows of every variant (a curvature point, a semantic arm, a factorial arm): its
    Q/G draws averaged within each training seed, under ``aggregation``."""
    if "variant" not in summaries.columns:
        raise ValueError("control evaluation summaries lack the 'variant' column")
    parts = [
        per_seed_from_evaluations(part.drop(columns="variant"), aggregation).assign(variant=name)
        for name, part in summaries.groupby("variant", sort=True)
    ]
    return pd.concat(parts, ignore_index=True)


def seeds_mean_sd(values: pd.Series) -> str:
    """ "mean ± SD" over seeds, four decimals (the mean alone for one seed)."""
    return mean_sd(float(values.mean()), float(values.std(ddof=1)), 4)


def paired_summary(differences: pd.Series) -> dict[str, float | int]:
    """Mean, SD, positive count and count of paired differences (over seeds or splits)."""
    return {
        "mean": float(differences.mean()),
        "sd": float(differences.std(ddof=1)),
        "positive": int((differences > 0).sum()),
        "count": int(differences.notna().sum()),
    }


def seed_signs(differences: pd.Series) -> str:
    """The sign of each paired difference in seed order ("+ − +"; 0 for a tie)."""
    return " ".join("+" if d > 0 else ("−" if d < 0 else "0") for d in differences)


# The columns of a paired contrast, as :func:`paired_contrast` gives them.
PAIRED_COLUMNS: tuple[str, ...] = (
    "mean",
    "sd",
    "positive_seeds",
    "negative_seeds",
    "seeds",
    "signs",
    "se",
    "df",
    "ci_low",
    "ci_high",
    "p_seeds",
    "p_min",
)


def paired_contrast(
    differences: pd.Series,
    intervals: IntervalSettings = DEFAULT_INTERVALS,
    noise: ContrastNoise | None = None,
) -> dict[str, float | int | str]:
    """A contrast's per-seed differences summarised as the tables show them: mean, sample SD,
    positive and negative seed counts, seeds, the signs in seed order, and the t interval
    (``se``, ``df``, ``ci_low``, ``ci_high``: with the test images' shared variance from
    ``noise`` when the per-query rows are at hand, else over seeds) with the sign-flip test
    (``p_seeds``, ``p_min``)."""
    summary = paired_summary(differences)
    return {
        "mean": summary["mean"],
        "sd": summary["sd"],
        "positive_seeds": summary["positive"],
        "negative_seeds": int((differences < 0).sum()),
        "seeds": summary["count"],
        "signs": seed_signs(differences),
        **uncertainty(
            differences.to_numpy(dtype=float), intervals, None if noise is None else noise.shared
        ),
    }


def deterministic_contrast(
    difference: float, intervals: IntervalSettings, noise: ContrastNoise | None
) -> dict[str, float | int | str]:
    """The summary of a contrast with no training seed (PCA against the frozen features): its
    one value, an interval over the test images alone (none without per-query rows), and no
    seed counts or sign-flip test."""
    interval = query_only_interval(
        difference, float("nan") if noise is None else noise.total, intervals.level
    )
    nan = float("nan")
    return {
        "mean": difference,
        "sd": nan,
        "positive_seeds": 0,
        "negative_seeds": 0,
        "seeds": 0,
        "signs": "",
        "se": interval.se,
        "df": interval.df,
        "ci_low": interval.low,
        "ci_high": interval.high,
        "p_seeds": nan,
        "p_min": nan,
    }


def per_seed_of_arms(summaries: pd.DataFrame, aggregation: str) -> pd.DataFrame:
    """Per-seed mAP rows of arms outside the 2 × 2 factorial (baselines, companion cells) beside
    factorial arms, each labelled by a ``variant`` naming its arm. Every row is read in the
    frozen baseline's shape (no factorial geometry or loss) for the per-seed step."""
    labelled = summaries.assign(variant=summaries["arm"].astype(str))
    labelled[["arm", "geometry", "loss"]] = FROZEN
    per_seed = per_seed_by_variant(labelled, aggregation)
    chosen = per_seed[per_seed["metric"] == "map"]
    return chosen.drop(columns=["geometry", "loss"]).reset_index(drop=True)
