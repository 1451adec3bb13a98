"""The companion method's cells (E_A, L_A): their spec, their entailment pairs and objective from
the config and the training rows, and their learned curvature.

Every decision the rules need about the companion method is here, tested; the trainer only sees
a trainable objective.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import torch

from hierbench.cells import CellSpec, cell_spec
from hierbench.entailment_pairs import PairSources, cross_image_partners
from hierbench.losses.entailment_objective import EntailmentObjective
from hierbench.protocol import COMPANION_CELLS, COMPANION_LOSS, LORENTZ, cell_name


class CompanionError(ValueError):
    """The companion method cannot run as configured; the message names the key."""


def companion_enabled(config: dict[str, Any]) -> bool:
    """Whether the E_A and L_A cells run."""
    return bool(config.get("companion", {}).get("enabled", False))


def companion_cells(config: dict[str, Any]) -> list[str]:
    """The companion cells' names (``EA-42``, ``LA-42``, ...), none when switched off."""
    if not companion_enabled(config):
        return []
    seeds = config["training"]["seeds"]
    return [cell_name(g, loss, seed) for g, loss in COMPANION_CELLS for seed in seeds]


def pair_sources(config: dict[str, Any]) -> PairSources:
    """The configured pair sources; none at all is an error naming the key."""
    pairs = config["companion"]["pairs"]
    sources = PairSources(
        boxes=bool(pairs["boxes"]),
        cross_image=int(pairs["cross_image"]),
        taxonomy=bool(pairs["taxonomy"]),
    )
    if not (sources.needs_crops or sources.taxonomy):
        raise CompanionError(
            "companion.pairs: boxes, cross_image and taxonomy are all off: no entailment pair"
        )
    return sources


def companion_spec(dataset: str, geometry: str, seed: int, config: dict[str, Any]) -> CellSpec:
    """A companion cell's spec: the factorial's recipe with loss A; the L head starts at the
    dataset's curvature (then learns it) and has no tangent radius."""
    if geometry not in (g for g, _ in COMPANION_CELLS):
        raise CompanionError(f"companion cells run on heads {[g for g, _ in COMPANION_CELLS]}")
    base = cell_spec(dataset, "E", COMPANION_LOSS, seed, config)
    if geometry == LORENTZ:
        curvature = float(config["datasets"][dataset]["hyperbolic"]["curvature"])
        return replace(base, geometry=LORENTZ, curvature=curvature, radius=None)
    return base


def group_indices(labels: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """(N, 2) middle and high group indices of the training rows (0-based over the training
    groups) and (M,) each middle group's high group index."""
    middles, middle_index = np.unique(labels[:, 1], return_inverse=True)
    _, high_index = np.unique(labels[:, 2], return_inverse=True)
    high_of_middle = np.full(len(middles), -1, dtype=np.int64)
    high_of_middle[middle_index] = high_index
    if len(np.unique(np.column_stack([middle_index, high_index]), axis=0)) != len(middles):
        raise CompanionError("a middle group of the training data sits under two high groups")
    groups = np.column_stack([middle_index, high_index]).astype(np.int64)
    return torch.from_numpy(groups), torch.from_numpy(high_of_middle)


def companion_objective(
    spec: CellSpec, config: dict[str, Any], labels: np.ndarray, crops: np.ndarray | None
) -> EntailmentObjective:
    """The loss-A objective of a cell over its training rows (``labels`` (N, 3) codes, ``crops``
    (N, F) crop features in the same row order); cross-image partners drawn with the seed."""
    sources = pair_sources(config)
    block = config["companion"]
    groups, high_of_middle = group_indices(labels)
    leaves = torch.as_tensor(labels[:, 0], dtype=torch.long)
    generator = torch.Generator().manual_seed(spec.seed)
    partners = cross_image_partners(leaves, sources.cross_image, generator)
    return EntailmentObjective(
        spec.geometry,
        spec.embedding_dim,
        sources,
        groups,
        high_of_middle,
        crops=None if crops is None else torch.as_tensor(crops, dtype=torch.float32),
        partners=partners if sources.cross_image else None,
        temperature=float(block["temperature"]),
        init_seed=int(block["init_seed"]),
    )
