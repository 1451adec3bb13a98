"""Sealed evaluation of the companion cells ranked by exterior angle, under the Final lock.

A sensitivity of the ranking (``hierbench.metrics.angles``): the same cell, sealed draws, engine
and output formats as its distance evaluation (``stages.evaluation``), the gallery ranked by
ascending ext(q, g) in the head's own geometry instead of by distance; rows carry a ``ranking``
column. Apart from ``stages.evaluation`` so that the distance evaluations do not depend on the
angle code; both score through ``hierbench.metrics.sealed_scoring``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from hierbench.cells.spec import CellSpec
from hierbench.metrics.angles import head_angle_scores
from hierbench.metrics.scoring import ranking_settings
from hierbench.metrics.sealed_scoring import (
    PER_QUERY_ORDER,
    SUMMARY_ORDER,
    SealedCell,
    score_cell_on_sealed_test,
)
from hierbench.protocol import ANGLE_RANKING, COMPANION_LOSS
from hierbench.provenance.artifacts import write_parquet
from hierbench.provenance.records import JobContext


def evaluate_angles_on_sealed_test(
    dataset: str,
    cell: SealedCell,
    config: dict[str, Any],
    outputs: dict[str, str | Path],
    job: JobContext,
    *,
    access_log: str | Path,
) -> pd.DataFrame:
    """Verify the lock, then score one companion cell on every sealed draw, its gallery ranked
    by the exterior angle at the query (Lorentz at the learned curvature, or Euclidean)."""

    def angle_metric(model: Any, spec: CellSpec) -> dict[str, Any]:
        """The engine's settings with the head's angle scores in place of a distance."""
        if spec.loss != COMPANION_LOSS:
            raise ValueError(
                f"{dataset} {spec.cell}: the angle ranking is for the companion cells (loss "
                f"{COMPANION_LOSS}), not loss {spec.loss!r}"
            )
        return {**ranking_settings(config), "pair_scores": head_angle_scores(model)}

    scores = score_cell_on_sealed_test(
        dataset,
        cell,
        config,
        access_log=access_log,
        reader=job.rule,
        metric_for=angle_metric,
        labels={"ranking": ANGLE_RANKING},
    )
    write_parquet(scores.per_query, outputs["per_query"], job, sort_by=list(PER_QUERY_ORDER))
    write_parquet(scores.summary, outputs["summary"], job, sort_by=list(SUMMARY_ORDER))
    return scores.summary


def evaluate_angles_of_cells_on_sealed_test(
    dataset: str,
    cells: Sequence[tuple[SealedCell, dict[str, str | Path]]],
    config: dict[str, Any],
    job: JobContext,
    *,
    access_log: str | Path,
) -> list[pd.DataFrame]:
    """Score each companion cell of one sealed-evaluation job in turn by exterior angle, into
    its own two files (``sealed_scoring.sealed_cells`` pairs them)."""
    return [
        evaluate_angles_on_sealed_test(dataset, cell, config, outputs, job, access_log=access_log)
        for cell, outputs in cells
    ]
