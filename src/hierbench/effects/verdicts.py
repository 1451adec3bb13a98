"""What an effects summary may claim, in words: the planned endpoints first, the rest labelled
exploratory with the number of intervals examined.

The planned endpoints are the paper's five simple effects on mean hierarchy mAP, per dataset.
Each is read as the paper reads it (estimate, the seeds that agree in sign) and as we add to it
(the t interval, the sign-flip p-value and its floor). When the floor with this many seeds is
above the test level, the sign-flip test cannot reject at that level whatever the data, and the
text says so. Every other interval on mAP (other levels, the companion contrasts) is
exploratory: it is listed only with how many intervals were examined and how many would exclude
zero by chance alone. Nothing here calls an effect significant.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from hierbench.effects.formulas import effect_definition
from hierbench.effects.intervals import P_SEEDS
from hierbench.effects.null_results import equivalence_text
from hierbench.effects.render import (
    RULES_OUT,
    format_number,
    interval_text,
    p_text,
    ruled_out_text,
)
from hierbench.protocol import (
    COMPANION_EFFECTS,
    EFFECT_ORDER,
    FACTORIAL_EFFECTS,
    LEVEL_ORDER,
    MEAN_HIERARCHY,
)

ENDPOINT_METRIC = "map"
UPPER_LEVELS = ("middle", "high")  # the levels mean hierarchy mAP averages


def planned_endpoints(summary: pd.DataFrame) -> pd.DataFrame:
    """The rows of the planned endpoints: each dataset's five factorial effects on mean
    hierarchy mAP, in the effects' order."""
    chosen = summary[
        (summary["metric"] == ENDPOINT_METRIC)
        & (summary["level"] == MEAN_HIERARCHY)
        & summary["effect"].isin(FACTORIAL_EFFECTS)
    ]
    order = {effect: index for index, effect in enumerate(EFFECT_ORDER)}
    return chosen.sort_values(
        ["dataset", "effect"], key=lambda c: c.map(order) if c.name == "effect" else c
    ).reset_index(drop=True)


def exploratory(summary: pd.DataFrame) -> pd.DataFrame:
    """Every other effect on mAP with an interval: other levels, and the companion contrasts."""
    planned = planned_endpoints(summary)
    keys = ["dataset", "level", "effect"]
    on_map = summary[(summary["metric"] == ENDPOINT_METRIC) & summary["ci_low"].notna()]
    marked = on_map.merge(planned[keys].assign(planned=True), on=keys, how="left")
    return marked[marked["planned"].isna()].drop(columns="planned").reset_index(drop=True)


def agreeing_seeds(row: pd.Series) -> str:
    """How many seeds agree in sign with the mean ("3/3"; the paper counts them in words, as in
    "positive for all three training seeds")."""
    if not math.isfinite(float(row["mean"])):
        return ""
    agree = row["positive_seeds"] if row["mean"] > 0 else row["negative_seeds"]
    agree = agree if row["mean"] != 0 else 0
    return f"{int(agree)}/{int(row['n'])}"


MARGIN_COLUMN = "within the margin"


def endpoints_table(
    summary: pd.DataFrame, level: float, margin: float | None = None
) -> pd.DataFrame:
    """The planned endpoints as summary.md and the README show them: with what a null one rules
    out and, at an equivalence ``margin``, whether it is shown to lie within it."""
    rows = planned_endpoints(summary)
    table = pd.DataFrame(
        {
            "dataset": rows["dataset"].astype(str),
            "effect": rows["effect"].astype(str),
            "definition": rows["effect"].map(effect_definition),
            "estimate": [format_number(v, 4, signed=True) for v in rows["mean"]],
            "SD over seeds": [format_number(v, 4) for v in rows["sd"]],
            f"{level:.0%} interval": [
                interval_text(lo, hi, 4)
                for lo, hi in zip(rows["ci_low"], rows["ci_high"], strict=True)
            ],
            P_SEEDS: [
                p_text(p, floor) for p, floor in zip(rows["p_seeds"], rows["p_min"], strict=True)
            ],
            "seeds agreeing in sign": [agreeing_seeds(row) for _, row in rows.iterrows()],
            RULES_OUT: [ruled_out_text(row) for _, row in rows.iterrows()],
        }
    )
    if margin is not None:
        table[MARGIN_COLUMN] = [equivalence_text(r, margin, level) for _, r in rows.iterrows()]
    return table


def undefined_levels(arms: pd.DataFrame, labels: Mapping[str, str]) -> list[str]:
    """Why the planned endpoints are NaN where they are: a level of mean hierarchy mAP (middle,
    high) without a single scored query in any arm's test draws, in the dataset's level names."""
    scores = arms[(arms["metric"] == ENDPOINT_METRIC) & arms["level"].isin(UPPER_LEVELS)]
    empty = [
        level
        for level in UPPER_LEVELS
        if len(scores[scores["level"] == level])
        and scores.loc[scores["level"] == level, "mean"].isna().all()
    ]
    return [
        f"The {labels[level]} ({level}) level has no valid query in any test draw (no query's "
        f"gallery holds a strict positive at that level), so mean hierarchy mAP, the mean of the "
        f"{labels['middle']} and {labels['high']} levels, is undefined and every planned endpoint "
        "is NaN (for a collection of your own, `hierbench check-dataset` names the groups that "
        "cause it)."
        for level in empty
    ]


