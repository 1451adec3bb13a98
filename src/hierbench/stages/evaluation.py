"""Sealed evaluation stage: strict retrieval metrics on the test draws, under the Final lock.

Every function here that reads test data says so in its name, and verifies the lock first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hierbench.baselines.pca import load_pca, project
from hierbench.cells.checkpoints import head_ranking
from hierbench.cells.spec import CellSpec
from hierbench.features.store import read_labelled_features
from hierbench.metrics.scoring import (
    l2_normalised,
    metric_settings,
    qg_seeds,
    ranking_settings,
    score_draws,
)
from hierbench.metrics.sealed_scoring import (
    PER_QUERY_ORDER,
    SUMMARY_ORDER,
    SealedCell,
    SealedScores,
    note_test_access,
    score_cell_on_sealed_test,
)
from hierbench.protocol import EUCLIDEAN, FROZEN, GEOMETRY_NAMES, PCA
from hierbench.provenance.artifacts import write_parquet
from hierbench.provenance.lock import verify_against_lock
from hierbench.provenance.records import JobContext

log = logging.getLogger(__name__)


def _write_sealed_scores(
    scores: SealedScores, outputs: dict[str, str | Path], job: JobContext
) -> None:
    """Write a cell's or an arm's per-query and summary parquets (labelled rows)."""
    write_parquet(scores.per_query, outputs["per_query"], job, sort_by=list(PER_QUERY_ORDER))
    write_parquet(scores.summary, outputs["summary"], job, sort_by=list(SUMMARY_ORDER))


def evaluate_cell_on_sealed_test(
    dataset: str,
    cell: SealedCell,
    config: dict[str, Any],
    outputs: dict[str, str | Path],
    job: JobContext,
    *,
    access_log: str | Path,
    variant: str | None = None,
) -> pd.DataFrame:
    """Verify the lock, then score one final cell on every sealed query/gallery draw, ranked by
    its head's distance (at a Lorentz head's learned curvature); on the CPU (see
    ``sealed_scoring.score_cell_on_sealed_test``).

    ``variant`` labels a control's cell (a curvature point) in a ``variant`` column; a
    HIER-style baseline cell is the arm ``hier``.
    """

    def distance_metric(model: Any, spec: CellSpec) -> dict[str, Any]:
        """The engine's settings for the cell's head: its distance, clipped at the test clip."""
        clip = config["training"]["distance_clip_test"]
        return ranking_settings(config) | head_ranking(model, spec, clip)

    scores = score_cell_on_sealed_test(
        dataset,
        cell,
        config,
        access_log=access_log,
        reader=job.rule,
        metric_for=distance_metric,
        labels={"variant": variant} if variant else {},
    )
    _write_sealed_scores(scores, outputs, job)
    return scores.summary


def evaluate_cells_on_sealed_test(
    dataset: str,
    cells: Sequence[tuple[SealedCell, dict[str, str | Path]]],
    config: dict[str, Any],
    job: JobContext,
    *,
    access_log: str | Path,
    variant: str | None = None,
) -> list[pd.DataFrame]:
    """Score each cell of one sealed-evaluation job in turn, into its own two files
    (``sealed_scoring.sealed_cells`` pairs them): the same bytes as a job per cell."""
    return [
        evaluate_cell_on_sealed_test(
            dataset, cell, config, outputs, job, access_log=access_log, variant=variant
        )
        for cell, outputs in cells
    ]


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
    note_test_access(access_log, f"{dataset} {arm} ({job.rule})")
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
    scores = SealedScores(per_query.assign(**identity), summary.assign(**identity))
    _write_sealed_scores(scores, outputs, job)
    return scores.summary


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
