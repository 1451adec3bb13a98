"""Sealed evaluation stage: strict retrieval metrics on the test draws, under the Final lock.

Every function here that reads test data says so in its name, and verifies the lock first.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hierbench.artifacts import write_parquet
from hierbench.baselines.pca import load_pca, project
from hierbench.cells import embed, learned_curvature, load_checkpoint
from hierbench.cellspec import CellSpec
from hierbench.featurestore import read_labelled_features
from hierbench.lock import verify_against_lock
from hierbench.protocol import EUCLIDEAN, FROZEN, GEOMETRY_NAMES, HEAD_NAMES, HIER, PCA
from hierbench.provenance import JobContext
from hierbench.scoring import l2_normalised, metric_settings, qg_seeds, score_draws

log = logging.getLogger(__name__)


def _note_test_access(access_log: str | Path, what: str) -> None:
    """Append when and by whom the sealed test data was read (the first line is the first read)."""
    path = Path(access_log)
    path.parent.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(f"{now} {what}\n")


def _write_scores(
    per_query: pd.DataFrame,
    summary: pd.DataFrame,
    identity: dict[str, Any],
    outputs: dict[str, str | Path],
    job: JobContext,
) -> None:
    """Write the per-query and summary parquets, labelled with the arm's identity."""
    per_query = per_query.assign(**identity)
    summary = summary.assign(**identity)
    write_parquet(per_query, outputs["per_query"], job, sort_by=["qg_seed", "query", "level"])
    write_parquet(summary, outputs["summary"], job, sort_by=["qg_seed", "aggregation", "level"])


# The metric engine's settings for a loaded cell: (model, spec) -> keyword arguments.
MetricFor = Callable[[Any, CellSpec], dict[str, Any]]


def evaluate_cell_on_sealed_test(
    dataset: str,
    record: str | Path,
    checkpoint: str | Path,
    lock: str | Path,
    sealed_features: str | Path,
    sealed_splits: str | Path,
    config: dict[str, Any],
    outputs: dict[str, str | Path],
    job: JobContext,
    *,
    access_log: str | Path,
    variant: str | None = None,
) -> pd.DataFrame:
    """Verify the lock, then score one final cell on every sealed query/gallery draw, ranked by
    its head's distance (at a Lorentz head's learned curvature).

    ``variant`` labels a control's cell (a curvature point) in a ``variant`` column; a
    HIER-style baseline cell is the arm ``hier``.
    """

    def distance_metric(model: Any, spec: CellSpec) -> dict[str, Any]:
        """The engine's distance settings for the cell's head."""
        curvature = learned_curvature(model, spec)
        return metric_settings(config, HEAD_NAMES[spec.geometry], curvature)

    return score_cell_on_sealed_test(
        dataset,
        record,
        checkpoint,
        lock,
        sealed_features,
        sealed_splits,
        config,
        outputs,
        job,
        access_log=access_log,
        metric_for=distance_metric,
        labels={"variant": variant} if variant else {},
    )


def score_cell_on_sealed_test(
    dataset: str,
    record: str | Path,
    checkpoint: str | Path,
    lock: str | Path,
    sealed_features: str | Path,
    sealed_splits: str | Path,
    config: dict[str, Any],
    outputs: dict[str, str | Path],
    job: JobContext,
    *,
    access_log: str | Path,
    metric_for: MetricFor,
    labels: dict[str, str],
) -> pd.DataFrame:
    """Verify the lock, then score one trained cell on every sealed draw with the engine
    settings ``metric_for(model, spec)`` gives; ``labels`` become columns of its rows (after
    its identity) and are named in the access log.

    On the CPU whatever the config's ``device``: the head's forward pass over the sealed
    features takes a fraction of a second and the metrics run in float64 NumPy, so a
    checkpoint's scores are the same bytes on every node, with or without a GPU.
    """
    verify_against_lock(lock, [checkpoint, sealed_features, sealed_splits])
    spec = CellSpec.from_record(json.loads(Path(record).read_text(encoding="utf-8")))
    what = " ".join([spec.cell, *labels.values()])
    _note_test_access(access_log, f"{dataset} {what} ({job.rule})")
    ids, classes, matrix = read_labelled_features(sealed_features)
    model = load_checkpoint(checkpoint, spec, matrix.shape[1])
    per_query, summary = score_draws(
        embed(model, matrix),
        classes,
        ids,
        pd.read_parquet(sealed_splits),
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
    _write_scores(per_query, summary, identity, outputs, job)
    return summary.assign(**identity)


def _evaluate_seedless_arm_on_sealed_test(
    dataset: str,
    arm: str,
    embed_features: Callable[[np.ndarray], np.ndarray],
    locked: list[str | Path],
    lock: str | Path,
    sealed_features: str | Path,
    sealed_splits: str | Path,
    config: dict[str, Any],
    outputs: dict[str, str | Path],
    job: JobContext,
    access_log: str | Path,
) -> pd.DataFrame:
    """Verify the lock, then score a seedless baseline arm (its embeddings of the sealed
    features, Euclidean) on every sealed draw with the same engine."""
    verify_against_lock(lock, [*locked, sealed_features, sealed_splits])
    _note_test_access(access_log, f"{dataset} {arm} ({job.rule})")
    ids, labels, matrix = read_labelled_features(sealed_features)
    metric = metric_settings(config, GEOMETRY_NAMES[EUCLIDEAN], None)
    per_query, summary = score_draws(
        embed_features(matrix),
        labels,
        ids,
        pd.read_parquet(sealed_splits),
        qg_seeds(config, dataset),
        metric,
    )
    identity = {"dataset": dataset, "arm": arm, "geometry": arm, "loss": arm, "seed": -1}
    _write_scores(per_query, summary, identity, outputs, job)
    return summary.assign(**identity)


def evaluate_frozen_on_sealed_test(
    dataset: str,
    lock: str | Path,
    sealed_features: str | Path,
    sealed_splits: str | Path,
    config: dict[str, Any],
    outputs: dict[str, str | Path],
    job: JobContext,
    *,
    access_log: str | Path,
) -> pd.DataFrame:
    """The frozen-feature baseline: L2-normalised raw features, Euclidean, the same engine."""
    return _evaluate_seedless_arm_on_sealed_test(
        dataset,
        FROZEN,
        l2_normalised,
        [],
        lock,
        sealed_features,
        sealed_splits,
        config,
        outputs,
        job,
        access_log,
    )


def evaluate_pca_on_sealed_test(
    dataset: str,
    projection: str | Path,
    lock: str | Path,
    sealed_features: str | Path,
    sealed_splits: str | Path,
    config: dict[str, Any],
    outputs: dict[str, str | Path],
    job: JobContext,
    *,
    access_log: str | Path,
) -> pd.DataFrame:
    """The PCA baseline: the locked projection (fitted on development images), L2-normalised,
    Euclidean, the same engine and draws."""
    return _evaluate_seedless_arm_on_sealed_test(
        dataset,
        PCA,
        lambda matrix: project(load_pca(projection), matrix),
        [projection],
        lock,
        sealed_features,
        sealed_splits,
        config,
        outputs,
        job,
        access_log,
    )
