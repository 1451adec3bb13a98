"""Controls stage: the curvature/radius control's per-seed rows, its table in the paper's
Table-10 layout, each point's contrast against the operating point, and its figure."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from hierbench.artifacts import publish, write_parquet, write_text
from hierbench.controls.curvature import (
    MATCHED_EUCLIDEAN,
    OPERATING_POINT,
    curvature_contrasts,
    curvature_table,
    per_seed_by_variant,
    variant_order,
)
from hierbench.effects import PER_SEED_KEYS, render_csv, render_latex, render_markdown
from hierbench.figures import curvature_figure, figure_writer
from hierbench.provenance import JobContext

log = logging.getLogger(__name__)

AGGREGATION = "query_micro"  # as the factorial's main tables


def _summaries_with_variants(
    points: list[str | Path], references: list[str | Path]
) -> pd.DataFrame:
    """The control's evaluation summaries and the factorial's E_R and H_R, each with a variant."""
    frames = [pd.read_parquet(path) for path in points]
    for path in references:
        frame = pd.read_parquet(path)
        frames.append(frame.assign(variant=frame["arm"]))
    combined = pd.concat(frames, ignore_index=True)
    return combined[combined["variant"] != ""]


def _write_table(table: pd.DataFrame, stem: Path, job: JobContext) -> None:
    """A table as parquet, Markdown, LaTeX and CSV."""
    write_parquet(table, stem.with_suffix(".parquet"), job, sort_by=())
    write_text(render_markdown(table), stem.with_suffix(".md"), job)
    write_text(render_latex(table), stem.with_suffix(".tex"), job)
    write_text(render_csv(table), stem.with_suffix(".csv"), job)


def build_curvature_tables(
    dataset: str,
    point_summaries: list[str | Path],
    reference_summaries: list[str | Path],
    operating_point: tuple[float, float],
    outputs: dict[str, list[str]],
    job: JobContext,
) -> pd.DataFrame:
    """Write the curvature control's per-seed table, its two tables and its figure."""
    summaries = _summaries_with_variants(point_summaries, reference_summaries)
    missing = {MATCHED_EUCLIDEAN, OPERATING_POINT} - set(summaries["variant"])
    if missing:
        raise ValueError(f"{dataset} curvature control: no evaluation of {sorted(missing)}")
    per_seed = per_seed_by_variant(summaries, AGGREGATION)
    keys = ["variant", *PER_SEED_KEYS]
    write_parquet(per_seed[[*keys, "value"]], outputs["per_seed"][0], job, sort_by=keys)
    table, contrasts = curvature_table(per_seed, operating_point), curvature_contrasts(per_seed)
    _write_table(table, Path(outputs["table"][0]).with_suffix(""), job)
    _write_table(contrasts, Path(outputs["contrasts"][0]).with_suffix(""), job)
    order = variant_order(sorted(set(per_seed["variant"])))
    figure = curvature_figure(per_seed, order, f"{dataset}: curvature/radius control (H_R)")
    for target in outputs["figure"]:
        publish(target, figure_writer(figure, Path(target).suffix.lstrip(".")), job)
    log.info("%s curvature control: %d variants", dataset, len(order))
    return per_seed
