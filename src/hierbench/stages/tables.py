"""Effect-tables stage: per-seed rows, mean ± SD per arm, simple effects, renderings.

The query/gallery perturbations are averaged within each training seed; the seeds are the
statistical units. Query-micro is the main aggregation; group-macro is the sensitivity table
(in ``group_macro/``). ``summary.md`` holds the paper's layout of the main results.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pandas as pd

from hierbench.artifacts import write_parquet, write_text
from hierbench.effects import (
    EFFECT_DEFINITIONS,
    PER_SEED_KEYS,
    arm_table,
    arms_summary,
    effects_by_seed,
    effects_summary,
    effects_table,
    per_seed_from_evaluations,
    read_per_seed,
    recall_table,
    render_csv,
    render_latex,
    render_markdown,
    validate_per_seed,
)
from hierbench.protocol import (
    EFFECT_TABLES,
    MEAN_HIERARCHY,
    PAPER_TABLES,
    PER_SEED_TABLE,
    SUMMARY_PAGE,
)
from hierbench.provenance import JobContext

log = logging.getLogger(__name__)

SENSITIVITY = "group_macro"


def summary_markdown(dataset: str, per_seed: pd.DataFrame) -> str:
    """The paper's tables for one dataset, as Markdown."""
    arms = arms_summary(per_seed)
    effects = effects_summary(effects_by_seed(per_seed))
    parts = [
        f"# {dataset}: results (query-micro, mean ± SD over training seeds)",
        "",
        "## mAP per arm and level",
        "",
        render_markdown(arm_table(arms, metric="map")),
        "## Simple effects on mean hierarchy mAP",
        "",
        render_markdown(effects_table(effects, metric="map", level=MEAN_HIERARCHY)),
        "## Recall@K per arm and level",
        "",
        render_markdown(recall_table(arms)),
    ]
    return "\n".join(parts)


def _write_renderings(frame: pd.DataFrame, stem: Path, job: JobContext, csv: bool) -> list[Path]:
    """Write the Markdown, LaTeX (and optionally CSV) renderings of one table."""
    paths = [
        write_text(render_markdown(frame), stem.with_suffix(".md"), job),
        write_text(render_latex(frame), stem.with_suffix(".tex"), job),
    ]
    if csv:
        paths.append(write_text(render_csv(frame), stem.with_suffix(".csv"), job))
    return paths


def write_effects(
    per_seed: pd.DataFrame | str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    job: JobContext,
) -> dict[str, Path]:
    """Re-aggregate a per-seed table into arm and effect tables (parquet, md, tex, csv).

    Writes ``arms_summary``, ``effects_by_seed`` and ``effects_summary`` as .parquet, .md,
    .tex and .csv, plus the paper tables ``table_arms_map``, ``table_effects_map`` (mean
    hierarchy) and ``table_recall`` as .md and .tex. Returns the paths keyed by file name.
    """
    frame = per_seed if isinstance(per_seed, pd.DataFrame) else read_per_seed(per_seed)
    frame = validate_per_seed(frame)
    out = Path(out_dir)
    arms = arms_summary(frame)
    by_seed = effects_by_seed(frame)
    summary = effects_summary(by_seed)
    facts = {"datasets": sorted(set(frame["dataset"].tolist()))}
    tables = dict(zip(EFFECT_TABLES, (arms, by_seed, summary), strict=True))
    paths: list[Path] = []
    for name, table in tables.items():
        metadata = {"table": name, "sd": "sample, ddof=1, over seeds"}
        if table is not arms:
            metadata["effects"] = EFFECT_DEFINITIONS
        target = out / f"{name}.parquet"
        paths.append(write_parquet(table, target, job, sort_by=(), metadata=metadata, facts=facts))
        paths.extend(_write_renderings(table, out / name, job, csv=True))
    paper_tables = (
        arm_table(arms, "map"),
        effects_table(summary, "map", MEAN_HIERARCHY),
        recall_table(arms),
    )
    paper = dict(zip(PAPER_TABLES, paper_tables, strict=True))
    for name, table in paper.items():
        paths.extend(_write_renderings(table, out / name, job, csv=False))
    return {path.name: path for path in paths}


def build_tables(
    dataset: str, summaries: list[str | Path], out_dir: str | Path, job: JobContext
) -> pd.DataFrame:
    """Aggregate a dataset's evaluation summaries into every table of the study."""
    out = Path(out_dir)
    frames = pd.concat([pd.read_parquet(path) for path in summaries], ignore_index=True)
    per_seed = per_seed_from_evaluations(frames, "query_micro")
    keys = list(PER_SEED_KEYS)
    write_parquet(per_seed, out / f"{PER_SEED_TABLE}.parquet", job, sort_by=keys)
    write_effects(per_seed, out, job)
    sensitivity = per_seed_from_evaluations(frames, SENSITIVITY)
    write_parquet(sensitivity, out / SENSITIVITY / f"{PER_SEED_TABLE}.parquet", job, sort_by=keys)
    write_effects(sensitivity, out / SENSITIVITY, job)
    write_text(summary_markdown(dataset, per_seed), out / SUMMARY_PAGE, job)
    log.info("%s tables written to %s", dataset, out)
    return per_seed
