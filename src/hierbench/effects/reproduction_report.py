"""A run beside a published table, as a person reads it (Markdown) and as a program reads it
(JSON): the note on the embedded demo first, the rule the verdicts follow, the planned
endpoints, the arms, and what was not compared (:mod:`hierbench.effects.reproduction`)."""

from __future__ import annotations

import math
import textwrap
from typing import Any

import pandas as pd

from hierbench.effects.formulas import effect_definition
from hierbench.effects.render import format_number, interval_text, mean_sd, render_markdown
from hierbench.effects.reproduction import (
    ARMS,
    COMPARISON_COLUMNS,
    ENDPOINTS,
    Reproduction,
)

DIGITS = 4
WIDTH = 100  # the prose is wrapped at this width; the tables are not
HEADINGS = {
    ENDPOINTS: "Planned endpoints: effects on mean hierarchy mAP",
    ARMS: "Arms: mean hierarchy mAP",
}


def demo_note(run: str, datasets: list[str]) -> str:
    """The plain warning that a run's datasets are the embedded demo, not the paper's data
    ("" when none is)."""
    if not datasets:
        return ""
    named = " and ".join([", ".join(datasets[:-1]), datasets[-1]] if datasets[:-1] else datasets)
    verb = "is" if len(datasets) == 1 else "are"
    return (
        f"Note: in {run}, {named} {verb} the embedded demo (images rendered by our own code), "
        "not the paper's data. A disagreement with the published numbers says nothing about "
        "the paper, and an agreement says nothing for it."
    )


def rule_text(confidence: float, margin: float) -> str:
    """What each column and verdict means, with this comparison's level and margin."""
    return (
        "Each row: the mean over training seeds in the run and in the published table (± SD "
        "over seeds), how many seeds each has, the difference run − published and its "
        f"{confidence:.0%} Welch interval (the two studies' seeds as independent samples: "
        "se² = s₁²/n₁ + s₂²/n₂, Welch–Satterthwaite df, Student's t). Verdict: differs when the "
        f"interval excludes 0; consistent when it contains 0 and its half-width is at most "
        f"{margin:g} mAP (--margin); too uncertain to say when it contains 0 but is wider; no "
        "interval when a side has fewer than two seeds or no spread."
    )


def display_table(reproduction: Reproduction, which: str) -> pd.DataFrame:
    """One table's rows as text: each side's mean ± SD, the seeds, the signed difference, the
    interval and the verdict (the endpoints with each effect's definition in arms)."""
    rows = reproduction.table(which)
    name = "effect" if which == ENDPOINTS else "arm"
    shown = pd.DataFrame({"dataset": rows["dataset"], name: rows["name"]})
    if which == ENDPOINTS:
        shown["definition"] = rows["name"].map(effect_definition)
    signed = which == ENDPOINTS
    for side in ("run", "published"):
        shown[side] = [
            mean_sd(mean, sd, DIGITS, signed=signed)
            for mean, sd in zip(rows[side], rows[f"{side}_sd"], strict=True)
        ]
    shown["seeds"] = [f"{a} / {b}" for a, b in zip(rows["run_n"], rows["published_n"], strict=True)]
    shown["run − published"] = [format_number(v, DIGITS, signed=True) for v in rows["difference"]]
    ends = zip(rows["ci_low"], rows["ci_high"], strict=True)
    shown[f"{reproduction.confidence:.0%} interval"] = [
        interval_text(low, high, DIGITS) for low, high in ends
    ]
    shown["verdict"] = rows["verdict"].to_numpy()
    return shown


def _interval_notes(reproduction: Reproduction, which: str) -> list[str]:
    """One line per row without an interval, saying why."""
    rows = reproduction.table(which)
    return [
        f"- {row.dataset} {row.name}: no interval, {row.note}"
        for row in rows.itertuples()
        if row.note
    ]


def counts_line(reproduction: Reproduction, which: str) -> str:
    """How many rows of a table got each verdict, in words."""
    counts = reproduction.verdict_counts(which)
    label = "planned endpoints" if which == ENDPOINTS else "arms"
    return f"{label}: " + ", ".join(f"{count} {verdict}" for verdict, count in counts.items())


def report_markdown(reproduction: Reproduction, demo: list[str]) -> str:
    """The whole comparison as Markdown: the demo note first (when there is one), the sources,
    the derived levels, the rule, both tables, what was not compared and the counts."""
    sources = reproduction.sources
    lines = [*textwrap.wrap(demo_note(sources["run"], demo), WIDTH), ""] if demo else []
    lines += [f"# {sources['run']} against the published {sources['published']}", ""]
    lines += [*(f"- {note}" for note in reproduction.notes), ""] if reproduction.notes else []
    lines += [*textwrap.wrap(rule_text(reproduction.confidence, reproduction.margin), WIDTH), ""]
    for which in (ENDPOINTS, ARMS):
        lines += [f"## {HEADINGS[which]}", "", render_markdown(display_table(reproduction, which))]
        notes = _interval_notes(reproduction, which)
        lines += [*notes, ""] if notes else []
    if reproduction.not_compared:
        lines += ["## Not compared", "", *(f"- {line}" for line in reproduction.not_compared), ""]
    lines += [f"{counts_line(reproduction, ENDPOINTS)}; {counts_line(reproduction, ARMS)}."]
    return "\n".join(lines)


def _plain(value: Any) -> Any:
    """A table cell as JSON holds it: NaN as null, NumPy scalars as Python values."""
    if hasattr(value, "item"):
        value = value.item()
    return None if isinstance(value, float) and math.isnan(value) else value


def report_json(reproduction: Reproduction, demo: list[str]) -> dict[str, Any]:
    """The whole comparison for programs: sources, settings, the demo datasets and note, the
    rows (every column of :data:`COMPARISON_COLUMNS`), what was not compared and the counts."""
    rows = [
        {column: _plain(value) for column, value in zip(COMPARISON_COLUMNS, row, strict=True)}
        for row in reproduction.rows[list(COMPARISON_COLUMNS)].itertuples(index=False)
    ]
    return {
        "run": reproduction.sources["run"],
        "published": reproduction.sources["published"],
        "confidence": reproduction.confidence,
        "margin": reproduction.margin,
        "demo": demo,
        "demo_note": demo_note(reproduction.sources["run"], demo),
        "notes": reproduction.notes,
        "rows": rows,
        "not_compared": reproduction.not_compared,
        "verdicts": {which: reproduction.verdict_counts(which) for which in (ENDPOINTS, ARMS)},
    }
