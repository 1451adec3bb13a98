"""What a null result rules out: for an effect whose interval holds zero, the effects the study
still excludes, and, at a margin the config names, whether it shows the effect is negligible.

An interval [low, high] at level 1 − α that holds zero does not show the effect is zero. It
excludes every effect below low and above high (each at 1 − α/2 one-sided), so the largest
effect it cannot rule out is max(|low|, |high|). With ``effects.equivalence_margin`` = m the
summary adds the two one-sided tests (TOST) at α for every planned endpoint: the effect is shown
to lie within ±m when the interval at level 1 − 2α lies inside (−m, m), which can hold for an
effect that is clearly non-zero but negligible. That interval is formed as the tables form theirs
(:func:`hierbench.effects.intervals.t_intervals`'s calibrated quantile at the row's ratio of the
test images' shared variance to the seeds' part), from the summary row alone.
"""

from __future__ import annotations

import math

import pandas as pd

from hierbench.effects.intervals import summary_interval
from hierbench.effects.render import holds_zero, interval_text


def tost_interval(row: pd.Series, level: float) -> tuple[float, float]:
    """The row's interval at level 1 − 2(1 − ``level``), the two one-sided tests' interval,
    from its mean, SD over seeds, n and se (the shared variance is se² − SD²/n)."""
    seeds = int(row["n"])
    mean, sd, se = float(row["mean"]), float(row["sd"]), float(row["se"])
    if seeds < 2 or not all(map(math.isfinite, (mean, sd, se))):
        return float("nan"), float("nan")
    return summary_interval(mean, sd, seeds, se, 1 - 2 * (1 - level))


def equivalence_text(row: pd.Series, margin: float, level: float, digits: int = 4) -> str:
    """Whether the row shows the effect within ±``margin`` (TOST at 1 − ``level``), with the
    interval that decides it, for every endpoint: one whose interval excludes zero can still be
    shown smaller than the margin (real, and negligible); "" when the interval is undefined."""
    low, high = tost_interval(row, level)
    if not (math.isfinite(low) and math.isfinite(high)):
        return ""
    shown = interval_text(low, high, digits)
    tost_level = 1 - 2 * (1 - level)
    if -margin < low and high < margin:
        negligible = "" if holds_zero(row) else " (non-zero, and smaller than the margin)"
        return f"yes: its {tost_level:.0%} interval {shown} lies within ±{margin:g}{negligible}"
    return f"not shown: its {tost_level:.0%} interval {shown} reaches past ±{margin:g}"


def null_lines(planned: pd.DataFrame, level: float, margin: float | None) -> list[str]:
    """Sentences for the summary: how to read the null endpoints' "rules out" column, and at
    the config's margin how many of them the study shows to be negligible."""
    nulls = planned[[holds_zero(row) for _, row in planned.iterrows()]]
    if nulls.empty:
        return []
    lines = [
        f"{len(nulls)} planned endpoint(s) have an interval that holds zero. That does not show "
        f"the effect is zero: the column 'rules out' gives the effects the study still excludes "
        f"at {level:.0%} confidence, and any effect between those bounds remains possible."
    ]
    if margin is None:
        lines.append(
            "No equivalence margin is set (effects.equivalence_margin): set the smallest effect "
            "worth finding to test whether a null endpoint is negligible."
        )
        return lines
    shown = sum(
        equivalence_text(row, margin, level).startswith("yes") for _, row in nulls.iterrows()
    )
    lines.append(
        f"At the config's equivalence margin ±{margin:g} (effects.equivalence_margin), the two "
        f"one-sided tests at {1 - level:.0%} show {shown} of them to be smaller than the margin "
        "(column 'within the margin')."
    )
    return lines
