"""The CUB match report: a deterministic Markdown summary of how each class was matched."""

from __future__ import annotations

import math

import pandas as pd

from .checklist import Checklist
from .matching import METHODS


def match_report_markdown(df: pd.DataFrame, *, checklist: Checklist, alias_path: str) -> str:
    """Deterministic Markdown summary of how the CUB classes were matched."""
    per_genus = df.groupby("genus")["class_id"].count()
    singles = sorted(per_genus[per_genus == 1].index)
    lines = [
        "# CUB taxonomy match report",
        "",
        f"- Checklist: {checklist.source} (version {checklist.version}, sha256 {checklist.sha256})",
        f"- Alias file: {alias_path}",
        f"- Classes: {len(df)}; genera: {df['genus'].nunique()}; "
        f"families: {df['family'].nunique()}; genera with a single class: {len(singles)}",
        "",
        "## Classes per method",
        "",
        "| method | classes |",
        "|---|---|",
    ]
    counts = df["method"].value_counts()
    lines += [f"| {m} | {int(counts.get(m, 0))} |" for m in METHODS]
    lines += [
        "",
        "## Genera with a single class",
        "",
        ", ".join(singles) or "(none)",
        "",
        "## Non-exact matches",
        "",
        "| class | matched name | scientific name | method | score | runner-up | runner-up score |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in df[df["method"] != "exact"].sort_values("class_id").itertuples(index=False):
        runner = "" if math.isnan(r.runner_up_score) else f"{r.runner_up_score:.1f}"
        lines.append(
            f"| {r.class_name} | {r.matched_name} | *{r.scientific_name}* | "
            f"{r.method} | {r.score:.1f} | {r.runner_up} | {runner} |"
        )
    return "\n".join(lines) + "\n"