def regime_lines(regimes: pd.DataFrame) -> list[str]:
    """Where the planned endpoints' data leave the interval's model
    (:func:`hierbench.effects.noise_regimes.noise_regimes`), one line each, or none."""
    if regimes.empty:
        return []
    lines = [
        "Where the data leave the interval's model (named by the data; the coverage benchmark "
        "measures how far such intervals miss, and how often each name appears under normal "
        "noise too, so a name is a reason to look at those seeds or images, not proof that "
        "the interval is wrong):",
        "",
    ]
    lines += [f"- {row.dataset} {row.effect}: {row.detail}." for row in regimes.itertuples()]
    return [*lines, ""]


def design_limits(summary: pd.DataFrame, level: float) -> list[str]:
    """Sentences on what the design can show: the sign-flip floor against the test level, and
    what the t interval assumes."""
    rows = planned_endpoints(summary)
    alpha = 1 - level
    lines = []
    for seeds, floor in sorted(set(zip(rows["n"].astype(int), rows["p_min"], strict=True))):
        if not math.isfinite(float(floor)):
            continue
        if floor > alpha:
            lines.append(
                f"With {seeds} training seeds the sign-flip test's smallest p-value is "
                f"{floor:.3g}, above the {alpha:.0%} level: this design cannot reject a zero "
                "effect at that level by that test, whatever the data."
            )
        else:
            lines.append(
                f"With {seeds} training seeds the sign-flip test can reach p = {floor:.3g}, "
                f"below the {alpha:.0%} level."
            )
    lines.append(
        f"The {level:.0%} t intervals assume the per-seed effects are roughly normal; their "
        "coverage at 3, 5 and 10 seeds is measured by hierbench's coverage benchmark "
        "(benchmarks/coverage.py in its source repository; the figures are on the Benchmarks "
        "page of its user guide). They are read one endpoint at a time, five per dataset."
    )
    return lines


def exploratory_lines(summary: pd.DataFrame, level: float, labels: dict[str, str]) -> list[str]:
    """The exploratory intervals: how many were examined and excluded zero, against the number
    chance alone would give, then those that did, largest first."""
    rows = exploratory(summary)
    if rows.empty:
        return ["No further intervals on mAP."]
    clear = rows[(rows["ci_low"] > 0) | (rows["ci_high"] < 0)]
    expected = (1 - level) * len(rows)
    lines = [
        f"{len(rows)} further intervals on mAP were examined ({_examined(rows, labels)}); "
        f"{len(clear)} exclude zero, where about {expected:.1f} would by chance alone if no "
        "effect were real. They are not adjusted for multiplicity: leads to follow up, not "
        "findings.",
        "",
    ]
    clear = clear.reindex(clear["mean"].abs().sort_values(ascending=False, kind="stable").index)
    lines += [
        f"- {row.dataset} {row.effect} ({effect_definition(row.effect)}), "
        f"{labels.get(row.level, row.level).replace('_', ' ')}: "
        f"{format_number(row.mean, 4, signed=True)} "
        f"{interval_text(row.ci_low, row.ci_high, 4)}"
        for row in clear.itertuples()
    ]
    return lines


def caption(summary: pd.DataFrame, level: float) -> str:
    """The effects figure's caption, effect by effect (reStructuredText, for the report): the
    planned endpoints with estimate, interval, sign-flip p and agreeing seeds, the design's
    limits, then the companion contrasts as exploratory. ``summary``: one dataset's effects on
    mean hierarchy mAP."""
    planned = planned_endpoints(summary)
    lines = [
        "Planned endpoints (mean hierarchy mAP): estimate, interval (about new test images "
        "like these), sign-flip p over seeds beside its floor (about these test images only), "
        "and the seeds that agree in sign.",
        "",
        *(_caption_line(row) for _, row in planned.iterrows()),
        "",
        *design_limits(summary, level),
    ]
    others = exploratory(summary)
    if not others.empty:
        lines += [
            "",
            f"Exploratory, not planned ({len(others)} intervals; about "
            f"{(1 - level) * len(others):.2f} would exclude zero by chance alone):",
            "",
            *(_caption_line(row) for _, row in others.iterrows()),
        ]
    return "\n".join(lines) + "\n"


def _caption_line(row: pd.Series) -> str:
    """One effect in the caption."""
    if not math.isfinite(float(row["ci_low"])):
        return f"- ``{row['effect']}``: {format_number(row['mean'], 4, signed=True)}; no interval."
    interval = interval_text(row["ci_low"], row["ci_high"], 4)
    return (
        f"- ``{row['effect']}``: {format_number(row['mean'], 4, signed=True)} {interval}; "
        f"{P_SEEDS} {p_text(row['p_seeds'], row['p_min'])}; {agreeing_seeds(row)} seeds agree "
        "in sign."
    )


def _examined(rows: pd.DataFrame, labels: dict[str, str]) -> str:
    """What the exploratory intervals are, in words: the planned effects at which levels, and
    the companion contrasts."""
    order = {level: index for index, level in enumerate(LEVEL_ORDER)}
    parts = []
    planned = rows[rows["effect"].isin(FACTORIAL_EFFECTS)]
    if len(planned):
        levels = sorted(set(planned["level"]), key=lambda level: order.get(level, len(order)))
        shown = ", ".join(labels.get(level, level).replace("_", " ") for level in levels)
        parts.append(f"the five simple effects at {shown}")
    if rows["effect"].isin(COMPANION_EFFECTS).any():
        parts.append("the companion contrasts at every level and on mean hierarchy")
    if (~rows["effect"].isin(EFFECT_ORDER)).any():
        parts.append("the added losses' effects at every level and on mean hierarchy")
    return "; ".join(parts)
