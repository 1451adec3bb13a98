"""Training-curves stage (issue #63): a bundle's loss per epoch, one panel per kind of cell,
and the τ search's validation score against τ, for one dataset."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd

from hierbench.effects.curves import curves_figure, loss_problems, tau_figure
from hierbench.effects.figures import figure_writer
from hierbench.provenance.artifacts import publish
from hierbench.provenance.records import JobContext

log = logging.getLogger(__name__)

CELLS_FOLDER = "cells"


def cell_key(log_path: str | Path) -> tuple[str, int]:
    """A train log's cell as (kind, seed): its folder below ``cells/`` without the seed
    (``semantic/A/ES-42/train_log.parquet`` gives ``("semantic/A/ES", 42)``)."""
    parts = Path(log_path).parts
    if CELLS_FOLDER not in parts[:-2]:
        raise ValueError(f"{log_path} is not a train log below a run's {CELLS_FOLDER}/ folder")
    below = len(parts) - 1 - parts[::-1].index(CELLS_FOLDER)
    folder = "/".join(parts[below + 1 : -1])
    kind, _, seed = folder.rpartition("-")
    if not kind or not seed.isdigit():
        raise ValueError(f"cell folder {folder!r} of {log_path} does not end in -<seed>")
    return kind, int(seed)


def build_training_curves(
    dataset: str, kind: str, logs: list[str | Path], outputs: list[str], job: JobContext
) -> None:
    """Write the training-curves figure of a kind of cell (``outputs``: PNG, PDF) from its
    cells' train logs, logging each cell whose loss went non-finite or flat."""
    frames = {cell_key(path): pd.read_parquet(path) for path in logs}
    for (cell, seed), problem in loss_problems(frames).items():
        log.warning("%s %s seed %d: loss %s", dataset, cell, seed, problem)
    figure = curves_figure(frames, f"{dataset}: {kind} cells, training loss")
    for target in outputs:
        publish(target, figure_writer(figure, Path(target).suffix.lstrip(".")), job)
    log.info("%s training curves of %s written (%d cells)", dataset, kind, len(frames))


def build_tau_curves(
    dataset: str, scores: list[str | Path], outputs: list[str], job: JobContext
) -> None:
    """Write the τ search's validation score against τ (``outputs``: PNG, PDF) from its runs'
    score files."""
    rows = [json.loads(Path(path).read_text(encoding="utf-8")) for path in scores]
    frame = pd.DataFrame(rows, columns=["geometry", "tau", "score"]).astype({"score": float})
    figure = tau_figure(frame, f"{dataset}: τ search on validation")
    for target in outputs:
        publish(target, figure_writer(figure, Path(target).suffix.lstrip(".")), job)
    log.info("%s τ search figure written (%d runs)", dataset, len(rows))
