"""Scoring on the sealed test under the Final lock: what the sealed evaluation stages share
(``stages.evaluation`` ranks by distance, ``stages.angle_evaluation`` the companion cells by
exterior angle). It checks the lock, logs the read and scores; the stages publish the rows.

Every function here that reads test data says so in its name, and verifies the lock first.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from hierbench.cells.checkpoints import embed, load_checkpoint
from hierbench.cells.spec import CellSpec
from hierbench.features.store import read_labelled_features
from hierbench.layout import evaluation_files
from hierbench.metrics.scoring import qg_seeds, score_draws
from hierbench.protocol import HIER
from hierbench.provenance.lock import verify_against_lock

# The metric engine's settings for a loaded cell: (model, spec) -> keyword arguments.
MetricFor = Callable[[Any, CellSpec], dict[str, Any]]
# How the per-query and summary parquets are sorted.
PER_QUERY_ORDER = ("qg_seed", "query", "level")
SUMMARY_ORDER = ("qg_seed", "aggregation", "level")
# The names of an evaluation's two files (per-query rows, summary).
EVALUATION_FILE_NAMES = tuple(evaluation_files(""))


class SealedScores(NamedTuple):
    """A cell's per-query rows and summaries on every sealed draw, labelled with its identity."""

    per_query: pd.DataFrame
    summary: pd.DataFrame


def note_test_access(access_log: str | Path, what: str) -> None:
    """Append when and by whom the sealed test data was read (the first line is the first read)."""
    path = Path(access_log)
    path.parent.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(f"{now} {what}\n")


@dataclass(frozen=True)
class SealedCell:
    """What a sealed evaluation of one trained cell reads: the cell's record and checkpoint,
    the Final lock, and the sealed test's features and splits."""

    record: str | Path
    checkpoint: str | Path
    lock: str | Path
    sealed_features: str | Path
    sealed_splits: str | Path


def sealed_cells(
    inputs: Mapping[str, str], outputs: Mapping[str, str]
) -> list[tuple[SealedCell, dict[str, str]]]:
    """The cells one sealed-evaluation job scores, each with its output files by name: the
    job's inputs ``model_<cell>`` and ``record_<cell>`` beside the lock and the sealed test's,
    its outputs ``<file>_<cell>`` (see ``hierbench.paths.RunPaths.sealed_evaluation``)."""
    sealed = (inputs["lock"], inputs["sealed_features"], inputs["sealed_splits"])
    labels = [key.removeprefix("record_") for key in inputs if key.startswith("record_")]
    return [
        (
            SealedCell(inputs[f"record_{label}"], inputs[f"model_{label}"], *sealed),
            {name: outputs[f"{name}_{label}"] for name in EVALUATION_FILE_NAMES},
        )
        for label in labels
    ]


def score_cell_on_sealed_test(
    dataset: str,
    cell: SealedCell,
    config: dict[str, Any],
    *,
    access_log: str | Path,
    reader: str,
    metric_for: MetricFor,
    labels: dict[str, str],
) -> SealedScores:
    """Verify the lock, then score one trained cell on every sealed draw with the engine
    settings ``metric_for(model, spec)`` gives. The access log names the cell, its ``labels``
    and the ``reader`` (a rule); the labels become columns after the cell's identity.

    On the CPU whatever the config's ``device``: the head's forward pass over the sealed
    features takes a fraction of a second and the metrics run in float64 NumPy, so a
    checkpoint's scores are the same bytes on every node, with or without a GPU.
    """
    verify_against_lock(cell.lock, [cell.checkpoint, cell.sealed_features, cell.sealed_splits])
    spec = CellSpec.from_record(json.loads(Path(cell.record).read_text(encoding="utf-8")))
    what = " ".join([spec.cell, *labels.values()])
    note_test_access(access_log, f"{dataset} {what} ({reader})")
    ids, classes, matrix = read_labelled_features(cell.sealed_features)
    model = load_checkpoint(cell.checkpoint, spec, matrix.shape[1])
    per_query, summary = score_draws(
        embed(model, matrix),
        classes,
        ids,
        pd.read_parquet(cell.sealed_splits),
        qg_seeds(config, dataset),
        metric_for(model, spec),
    )
    identity = {
        "dataset": dataset,
        "arm": HIER if spec.loss == HIER else f"{spec.geometry}_{spec.loss}",
        "geometry": spec.geometry,
        "loss": spec.loss,
        "seed": spec.seed,
    } | labels
    return SealedScores(per_query.assign(**identity), summary.assign(**identity))
