"""Relation regression (R): SmoothL1 (beta = 1.0, torch's default) between each pair's distance
and its relation's target, averaged over all B(B−1) ordered non-self pairs (i ≠ j, both orders).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Real
from typing import Any

import torch
import torch.nn.functional as F

from hierbench.losses.common import LEVEL_CODES, check_batch, off_diagonal, positive_masks
from hierbench.relations import RELATION_CODES

DEFAULT_REGRESSION_TARGETS: dict[str, float] = {"c": 0.2, "m": 0.5, "h": 0.8, "o": 1.0}
SMOOTH_L1_BETA = 1.0


def _relation_targets(
    labels: torch.Tensor, targets: Mapping[str, float], dtype: torch.dtype
) -> torch.Tensor:
    """(…, B, B) regression target of every pair, from its (disjoint) c / m / h / o relation."""
    masks = positive_masks(labels).to(dtype)  # (…, 3, B, B); o where all three masks are 0
    other = targets["o"]
    steps = torch.tensor([targets[level] - other for level in LEVEL_CODES], dtype=dtype)
    # the masks are disjoint 0/1 values, so this sum is exact
    return (masks * steps.to(labels.device)[:, None, None]).sum(dim=-3) + other


def _checked_targets(targets: Mapping[str, float]) -> dict[str, float]:
    """The regression targets as floats keyed c, m, h, o, after validation."""
    if not isinstance(targets, Mapping) or set(targets) != set(RELATION_CODES):
        keys = sorted(targets) if isinstance(targets, Mapping) else type(targets).__name__
        raise ValueError(f"regression targets need exactly the keys c, m, h, o; got {keys}")
    for relation, value in targets.items():
        if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
            raise ValueError(
                f"regression target {relation!r} must be a finite number, got {value!r}"
            )
    return {relation: float(value) for relation, value in targets.items()}


def regression_loss(
    distances: torch.Tensor,
    labels: torch.Tensor,
    targets: Mapping[str, float] = DEFAULT_REGRESSION_TARGETS,
    *,
    sanitised: bool = False,
) -> torch.Tensor:
    """SmoothL1 (beta 1) of distance vs relation target, mean over ordered pairs i ≠ j
    (``sanitised``: the distances are known finite, not checked); stacked (K, B, B) distances
    give one mean per cell, (K,)."""
    check_batch(distances, labels, finite=not sanitised)
    target = _relation_targets(labels, _checked_targets(targets), distances.dtype)
    per_pair = F.smooth_l1_loss(distances, target, reduction="none", beta=SMOOTH_L1_BETA)
    size = labels.shape[-2]
    kept = per_pair.masked_fill(~off_diagonal(size, distances.device), 0.0)
    return kept.sum(dim=(-2, -1)) / (size * (size - 1))


def regression_objective(
    distances: torch.Tensor, labels: torch.Tensor, spec: Any
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The R objective of a cell (``spec.regression_targets``) on sanitised distances; no
    per-level values to log."""
    return regression_loss(distances, labels, spec.regression_targets, sanitised=True), {}
