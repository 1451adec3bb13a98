"""Temperature-tuning stage: one SupCon run per (geometry, τ) scored on validation only, and the
selection of each geometry's temperature from those scores. Nothing here reads a sealed artifact.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hierbench.artifacts import write_json, write_parquet
from hierbench.cells import CellSpec, cell_spec, embed
from hierbench.featurestore import role_arrays, role_data
from hierbench.metrics import evaluate, query_micro
from hierbench.protocol import GEOMETRY_NAMES, LEVELS, SUPCON
from hierbench.provenance import JobContext
from hierbench.training import train_cell
from hierbench.tuning import select_temperatures

log = logging.getLogger(__name__)


def write_selection(
    scores: list[str | Path], out_table: str | Path, job: JobContext
) -> pd.DataFrame:
    """Read every tuning score file and write the candidates with the winners flagged."""
    records = [json.loads(Path(p).read_text(encoding="utf-8")) for p in scores]
    table = select_temperatures(records)
    write_parquet(table, out_table, job, sort_by=["geometry", "tau"])
    log.info("temperature selection:\n%s", table.to_string(index=False))
    return table


def validation_score(
    model: Any, spec: CellSpec, features: str | Path, splits: str | Path, ks: list[int]
) -> dict[str, float]:
    """Query-micro mAP per level on the tuning query/gallery, and their hierarchy mean."""
    (query_x, query_y), (gallery_x, gallery_y) = role_arrays(
        features, splits, [("tuning", "query"), ("tuning", "gallery")]
    )
    frame = evaluate(
        embed(model, query_x),
        embed(model, gallery_x),
        query_y,
        gallery_y,
        geometry=GEOMETRY_NAMES[spec.geometry],
        curvature=spec.curvature,
        ks=tuple(ks),
    )
    summary = query_micro(frame).set_index("level")["map"]
    scores = {
        f"map_{level}": float(summary.get(level, np.nan)) for level in LEVELS
    }
    scores["score"] = float(np.nanmean([scores["map_middle"], scores["map_high"]]))
    return scores


def tune_temperature(
    dataset: str,
    geometry: str,
    tau: float,
    features: str | Path,
    splits: str | Path,
    config: dict[str, Any],
    out_score: str | Path,
    job: JobContext,
) -> dict[str, Any]:
    """One tuning run: Taxonomy-SupCon at ``tau`` on tuning/train, scored on validation only."""
    tuning = config["tuning"]
    spec = cell_spec(
        dataset, geometry, SUPCON, tuning["seed"], config, tau=tau, epochs=tuning["epochs"]
    )
    x, y = role_data(features, splits, "tuning", "train")
    result = train_cell(x, y, spec)
    scores = validation_score(
        result.model, spec, features, splits, config["evaluation"]["recall_ks"]
    )
    # A level without valid validation queries has no mAP: null in JSON, NaN when read back.
    finite = {key: (value if math.isfinite(value) else None) for key, value in scores.items()}
    record = {"dataset": dataset, "geometry": geometry, "tau": tau, "seed": spec.seed}
    record |= {"epochs": spec.epochs, **finite}
    write_json(record, out_score, job)
    log.info("%s tuning %s tau %s: %s", dataset, geometry, tau, scores)
    return record
