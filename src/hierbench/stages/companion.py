"""Companion-method training: E_A and L_A cells with the angle-entailment objective."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from hierbench.cell_publishing import train_and_publish
from hierbench.companion import companion_spec
from hierbench.featurestore import role_arrays
from hierbench.losses.entailment_objective import companion_objective
from hierbench.provenance import JobContext


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
    return train_and_publish(
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
