"""The files of one table: parquet and CSV with the stable level keys (for code), Markdown and
LaTeX with the dataset's level names (for people)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from hierbench.effects import render_csv, render_latex, render_markdown
from hierbench.levelnames import LEVELS_METADATA, for_readers, level_labels
from hierbench.provenance.artifacts import write_parquet, write_text
from hierbench.provenance.records import JobContext


def write_renderings(
    frame: pd.DataFrame,
    stem: Path,
    job: JobContext,
    *,
    csv: bool = True,
    labels: dict[str, str] | None = None,
) -> list[Path]:
    """Write the Markdown and LaTeX renderings of one table with the level names of
    ``labels``, and optionally its CSV with the stable level keys."""
    shown = for_readers(frame, labels or level_labels(None))
    paths = [
        write_text(render_markdown(shown), stem.with_suffix(".md"), job),
        write_text(render_latex(shown), stem.with_suffix(".tex"), job),
    ]
    if csv:
        paths.append(write_text(render_csv(frame), stem.with_suffix(".csv"), job))
    return paths


def write_table(
    table: pd.DataFrame,
    stem: Path,
    job: JobContext,
    *,
    labels: dict[str, str] | None = None,
    metadata: dict[str, Any] | None = None,
) -> list[Path]:
    """A table as parquet (rows as given, the level names in its metadata), Markdown, LaTeX
    and CSV."""
    metadata = {**(metadata or {}), **({LEVELS_METADATA: labels} if labels else {})}
    parquet = write_parquet(table, stem.with_suffix(".parquet"), job, sort_by=(), metadata=metadata)
    return [parquet, *write_renderings(table, stem, job, labels=labels)]
