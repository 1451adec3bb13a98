"""The two training objectives of the factorial: relation regression (R) and Taxonomy-SupCon (S).

Both take the batch's (B, B) distance matrix from the head (already sanitised and clipped) and
the (B, 3) integer labels (leaf, middle, high). Relations come from ``relations.relation_matrix``
so losses, metrics and split checks share one definition of c / m / h / o.

- R: SmoothL1 (beta = 1.0, torch's default) between each pair's distance and its relation's
  target, averaged over all B(B−1) ordered non-self pairs (i ≠ j, both orders).
- S: logits s_ij = −d_ij/τ; for each level ℓ ∈ {c, m, h} with strict positives P_ℓ(i),
  L_ℓ = −mean_{i∈A_ℓ} mean_{p∈P_ℓ(i)} [s_ip − log Σ_{a≠i} exp(s_ia)], where A_ℓ are the items
  with at least one positive. Every non-self item stays in the denominator. The total is the
  weighted mean over active levels (weight > 0 and A_ℓ non-empty).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from numbers import Real

import numpy as np
import torch
import torch.nn.functional as F

from hierbench.relations import RELATION_CODES, relation_matrix

DEFAULT_REGRESSION_TARGETS: dict[str, float] = {"c": 0.2, "m": 0.5, "h": 0.8, "o": 1.0}
SMOOTH_L1_BETA = 1.0
SUPCON_LEVELS: tuple[str, ...] = ("c", "m", "h")
LEVEL_NAMES = {"c": "leaf", "m": "middle", "h": "high"}


class NoPositiveError(ValueError):
    """A SupCon batch has no anchor with a strict positive at any level with weight > 0."""


def _check_batch(distances: torch.Tensor, labels: torch.Tensor) -> None:
    """Raise unless distances is a finite (B, B) float matrix and labels a (B, 3) integer one."""
    if not isinstance(labels, torch.Tensor) or labels.ndim != 2 or labels.shape[1] != 3:
        shape = tuple(labels.shape) if hasattr(labels, "shape") else type(labels).__name__
        raise ValueError(f"labels must be a (B, 3) tensor of leaf/middle/high codes, got {shape}")
    if labels.is_floating_point() or labels.is_complex() or labels.dtype == torch.bool:
        raise ValueError(f"labels must be an integer tensor, got {labels.dtype}")
    size = labels.shape[0]
    if size < 2:
        raise ValueError(f"a batch needs at least 2 items to form pairs, got {size}")
    if not isinstance(distances, torch.Tensor) or tuple(distances.shape) != (size, size):
        shape = tuple(distances.shape) if hasattr(distances, "shape") else type(distances).__name__
        raise ValueError(
            f"distances must be a ({size}, {size}) matrix for {size} labels, got {shape}"
        )
    if not distances.is_floating_point():
        raise ValueError(f"distances must be floating point, got {distances.dtype}")
    if not bool(torch.isfinite(distances).all()):
        raise ValueError("distances contain NaN or inf; pass them through sanitise_and_clip first")


def _relations(labels: torch.Tensor) -> np.ndarray:
    """(B, B) relation codes of a label tensor (0 c, 1 m, 2 h, 3 o)."""
    codes = labels.detach().cpu().numpy()
    return relation_matrix(codes, codes)


def _off_diagonal(size: int, device: torch.device) -> torch.Tensor:
    """Boolean (size, size) mask that is True off the diagonal."""
    return ~torch.eye(size, dtype=torch.bool, device=device)


def _target_vector(targets: Mapping[str, float]) -> torch.Tensor:
    """The targets as a float64 vector indexed by relation code, after validation."""
    if not isinstance(targets, Mapping) or set(targets) != set(RELATION_CODES):
        keys = sorted(targets) if isinstance(targets, Mapping) else type(targets).__name__
        raise ValueError(f"regression targets need exactly the keys c, m, h, o; got {keys}")
    vector = torch.zeros(len(RELATION_CODES), dtype=torch.float64)
    for relation, code in RELATION_CODES.items():
        value = targets[relation]
        if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
            raise ValueError(
                f"regression target {relation!r} must be a finite number, got {value!r}"
            )
        vector[code] = float(value)
    return vector


def regression_loss(
    distances: torch.Tensor,
    labels: torch.Tensor,
    targets: Mapping[str, float] = DEFAULT_REGRESSION_TARGETS,
) -> torch.Tensor:
    """SmoothL1 (beta 1) of distance vs relation target, mean over ordered pairs i ≠ j."""
    _check_batch(distances, labels)
    vector = _target_vector(targets).to(device=distances.device, dtype=distances.dtype)
    relation = torch.from_numpy(_relations(labels).astype(np.int64)).to(distances.device)
    mask = _off_diagonal(len(labels), distances.device)
    target = vector[relation]
    return F.smooth_l1_loss(distances[mask], target[mask], reduction="mean", beta=SMOOTH_L1_BETA)


def _check_supcon_settings(tau: float, weights: Sequence[float]) -> tuple[float, float, float]:
    """Validate τ and the level weights; return the weights as three floats."""
    if isinstance(tau, bool) or not isinstance(tau, Real) or not math.isfinite(tau) or tau <= 0:
        raise ValueError(f"SupCon temperature tau must be a finite number > 0, got {tau!r}")
    values = tuple(weights) if isinstance(weights, Sequence) else ()
    valid = len(values) == 3 and all(
        isinstance(w, Real) and not isinstance(w, bool) and math.isfinite(w) and w >= 0
        for w in values
    )
    if not valid:
        raise ValueError(
            "SupCon weights must be three finite numbers >= 0 (leaf, middle, high), "
            f"got {weights!r}"
        )
    if sum(values) <= 0:
        raise ValueError(f"at least one SupCon level weight must be > 0, got {weights!r}")
    return float(values[0]), float(values[1]), float(values[2])


def taxonomy_supcon_loss(
    distances: torch.Tensor,
    labels: torch.Tensor,
    tau: float,
    weights: Sequence[float] = (1.0, 1.0, 1.0),
) -> tuple[torch.Tensor, dict[str, float | None]]:
    """Taxonomy-SupCon total and per-level values (``loss_c/m/h``; None where inactive).

    A level is inactive when its weight is 0 or no item of the batch has a strict positive at
    it; active weights are renormalised. Raises ``NoPositiveError`` when no level is active.
    """
    _check_batch(distances, labels)
    level_weights = _check_supcon_settings(tau, weights)
    relation = _relations(labels)
    size, device = len(labels), distances.device
    off_diagonal = _off_diagonal(size, device)
    logits = (-distances / tau).masked_fill(~off_diagonal, float("-inf"))
    log_prob = logits - torch.logsumexp(logits, dim=1, keepdim=True)
    total, weight_sum, per_level = distances.new_zeros(()), 0.0, {}
    for index, level in enumerate(SUPCON_LEVELS):
        positives_np = relation == RELATION_CODES[level]
        np.fill_diagonal(positives_np, False)
        counts_np = positives_np.sum(axis=1)
        weight = level_weights[index]
        if weight == 0 or not counts_np.any():
            per_level[f"loss_{level}"] = None
            continue
        positives = torch.from_numpy(positives_np).to(device)
        anchors = torch.from_numpy(counts_np > 0).to(device)
        counts = torch.from_numpy(counts_np).to(device=device, dtype=distances.dtype)
        per_anchor = torch.where(positives, log_prob, 0.0).sum(dim=1)[anchors] / counts[anchors]
        value = -per_anchor.mean()
        per_level[f"loss_{level}"] = float(value.detach())
        total = total + weight * value
        weight_sum += weight
    if weight_sum == 0:
        active = [
            f"{LEVEL_NAMES[level]} ({level})"
            for level, weight in zip(SUPCON_LEVELS, level_weights, strict=True)
            if weight > 0
        ]
        raise NoPositiveError(
            f"no item in this batch of {size} has a strict positive at any weighted SupCon level "
            f"({', '.join(active)}; weights {level_weights}); use larger batches or a sampler "
            "that guarantees positives"
        )
    return total / weight_sum, per_level
