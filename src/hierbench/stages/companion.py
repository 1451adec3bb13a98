"""Companion-method training: E_A and L_A cells with the angle-entailment objective, and the
norms of their embeddings of the validation images (the radial freedom loss A relies on)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hierbench.cells.checkpoints import embed
from hierbench.cells.companion import companion_spec
from hierbench.cells.spec import CellSpec
from hierbench.features.store import role_arrays
from hierbench.losses.entailment_objective import companion_objective
from hierbench.losses.entailment_pairs import short_of_partners
from hierbench.protocol import EUCLIDEAN, LORENTZ
from hierbench.provenance.records import JobContext
from hierbench.training.publishing import train_and_publish

TRAIN_ROLE = ("final", "train")
# The validation images: the development side's tuning query and gallery (never the sealed test).
VALIDATION_ROLES = (("tuning", "query"), ("tuning", "gallery"))
NORM_QUANTILES = {"q05": 0.05, "median": 0.5, "q95": 0.95}
NORM_MEASURES = {
    EUCLIDEAN: "Euclidean norm of the raw embedding",
    LORENTZ: "Euclidean norm of the space components (the hyperbolic distance to the origin is "
    "asinh(sqrt(c) * norm) / sqrt(c), increasing in it)",
}

log = logging.getLogger(__name__)


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
    """Train one companion cell (E_A or L_A) on ``final/train``: the factorial's head (E_A's
    unnormalised), seed, batch order, optimiser and epochs, with the angle-entailment objective
    on the configured pairs (crop features of the same rows for box and cross-image pairs). Its
    record adds the norms of its embeddings of the validation images and of their crops."""
    spec = companion_spec(dataset, geometry, seed, config)
    (x, y), *validation = role_arrays(features, splits, [TRAIN_ROLE, *VALIDATION_ROLES])
    crop_matrix, validation_crops = None, None
    if crops is not None:
        (crop_matrix, crop_labels), *crop_parts = role_arrays(
            crops, splits, [TRAIN_ROLE, *VALIDATION_ROLES]
        )
        if not np.array_equal(crop_labels, y):
            raise ValueError(f"{crops} and {features} disagree on the final/train rows' labels")
        validation_crops = np.concatenate([part for part, _ in crop_parts])
    validation_images = np.concatenate([part for part, _ in validation])
    objective = companion_objective(spec, config, y, crop_matrix)
    extra = {
        "companion": {
            "pairs": config["companion"]["pairs"],
            "temperature_init": config["companion"]["temperature"],
            "cross_image_partners": partner_counts(objective.partners, dataset, spec.cell),
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
        describe=lambda model: {
            "validation_norms": validation_norms(model, spec, validation_images, validation_crops)
        },
    )


def partner_counts(partners: torch.Tensor | None, dataset: str, cell: str) -> dict[str, int]:
    """K and how many training rows have fewer than K cross-image partners (their leaf has
    fewer than K other images), logged; zeros without cross-image pairs."""
    k = 0 if partners is None else partners.shape[1]
    short = 0 if partners is None else short_of_partners(partners)
    if short:
        log.info(
            "%s %s: %d of %d training rows have fewer than %d cross-image partners (their leaf "
            "has fewer other images); each entails the crops of those it has",
            dataset,
            cell,
            short,
            len(partners),
            k,
        )
    return {"k": k, "rows": 0 if partners is None else len(partners), "rows_short_of_k": short}


def validation_norms(
    model: torch.nn.Module, spec: CellSpec, images: np.ndarray, crops: np.ndarray | None
) -> dict[str, Any]:
    """Norms of the trained head's embeddings of the validation images and, row for row, of
    their crops: their spread, and how often a crop (the child) lies farther out than its whole
    image (the parent), which loss A asks for and a unit-sphere head could never give."""
    image_norms = embedding_norms(model, images)
    summary: dict[str, Any] = {
        "rows": "tuning/query + tuning/gallery (the validation images, development side)",
        "measure": NORM_MEASURES[spec.geometry],
        "images": norm_summary(image_norms),
        "crops": None,
        "crop_beyond_image": None,
    }
    if crops is not None:
        crop_norms = embedding_norms(model, crops)
        summary["crops"] = norm_summary(crop_norms)
        summary["crop_beyond_image"] = float(np.mean(crop_norms > image_norms))
    return summary


def embedding_norms(model: torch.nn.Module, features: np.ndarray) -> np.ndarray:
    """Euclidean norms (float64) of the head's embeddings of ``features`` (for a Lorentz head,
    of the space components it outputs)."""
    return np.linalg.norm(embed(model, features).astype(np.float64), axis=1)


def norm_summary(norms: np.ndarray) -> dict[str, float | int]:
    """Count, mean, standard deviation (ddof 0), extremes and quantiles of a set of norms."""
    quantiles = np.quantile(norms, list(NORM_QUANTILES.values()))
    return {
        "count": len(norms),
        "mean": float(norms.mean()),
        "std": float(norms.std()),
        "min": float(norms.min()),
        **{name: float(value) for name, value in zip(NORM_QUANTILES, quantiles, strict=True)},
        "max": float(norms.max()),
    }
