"""Training-curves stage (issue #63): a bundle's loss per epoch, one panel per kind of cell,
the τ search's validation score against τ, and the duration searches' validation score per
epoch, for one dataset."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd

from hierbench.cells.cell_folders import cell_key
from hierbench.effects.curves import (
    DurationSearch,
    curves_figure,
    duration_figure,
    loss_problems,
    problems_caption,
    tau_figure,
)
from hierbench.effects.figure_publishing import publish_figure
from hierbench.provenance.artifacts import write_text
from hierbench.provenance.records import JobContext

log = logging.getLogger(__name__)


def build_training_curves(
    dataset: str,
    kind: str,
    logs: list[str | Path],
    outputs: list[str],
    problems: str | Path,
    job: JobContext,
) -> None:
    """Write the training-curves figure of a kind of cell (``outputs``: PNG, PDF) from its
    cells' train logs, and the caption's paragraph naming each cell whose loss went
    non-finite or flat (``problems``, reStructuredText), logging each such cell too."""
    frames = {cell_key(path): pd.read_parquet(path) for path in logs}
    found = loss_problems(frames)
    for (cell, seed), problem in found.items():
        log.warning("%s %s seed %d: loss %s", dataset, cell, seed, problem)
    figure = curves_figure(frames, f"{dataset}: {kind} cells, training loss")
    publish_figure(figure, outputs, job)
    write_text(problems_caption(found), problems, job)
    log.info("%s training curves of %s written (%d cells)", dataset, kind, len(frames))


def build_tau_curves(
    dataset: str, scores: list[str | Path], outputs: list[str], job: JobContext
) -> None:
    """Write the τ search's validation score against τ (``outputs``: PNG, PDF) from its runs'
    score files."""
    rows = [json.loads(Path(path).read_text(encoding="utf-8")) for path in scores]
    frame = pd.DataFrame(rows, columns=["geometry", "tau", "score"]).astype({"score": float})
    figure = tau_figure(frame, f"{dataset}: τ search on validation")
    publish_figure(figure, outputs, job)
    log.info("%s τ search figure written (%d runs)", dataset, len(rows))


def duration_searches(
    semantic: list[str | Path], outer: list[str | Path]
) -> dict[str, DurationSearch]:
    """Each duration search's per-arm validation scores and chosen epochs, by panel title:
    ``semantic`` (from each arm's ``duration.json``) and each outer split (its
    ``durations.json``)."""
    searches: dict[str, dict[str, tuple[list[float | None], int]]] = {}
    for path in semantic:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
        searches.setdefault("semantic", {})[record["arm"]] = (record["scores"], record["epochs"])
    for path in outer:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
        searches[record["outer"]] = {
            arm: (entry["scores"], entry["epochs"]) for arm, entry in record["arms"].items()
        }
    return searches


def build_duration_curves(
    dataset: str,
    semantic: list[str | Path],
    outer: list[str | Path],
    outputs: list[str],
    job: JobContext,
) -> None:
    """Write the duration searches' validation score per epoch (``outputs``: PNG, PDF) from
    the semantic control's and the outer splits' duration files."""
    searches = duration_searches(semantic, outer)
    figure = duration_figure(searches, f"{dataset}: duration searches on validation")
    publish_figure(figure, outputs, job)
    log.info("%s duration searches drawn: %s", dataset, ", ".join(sorted(searches)))
