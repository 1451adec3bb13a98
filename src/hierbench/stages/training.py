"""Training stage: final factorial cells and temperature-tuning runs on development data only.

Nothing here reads a sealed artifact: features and splits come from the development side.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hierbench.artifacts import write_json, write_parquet
from hierbench.featurestore import read_labelled_features
from hierbench.metrics import evaluate, query_micro
from hierbench.provenance import JobContext
from hierbench.splits import role_ids, rows_for_ids
from hierbench.training import (
    CellSpec,
    cell_spec,
    embed,
    load_checkpoint,
    save_checkpoint,
    train_cell,
    verification_digest,
)
from hierbench.tuning import selected_tau

log = logging.getLogger(__name__)

VERIFICATION_ROWS = 256
GEOMETRY_NAMES = {"E": "euclidean", "H": "poincare"}


def role_arrays(
    features: str | Path, splits: str | Path, roles: list[tuple[str, str]]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Feature matrix and label codes of each development (split, role), reading files once."""
    ids, labels, matrix = read_labelled_features(features)
    table = pd.read_parquet(splits)
    arrays = []
    for split, role in roles:
        rows = rows_for_ids(ids, role_ids(table, split, role), f"{split}/{role}")
        arrays.append((matrix[rows], labels[rows]))
    return arrays


def role_data(
    features: str | Path, splits: str | Path, split: str, role: str
) -> tuple[np.ndarray, np.ndarray]:
    """Feature matrix and label codes of one development (split, role)."""
    return role_arrays(features, splits, [(split, role)])[0]


def _verify_reload(model: Any, path: Path, spec: CellSpec, features: np.ndarray) -> dict[str, Any]:
    """Reload the checkpoint into a fresh head; its outputs must equal the trained model's."""
    batch = features[:VERIFICATION_ROWS]
    trained = embed(model, batch)
    reloaded = embed(load_checkpoint(path, spec, features.shape[1]), batch)
    return {
        "verification_rows": len(batch),
        "verification_sha256": verification_digest(trained),
        "reload_max_abs_diff": float(np.max(np.abs(trained - reloaded))) if len(batch) else 0.0,
    }


def train_final_cell(
    dataset: str,
    geometry: str,
    loss: str,
    seed: int,
    features: str | Path,
    splits: str | Path,
    config: dict[str, Any],
    outputs: dict[str, str | Path],
    job: JobContext,
    *,
    selection: str | Path | None = None,
) -> dict[str, Any]:
    """Train one final cell on ``final/train`` and write checkpoint, log and record."""
    tau = selected_tau(dataset, geometry, config, selection) if loss == "S" else None
    spec = cell_spec(dataset, geometry, loss, seed, config, tau=tau)
    x, y = role_data(features, splits, "final", "train")
    result = train_cell(x, y, spec)
    model_path = save_checkpoint(result.model, outputs["model"], job, spec)
    record = {
        "dataset": dataset,
        "cell": spec.cell,
        "spec": {k: v for k, v in spec.__dict__.items()},
        "train_examples": len(x),
        "feature_dim": int(x.shape[1]),
        "parameters": result.parameters,
        "initial_weight_hash": result.initial_weight_hash,
        "batch_order_hashes": result.batch_order_hashes,
        "updates": result.updates,
        "updates_per_epoch": result.updates // spec.epochs,
        **_verify_reload(result.model, model_path, spec, x),
    }
    write_parquet(result.log, outputs["log"], job, sort_by=["epoch"], metadata={"cell": spec.cell})
    write_json(record, outputs["record"], job)
    log.info(
        "%s %s: %d updates, reload diff %s",
        dataset,
        spec.cell,
        result.updates,
        record["reload_max_abs_diff"],
    )
    return record


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
        f"map_{level}": float(summary.get(level, np.nan)) for level in ("leaf", "middle", "high")
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
        dataset, geometry, "S", tuning["seed"], config, tau=tau, epochs=tuning["epochs"]
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
