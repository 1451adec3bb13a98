"""Figures stage: effects, mAP by level, hyperbolic prototype norms and our OT scores by K
(ideal-referenced OT@K, with the taxonomy-tree-referenced ot_tree beside it) for one dataset."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd

from hierbench.cells.checkpoints import embed, load_checkpoint
from hierbench.cells.spec import CellSpec
from hierbench.effects import ANY_OT_METRIC, add_arm
from hierbench.effects.figure_publishing import publish_figure
from hierbench.effects.figures import (
    effects_figure,
    map_by_level_figure,
    norms_figure,
    ot_by_k_figure,
    prototype_norms,
)
from hierbench.effects.verdicts import caption
from hierbench.features.store import read_labelled_features
from hierbench.levelnames import level_labels
from hierbench.protocol import FIGURES, MEAN_HIERARCHY, POINCARE
from hierbench.provenance.artifacts import publish, read_parquet_metadata
from hierbench.provenance.records import JobContext

log = logging.getLogger(__name__)

METRIC = "map"


def hyperbolic_norms(
    records: list[str | Path], checkpoints: list[str | Path], features: str | Path
) -> pd.DataFrame:
    """Prototype norms per level for every Poincaré cell, on the development features."""
    _, labels, matrix = read_labelled_features(features)
    parts = []
    for record_path, checkpoint in zip(records, checkpoints, strict=True):
        spec = CellSpec.from_record(json.loads(Path(record_path).read_text(encoding="utf-8")))
        if spec.geometry != POINCARE:
            continue
        model = load_checkpoint(checkpoint, spec, matrix.shape[1])
        norms = prototype_norms(embed(model, matrix), labels, spec.curvature)
        parts.append(norms.assign(cell=spec.cell))
    return pd.concat(parts, ignore_index=True)


def build_figures(
    dataset: str,
    arms_summary: str | Path,
    effects_by_seed: str | Path,
    effects_summary: str | Path,
    records: list[str | Path],
    checkpoints: list[str | Path],
    features: str | Path,
    outputs: dict[str, list[str]],
    verdicts: str | Path,
    job: JobContext,
    *,
    levels: tuple[str, str, str] | None = None,
) -> None:
    """Write the figures of a dataset, each as PNG and PDF, levels named as ``levels`` do, and
    the effects figure's caption effect by effect (``verdicts``, reStructuredText)."""
    labels = level_labels(levels)
    effects = pd.read_parquet(effects_by_seed)
    chosen = effects[(effects["level"] == MEAN_HIERARCHY) & (effects["metric"] == METRIC)]
    intervals = pd.read_parquet(effects_summary)
    intervals = intervals[(intervals["level"] == MEAN_HIERARCHY) & (intervals["metric"] == METRIC)]
    summary = add_arm(pd.read_parquet(arms_summary))
    arms = summary[summary["metric"] == METRIC]
    ot = summary[summary["metric"].astype(str).str.fullmatch(ANY_OT_METRIC.pattern)]
    norms = hyperbolic_norms(records, checkpoints, features)
    drawn = (
        effects_figure(chosen, intervals, f"{dataset}: simple effects (mean hierarchy mAP)"),
        map_by_level_figure(arms, f"{dataset}: mAP by level", labels=labels),
        norms_figure(norms, f"{dataset}: prototype norms, Poincaré cells", labels),
        ot_by_k_figure(ot, f"{dataset}: our OT@K by K (to the ideal relation mix)"),
    )
    for name, figure in zip(FIGURES, drawn, strict=True):
        publish_figure(figure, outputs[name], job)
    level = read_parquet_metadata(effects_summary)["interval_settings"]["level"]
    text = caption(intervals, level)
    publish(verdicts, lambda path: path.write_text(text, encoding="utf-8"), job)
    log.info("%s figures written", dataset)
