"""Train one cell and publish what every training job writes: checkpoint, log and record.

Shared by the training stages (factorial, controls, baselines, companion), which differ only
in how they build the cell's spec, data and objective; a bundle of cells trained together
publishes each cell's files as a cell trained alone does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hierbench.cells.checkpoints import (
    VERIFICATION_ROWS,
    checkpoint_writer,
    embed,
    load_checkpoint,
    verification_digest,
)
from hierbench.cells.spec import CellSpec
from hierbench.devices import config_device
from hierbench.losses.registry import objective
from hierbench.provenance.artifacts import publish, write_json, write_parquet
from hierbench.provenance.records import JobContext
from hierbench.training.bundle import train_bundle
from hierbench.training.trainer import TrainResult, train_cell

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


def train_and_publish(
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
    describe: Callable[[torch.nn.Module], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Train a cell on the config's device and publish its checkpoint, training log and record
    (``extra`` adds record keys: a baseline's objective settings; ``describe(model)`` adds keys
    measured on the trained head: a companion cell's embedding norms)."""
    device = config_device(config)
    result = train_cell(x, y, spec, objective=objective, device=device)
    return publish_cell(
        dataset,
        spec,
        result,
        x,
        outputs,
        job,
        label=label,
        device=device,
        extra=extra,
        describe=describe,
    )


def train_bundle_and_publish(
    dataset: str,
    kind: str,
    members: Sequence[tuple[str, CellSpec, str]],
    x: np.ndarray,
    y: np.ndarray,
    outputs: Mapping[str, str | Path],
    job: JobContext,
    *,
    config: dict[str, Any],
    extra: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Train a bundle's cells together on the config's device and publish each cell's three
    files as a cell trained alone would, then the bundle's manifest (its cells, in order;
    written last, so it exists only beside a complete bundle).

    ``members`` holds each cell's output key, spec and label (the name its record and the
    fairness audit use); ``outputs`` are the bundle job's named outputs, ``<file>_<key>`` for
    each cell and ``manifest``. Each record names the bundle's cells, plus the ``extra`` keys.
    """
    files: dict[str, dict[str, str | Path]] = {key: {} for key, _, _ in members}
    for name, path in outputs.items():
        if name != "manifest":
            file, key = name.split("_", 1)
            files[key][file] = path
    device = config_device(config)
    specs = [spec for _, spec, _ in members]
    losses = {spec.loss: objective(spec.loss, config).loss for spec in specs}
    results = train_bundle(x, y, specs, device=device, losses=losses)
    labels = [label for _, _, label in members]
    extra = {**(extra or {}), "bundle": labels}
    records = [
        publish_cell(
            dataset, spec, result, x, files[key], job, label=label, device=device, extra=extra
        )
        for (key, spec, label), result in zip(members, results, strict=True)
    ]
    write_json({"dataset": dataset, "kind": kind, "cells": labels}, outputs["manifest"], job)
    return records


def publish_cell(
    dataset: str,
    spec: CellSpec,
    result: TrainResult,
    x: np.ndarray,
    outputs: dict[str, str | Path],
    job: JobContext,
    *,
    label: str | None,
    device: torch.device,
    extra: dict[str, Any] | None = None,
    describe: Callable[[torch.nn.Module], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Publish a trained cell's checkpoint, training log and record (the record's keys as
    :func:`train_and_publish` describes them)."""
    model_path = publish(outputs["model"], checkpoint_writer(result.model, spec), job)
    record = {
        "dataset": dataset,
        "cell": label or spec.cell,
        "spec": spec.as_dict(),
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
        **(describe(result.model) if describe is not None else {}),
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
