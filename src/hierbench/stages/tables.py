"""Effect-tables stage: per-seed rows, mean ± SD per arm, simple effects, renderings.

The query/gallery perturbations are averaged within each training seed; the seeds are the
statistical units. Query-micro is the main aggregation; group-macro is the sensitivity table
(in ``group_macro/``). ``summary.md`` holds the paper's layout of the main results.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from hierbench.artifacts import write_parquet, write_text
from hierbench.effects import (
    arm_table,
    arms_summary,
    effects_by_seed,
    effects_summary,
    effects_table,
    per_seed_from_evaluations,
    recall_table,
    render_markdown,
    write_effects,
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
        render_markdown(effects_table(effects, metric="map", level="mean_hierarchy")),
        "## Recall@K per arm and level",
        "",
        render_markdown(recall_table(arms)),
    ]
    return "\n".join(parts)


def build_tables(
    dataset: str, summaries: list[str | Path], out_dir: str | Path, job: JobContext
) -> pd.DataFrame:
    """Aggregate a dataset's evaluation summaries into every table of the study."""
    out = Path(out_dir)
    frames = pd.concat([pd.read_parquet(path) for path in summaries], ignore_index=True)
    per_seed = per_seed_from_evaluations(frames, "query_micro")
    keys = ["dataset", "geometry", "loss", "seed", "level", "metric"]
    write_parquet(per_seed, out / "per_seed.parquet", job, sort_by=keys)
    write_effects(per_seed, out, job)
    sensitivity = per_seed_from_evaluations(frames, SENSITIVITY)
    write_parquet(sensitivity, out / SENSITIVITY / "per_seed.parquet", job, sort_by=keys)
    write_effects(sensitivity, out / SENSITIVITY, job)
    write_text(summary_markdown(dataset, per_seed), out / "summary.md", job)
    log.info("%s tables written to %s", dataset, out)
    return per_seed
