"""HIER-style baseline training: the factorial's Poincaré head with HIER's objective."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from hierbench.cells.spec import CellSpec, cell_spec, own_epoch_budgets
from hierbench.features.store import role_data
from hierbench.losses.hier import HierObjective, HierSettings
from hierbench.protocol import HIER, POINCARE
from hierbench.provenance.records import JobContext
from hierbench.training.publishing import train_and_publish


def hier_cell_spec(
    dataset: str, seed: int, config: dict[str, Any]
) -> tuple[CellSpec, HierSettings]:
    """The HIER-style cell's spec and loss settings: the factorial's H cell recipe, with the
    baseline's own epoch budget when ``hier.epochs`` is set (null: ``training.epochs``)."""
    block = config["datasets"][dataset]["controls"]["baselines"]["hier"]
    settings = HierSettings.from_config({k: v for k, v in block.items() if k != "epochs"})
    epochs = own_epoch_budgets(config, dataset).get(HIER)
    return cell_spec(dataset, POINCARE, HIER, seed, config, epochs=epochs), settings


def hier_objective(
    spec: CellSpec, settings: HierSettings, labels: np.ndarray, seed: int
) -> HierObjective:
    """HIER's objective for a cell of ``spec`` trained on rows with ``labels``: a proxy per
    leaf class among them, the head's output width and curvature."""
    leaves = sorted({int(code) for code in labels[:, 0]})
    curvature = float(spec.curvature or 0.0)
    return HierObjective(leaves, spec.embedding_dim, curvature, settings, seed, spec.distance_clip)


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
    seed, batch order, optimiser and epochs (unless ``hier.epochs`` sets its own), with HIER's
    objective on leaf labels only."""
    spec, settings = hier_cell_spec(dataset, seed, config)
    x, y = role_data(features, splits, "final", "train")
    objective = hier_objective(spec, settings, y, seed)
    extra = {
        "hier": dataclasses.asdict(settings),
        "objective_parameters": sum(p.numel() for p in objective.parameters()),
    }
    return train_and_publish(
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
