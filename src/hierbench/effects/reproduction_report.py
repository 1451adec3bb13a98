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
from hierbench.effects.study_images import OTHER_IMAGES, SAME_IMAGES, UNKNOWN_IMAGES

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
    tost = 1 - 2 * (1 - confidence)
    return (
        "Each row: the mean over training seeds in the run and in the published table (± SD "
        "over seeds), how many seeds each has, the difference run − published and its "
        f"{confidence:.0%} interval. The two studies' seeds are independent samples, and where "
        "the two studies scored other test images (or it is unknown whether they did) each "
        "study's test images move all its seeds together: se² = s₁²/n₁ + s₂²/n₂ + V₁ + V₂, V "
        "a study's test-image variance from the run's effect tables (the section below says "
        "which case each dataset is and where V came from), Welch–Satterthwaite df, Student's "
        f"t. Verdict: differs when the interval excludes 0; equivalent within the margin when "
        f"it holds 0 and its {tost:.0%} interval (the two one-sided tests at "
        f"{1 - confidence:.0%}) lies inside ±{margin:g} mAP (--margin); differs by less than "
        "the margin when both hold; too uncertain to say otherwise; no interval when a side "
        "has fewer than two seeds or no spread."
    )


def images_lines(reproduction: Reproduction) -> list[str]:
    """One line per table and dataset: which test images the comparison assumed, and what it
    added for them (or why it could add nothing)."""
    lines = []
    for which in (ENDPOINTS, ARMS):
        rows = reproduction.table(which)
        for dataset, part in rows.groupby("dataset", sort=True):
            case = str(part["test_images"].iloc[0])
            notes = sorted({note for note in part["images_note"] if note})
            if case != SAME_IMAGES and not any("neither" in note for note in notes):
                notes.insert(0, "each side's test-image variance is added")
            label = HEADINGS[which].split(":")[0].lower()
            lines.append(f"- {label}, {dataset}: {'; '.join([_CASE_TEXT[case], *notes])}")
    return lines


_CASE_TEXT = {
    SAME_IMAGES: "the same test images on both sides (their sealed test splits hash alike), so "
    "their variance cancels",
    OTHER_IMAGES: "other test images on each side (their sealed test splits hash differently)",
    UNKNOWN_IMAGES: "unknown whether both sides scored the same test images (a side is a table "
    "from outside a run), so they are taken to be other images",
}


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
    tost = 1 - 2 * (1 - reproduction.confidence)
    shown[f"{tost:.0%} interval (TOST)"] = [
        interval_text(low, high, DIGITS)
        for low, high in zip(rows["tost_low"], rows["tost_high"], strict=True)
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
    lines += ["## Test images", "", *images_lines(reproduction), ""]
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
