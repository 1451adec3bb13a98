"""Outer-splits stage: score the frozen features and every outer cell of one outer split on its
test side's query/gallery draws (development images: nothing here reads a sealed artifact)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pandas as pd

from hierbench.cells.checkpoints import embed, load_checkpoint
from hierbench.cells.spec import CellSpec
from hierbench.controls.outer import OuterSplitError
from hierbench.features.store import read_labelled_features
from hierbench.metrics.scoring import l2_normalised, metric_settings, qg_seeds, score_draws
from hierbench.protocol import EUCLIDEAN, FROZEN, GEOMETRY_NAMES
from hierbench.provenance.artifacts import write_parquet
from hierbench.provenance.records import JobContext
from hierbench.splits.construction import role_ids, rows_for_ids

log = logging.getLogger(__name__)


def _identity(dataset: str, split: str, spec: CellSpec | None) -> dict[str, Any]:
    """The columns that label one arm's rows (the frozen features when ``spec`` is None)."""
    if spec is None:
        return {
            "dataset": dataset,
            "split": split,
            "arm": FROZEN,
            "geometry": FROZEN,
            "loss": FROZEN,
            "seed": -1,
        }
    return {
        "dataset": dataset,
        "split": split,
        "arm": f"{spec.geometry}_{spec.loss}",
        "geometry": spec.geometry,
        "loss": spec.loss,
        "seed": spec.seed,
    }


def _checked_spec(record_path: str | Path, split: str) -> CellSpec:
    """The spec of an outer cell whose record says it trained on ``split``'s train side."""
    record = json.loads(Path(record_path).read_text(encoding="utf-8"))
    trained_on = record.get("train_split")
    if trained_on != split:
        raise OuterSplitError(
            f"{record_path} trained on {trained_on!r}, not on {split!r}: an outer split is "
            "scored only with the cells trained on its own train side"
        )
    return CellSpec.from_record(record)


def _fitting_ot_ks(
    metric: dict[str, Any], table: pd.DataFrame, prefix: str, seeds: list[int]
) -> dict[str, Any]:
    """The metric settings with only the OT@K cut-offs that fit every gallery of the split's
    draws (an outer test side can be far smaller than the sealed test; OT@K is not its
    endpoint, mean hierarchy mAP is)."""
    smallest = min(len(role_ids(table, f"{prefix}-{seed}", "gallery")) for seed in seeds)
    kept = tuple(k for k in metric["ot_ks"] if k <= smallest)
    if kept != tuple(metric["ot_ks"]):
        log.warning(
            "OT@K cut-offs %s exceed a %d-item gallery: scoring %s", metric["ot_ks"], smallest, kept
        )
    return {**metric, "ot_ks": kept}


def score_outer_split(
    dataset: str,
    split: str,
    features: str | Path,
    splits: str | Path,
    cells: list[tuple[str | Path, str | Path]],
    config: dict[str, Any],
    output: str | Path,
    job: JobContext,
) -> pd.DataFrame:
    """Score the frozen features and each (record, model) cell on ``split``'s test-side draws
    (``<split>-qg-<seed>``); write one summary table, every aggregation, every draw."""
    ids, labels, matrix = read_labelled_features(features)
    table = pd.read_parquet(splits)
    rows = rows_for_ids(ids, role_ids(table, split, "test"), f"{split}/test")
    ids, labels, matrix = ids.iloc[rows].reset_index(drop=True), labels[rows], matrix[rows]
    seeds, prefix = qg_seeds(config, dataset), f"{split}-qg"

    def settings(geometry: str, curvature: float | None) -> dict[str, Any]:
        return _fitting_ot_ks(metric_settings(config, geometry, curvature), table, prefix, seeds)

    frozen_metric = settings(GEOMETRY_NAMES[EUCLIDEAN], None)
    _, frozen = score_draws(l2_normalised(matrix), labels, ids, table, seeds, frozen_metric, prefix)
    summaries = [frozen.assign(**_identity(dataset, split, None))]
    for record, model in cells:
        spec = _checked_spec(record, split)
        head = load_checkpoint(model, spec, matrix.shape[1])
        metric = settings(GEOMETRY_NAMES[spec.geometry], spec.curvature)
        _, summary = score_draws(embed(head, matrix), labels, ids, table, seeds, metric, prefix)
        summaries.append(summary.assign(**_identity(dataset, split, spec)))
    scores = pd.concat(summaries, ignore_index=True)
    write_parquet(scores, output, job, sort_by=["arm", "seed", "qg_seed", "aggregation", "level"])
    log.info("%s %s: %d test images, %d arms scored", dataset, split, len(ids), len(summaries))
    return scores
