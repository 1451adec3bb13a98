"""Controls stage: each control's per-seed rows, its table in the paper's layout, its paired
contrasts and its figure (the curvature/radius control: Table 10; semantic alignment: Table 2;
the outer hierarchy-disjoint splits), and the context baselines' table beside the factorial."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from hierbench.baselines.context_table import arm_order as baseline_order
from hierbench.baselines.context_table import (
    baselines_differences,
    baselines_per_seed,
    baselines_table,
)
from hierbench.controls.curvature import curvature_contrasts, curvature_table, variant_order
from hierbench.controls.curvature_points import MATCHED_EUCLIDEAN, point_label
from hierbench.controls.outer_tables import figure_rows, outer_gains, outer_per_split, outer_table
from hierbench.controls.semantic_tables import arm_order, semantic_contrasts, semantic_table
from hierbench.effects import PER_SEED_KEYS
from hierbench.effects.figure_publishing import publish_figure
from hierbench.effects.figures import baselines_figure, control_figure
from hierbench.effects.intervals import IntervalSettings, interval_settings
from hierbench.effects.query_contrasts import QueryContrasts
from hierbench.effects.table_files import write_table
from hierbench.effects.variants import per_seed_by_variant
from hierbench.levelnames import level_labels
from hierbench.protocol import ARM_ORDER
from hierbench.provenance.artifacts import write_parquet
from hierbench.provenance.records import JobContext

log = logging.getLogger(__name__)


def build_curvature_tables(
    dataset: str,
    summaries: list[str | Path],
    base: tuple[float, float],
    outputs: dict[str, list[str]],
    job: JobContext,
    *,
    aggregation: str,
    levels: tuple[str, str, str] | None = None,
    intervals: Mapping[str, Any] | None = None,
    per_query: list[str | Path] | None = None,
) -> pd.DataFrame:
    """Write the curvature control's per-seed table, its two tables and its figure, from its
    own cells only (the base point and matched Euclidean included), under the dataset's
    registered ``aggregation``; each contrast with its interval (the test images' share from
    the cells' ``per_query`` rows; over seeds alone without them; ``intervals``: the config's
    ``effects.intervals``)."""
    frame = _concat(summaries)
    missing = {MATCHED_EUCLIDEAN, point_label(*base)} - set(frame["variant"])
    if missing:
        raise ValueError(f"{dataset} curvature control: no evaluation of {sorted(missing)}")
    per_seed = per_seed_by_variant(frame, aggregation)
    keys = ["variant", *PER_SEED_KEYS]
    write_parquet(per_seed[[*keys, "value"]], outputs["per_seed"][0], job, sort_by=keys)
    settings = interval_settings(intervals)
    table = curvature_table(per_seed, base)
    query = _query_contrasts(per_query, aggregation, settings)
    contrasts = curvature_contrasts(per_seed, base, settings, query)
    _write_tables({"table": table, "contrasts": contrasts}, outputs, job, levels, settings)
    order = variant_order(sorted(set(per_seed["variant"])))
    title = f"{dataset}: curvature/radius control (H_R, {aggregation})"
    publish_figure(control_figure(per_seed, order, title), outputs["figure"], job)
    log.info("%s curvature control: %d variants", dataset, len(order))
    return per_seed


def build_semantic_tables(
    dataset: str,
    summaries: list[str | Path],
    durations: list[str | Path],
    outputs: dict[str, list[str]],
    job: JobContext,
    *,
    aggregation: str,
    levels: tuple[str, str, str] | None = None,
    intervals: Mapping[str, Any] | None = None,
    per_query: list[str | Path] | None = None,
) -> pd.DataFrame:
    """Write the semantic-alignment control's per-seed table, its two tables and its figure,
    under the dataset's registered aggregation, scored with the true taxonomy; each contrast
    with its interval (the test images' share from the cells' ``per_query`` rows; over seeds
    alone without them; ``intervals``: the config's ``effects.intervals``)."""
    frame = pd.concat([pd.read_parquet(path) for path in summaries], ignore_index=True)
    per_seed = per_seed_by_variant(frame, aggregation)
    epochs = {}
    for path in durations:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
        epochs[record["arm"]] = int(record["epochs"])
    keys = ["variant", *PER_SEED_KEYS]
    write_parquet(per_seed[[*keys, "value"]], outputs["per_seed"][0], job, sort_by=keys)
    settings = interval_settings(intervals)
    query = _query_contrasts(per_query, aggregation, settings)
    contrasts = semantic_contrasts(per_seed, settings, query)
    tables = {"table": semantic_table(per_seed, epochs), "contrasts": contrasts}
    _write_tables(tables, outputs, job, levels, settings)
    order = arm_order(sorted(epochs))
    figure = control_figure(per_seed, order, f"{dataset}: semantic-alignment control (E_S)")
    publish_figure(figure, outputs["figure"], job)
    log.info("%s semantic control: arms %s, epochs %s", dataset, order, epochs)
    return per_seed


def _query_contrasts(
    per_query: list[str | Path] | None,
    aggregation: str,
    settings: IntervalSettings,
    label: str = "variant",
) -> QueryContrasts | None:
    """The per-query rows of a table's cells as paired contrasts (None when none are given:
    the intervals are then over seeds only)."""
    if not per_query:
        return None
    return QueryContrasts(_concat(per_query), aggregation, settings, label)


def _write_tables(
    tables: dict[str, pd.DataFrame],
    outputs: dict[str, list[str]],
    job: JobContext,
    levels: tuple[str, str, str] | None,
    settings: IntervalSettings,
) -> None:
    """Each table at its output (parquet, Markdown, LaTeX, CSV), read with the level names,
    the interval settings (the resampling seed among them) in its metadata."""
    metadata = {"interval_settings": settings.metadata()}
    for name, table in tables.items():
        stem = Path(outputs[name][0]).with_suffix("")
        write_table(table, stem, job, labels=level_labels(levels), metadata=metadata)


def _concat(paths: list[str | Path]) -> pd.DataFrame:
    """The rows of several evaluation parquets, in the order given."""
    return pd.concat([pd.read_parquet(path) for path in paths], ignore_index=True)


# Per-seed rows of arms labelled by ``variant`` (the baselines): no factorial codes.
ARM_PER_SEED_KEYS = ["variant", *[key for key in PER_SEED_KEYS if key not in ("geometry", "loss")]]


def _write_arm_per_seed(per_seed: pd.DataFrame, target: str, job: JobContext) -> None:
    """The per-seed rows of arms labelled by ``variant``, as parquet."""
    columns = [*ARM_PER_SEED_KEYS, "value"]
    write_parquet(per_seed[columns], target, job, sort_by=ARM_PER_SEED_KEYS)


def build_baselines_tables(
    dataset: str,
    summaries: list[str | Path],
    dimensions: int,
    outputs: dict[str, list[str]],
    job: JobContext,
    *,
    aggregation: str,
    levels: tuple[str, str, str] | None = None,
    intervals: Mapping[str, Any] | None = None,
    per_query: list[str | Path] | None = None,
) -> pd.DataFrame:
    """Write the context baselines' per-seed rows, their table beside the factorial's arms,
    each arm's difference from the frozen features (intervals with the test images' share from
    ``per_query``, over seeds alone without them) and the figure, under the dataset's registered
    aggregation."""
    per_seed = baselines_per_seed(_concat(summaries), aggregation)
    _write_arm_per_seed(per_seed, outputs["per_seed"][0], job)
    settings = interval_settings(intervals)
    query = _query_contrasts(per_query, aggregation, settings, label="arm")
    tables = {
        "table": baselines_table(per_seed, dimensions),
        "differences": baselines_differences(per_seed, dimensions, settings, query),
    }
    _write_tables(tables, outputs, job, levels, settings)
    order = baseline_order(sorted(set(per_seed["variant"])))
    title = f"{dataset}: context baselines beside the factorial"
    figure = baselines_figure(per_seed, order, aggregation, title, level_labels(levels))
    publish_figure(figure, outputs["figure"], job)
    log.info("%s baselines: %s", dataset, order)
    return per_seed


def build_outer_tables(
    dataset: str,
    scores: list[str | Path],
    outputs: dict[str, list[str]],
    job: JobContext,
    *,
    aggregation: str,
    levels: tuple[str, str, str] | None = None,
    intervals: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Write the outer splits' per-split rows, their table, their paired gains (interval over
    splits) and figure, under the dataset's registered ``aggregation``."""
    per_split = outer_per_split(_concat(scores), aggregation)
    keys = ["split", *PER_SEED_KEYS]
    write_parquet(per_split[[*keys, "value"]], outputs["per_split"][0], job, sort_by=keys)
    settings = interval_settings(intervals)
    tables = {"table": outer_table(per_split), "gains": outer_gains(per_split, settings)}
    _write_tables(tables, outputs, job, levels, settings)
    order = [arm for arm in ARM_ORDER if arm in set(per_split["arm"])]
    title = f"{dataset}: outer hierarchy-disjoint splits ({aggregation})"
    publish_figure(control_figure(figure_rows(per_split), order, title), outputs["figure"], job)
    log.info("%s outer splits: %s", dataset, sorted(set(per_split["split"])))
    return per_split
