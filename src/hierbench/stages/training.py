"""Training stage: the final factorial cells, on development data only.

Nothing here reads a sealed artifact: features and splits come from the development side.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from hierbench.artifacts import publish, write_json, write_parquet
from hierbench.cells import (
    VERIFICATION_ROWS,
    checkpoint_writer,
    embed,
    load_checkpoint,
    verification_digest,
)
from hierbench.cellspec import CellSpec, cell_spec
from hierbench.companion import companion_spec
from hierbench.controls.semantic import semantic_arm, semantic_spec, training_labels
from hierbench.devices import config_device
from hierbench.featurestore import role_arrays, role_data
from hierbench.losses.entailment_objective import companion_objective
from hierbench.losses.hier import HierObjective, HierSettings
from hierbench.protocol import HIER, POINCARE, SUPCON
from hierbench.provenance import JobContext
from hierbench.training import train_cell
from hierbench.tuning import selected_tau

log = logging.getLogger(__name__)


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
    hyperbolic: dict[str, float] | None = None,
    label: str | None = None,
    split: str = "final",
) -> dict[str, Any]:
    """Train one final cell on ``final/train`` and write checkpoint, log and record.

    ``hyperbolic`` trains at another Poincaré operating point (the curvature control);
    ``label`` then names the cell in its record and in the fairness audit. ``split`` trains on
    another split's train side instead (an outer split, ``outer-1``).
    """
    tau = selected_tau(dataset, geometry, config, selection) if loss == SUPCON else None
    spec = cell_spec(dataset, geometry, loss, seed, config, tau=tau, hyperbolic=hyperbolic)
    x, y = role_data(features, splits, split, "train")
    extra = {"train_split": split} if split != "final" else None  # final records unchanged
    return _train_and_write(
        dataset, spec, x, y, outputs, job, label=label, config=config, extra=extra
    )


def _train_and_write(
    dataset: str,
    spec: CellSpec,
    x: np.ndarray,
    y: np.ndarray,
    outputs: dict[str, str | Path],
    job: JobContext,
    *,
    label: str | None,
    config: dict[str, Any],
    objective: torch.nn.Module | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train a cell on the config's device and publish its checkpoint, training log and record
    (``extra`` adds record keys: a baseline's objective settings)."""
    device = config_device(config)
    result = train_cell(x, y, spec, objective=objective, device=device)
    model_path = publish(outputs["model"], checkpoint_writer(result.model, spec), job)
    record = {
        "dataset": dataset,
        "cell": label or spec.cell,
        "spec": {k: v for k, v in spec.__dict__.items()},
        "train_examples": len(x),
        "feature_dim": int(x.shape[1]),
        "parameters": result.parameters,
        "initial_weight_hash": result.initial_weight_hash,
        "batch_order_hashes": result.batch_order_hashes,
        **({"initial_extra_hashes": extras} if (extras := result.initial_extra_hashes) else {}),
        "updates": result.updates,
        "updates_per_epoch": result.updates // spec.epochs,
        "device": device.type,
        **_verify_reload(result.model, model_path, spec, x),
        **(extra or {}),
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


def train_semantic_cell(
    dataset: str,
    arm: str,
    seed: int,
    features: str | Path,
    splits: str | Path,
    taxonomies: tuple[str | Path, str | Path],
    duration: str | Path,
    config: dict[str, Any],
    outputs: dict[str, str | Path],
    job: JobContext,
) -> dict[str, Any]:
    """Train one semantic-control cell on ``final/train`` for its arm's chosen epochs, on the
    arm's labels (the shuffled taxonomy's for the shuffle arm)."""
    chosen = semantic_arm(config, dataset, arm)
    epochs = int(json.loads(Path(duration).read_text(encoding="utf-8"))["epochs"])
    spec = semantic_spec(config, dataset, chosen, seed, epochs)
    x, y = role_data(features, splits, "final", "train")
    taxonomy, shuffled = (pd.read_parquet(path) for path in taxonomies)
    labels = training_labels(y, chosen, taxonomy, shuffled)
    return _train_and_write(
        dataset, spec, x, labels, outputs, job, label=f"{arm}-{seed}", config=config
    )


def train_hier_cell(
    dataset: str,
    seed: int,
    features: str | Path,
    splits: str | Path,
    config: dict[str, Any],
    outputs: dict[str, str | Path],
    job: JobContext,
) -> dict[str, Any]:
    """Train one HIER-style baseline cell on ``final/train``: the factorial's Poincaré head,
    seed, batch order, optimiser and epochs, with HIER's objective on leaf labels only."""
    block = config["datasets"][dataset]["controls"]["baselines"]["hier"]
    settings = HierSettings.from_config(block)
    spec = cell_spec(dataset, POINCARE, HIER, seed, config)
    x, y = role_data(features, splits, "final", "train")
    objective = HierObjective(
        sorted({int(code) for code in y[:, 0]}),
        spec.embedding_dim,
        float(spec.curvature or 0.0),
        settings,
        seed,
        spec.distance_clip,
    )
    extra = {
        "hier": dataclasses.asdict(settings),
        "objective_parameters": sum(p.numel() for p in objective.parameters()),
    }
    return _train_and_write(
        dataset,
        spec,
        x,
        y,
        outputs,
        job,
        label=f"{HIER}-{seed}",
        config=config,
        objective=objective,
        extra=extra,
    )


def train_companion_cell(
    dataset: str,
    geometry: str,
    seed: int,
    features: str | Path,
    crops: str | Path | None,
    splits: str | Path,
    config: dict[str, Any],
    outputs: dict[str, str | Path],
    job: JobContext,
) -> dict[str, Any]:
    """Train one companion cell (E_A or L_A) on ``final/train``: the factorial's head, seed,
    batch order, optimiser and epochs, with the angle-entailment objective on the configured
    pairs (crop features of the same rows for box and cross-image pairs)."""
    spec = companion_spec(dataset, geometry, seed, config)
    ((x, y),) = role_arrays(features, splits, [("final", "train")])
    crop_matrix = None
    if crops is not None:
        ((crop_matrix, crop_labels),) = role_arrays(crops, splits, [("final", "train")])
        if not np.array_equal(crop_labels, y):
            raise ValueError(f"{crops} and {features} disagree on the final/train rows' labels")
    objective = companion_objective(spec, config, y, crop_matrix)
    extra = {
        "companion": {
            "pairs": config["companion"]["pairs"],
            "temperature_init": config["companion"]["temperature"],
        }
    }
    return _train_and_write(
        dataset,
        spec,
        x,
        y,
        outputs,
        job,
        label=spec.cell,
        config=config,
        objective=objective,
        extra=extra,
    )
