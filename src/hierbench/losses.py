"""The two training objectives of the factorial: relation regression (R) and Taxonomy-SupCon (S).

Both take the batch's (B, B) distance matrix from the head (already sanitised and clipped) and
the (B, 3) integer labels (leaf, middle, high). Relations come from
``relations.strict_relation_masks``, the project's one definition of c / m / h / o. Everything
is whole-matrix tensor work on the distances' device, without boolean indexing, because it runs
once per update; SupCon reads its per-level values back once per call for the training log.

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

import torch
import torch.nn.functional as F

from hierbench.relations import RELATION_CODES, strict_relation_masks

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


def _positive_masks(labels: torch.Tensor) -> torch.Tensor:
    """(3, B, B) strict positive masks for levels c, m, h; the diagonal (self) is False."""
    columns = labels.T.contiguous()  # (3, B): per-level comparisons on contiguous memory
    same = columns[:, :, None] == columns[:, None, :]
    masks = torch.stack(strict_relation_masks(same[0], same[1], same[2]))
    masks.diagonal(dim1=1, dim2=2).fill_(False)
    return masks


def _relation_targets(
    labels: torch.Tensor, targets: Mapping[str, float], dtype: torch.dtype
) -> torch.Tensor:
    """(B, B) regression target of every pair, from its (disjoint) c / m / h / o relation."""
    masks = _positive_masks(labels).to(dtype)  # o where all three masks are 0
    other = targets["o"]
    steps = [targets[level] - other for level in SUPCON_LEVELS]
    return torch.tensordot(torch.tensor(steps, dtype=dtype, device=labels.device), masks, 1) + other


def _off_diagonal(size: int, device: torch.device) -> torch.Tensor:
    """Boolean (size, size) mask that is True off the diagonal."""
    return ~torch.eye(size, dtype=torch.bool, device=device)


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
) -> torch.Tensor:
    """SmoothL1 (beta 1) of distance vs relation target, mean over ordered pairs i ≠ j."""
    _check_batch(distances, labels)
    target = _relation_targets(labels, _checked_targets(targets), distances.dtype)
    per_pair = F.smooth_l1_loss(distances, target, reduction="none", beta=SMOOTH_L1_BETA)
    size = len(labels)
    return per_pair.masked_fill(~_off_diagonal(size, distances.device), 0.0).sum() / (
        size * (size - 1)
    )


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
    size, device = len(labels), distances.device
    logits = (-distances / tau).masked_fill(~_off_diagonal(size, device), float("-inf"))
    log_prob = logits - torch.logsumexp(logits, dim=1, keepdim=True)
    positives = _positive_masks(labels)  # (3, B, B)
    counts = positives.sum(dim=2)  # (3, B) positives per anchor
    anchors = (counts > 0).sum(dim=1)  # (3,) anchors per level
    per_anchor = torch.where(positives, log_prob, 0.0).sum(dim=2) / counts.clamp_min(1)
    level_values = -per_anchor.sum(dim=1) / anchors.clamp_min(1)  # 0 at levels without anchors
    active = [w > 0 and n > 0 for w, n in zip(level_weights, anchors.tolist(), strict=True)]
    weight_sum = sum(w for w, on in zip(level_weights, active, strict=True) if on)
    values = level_values.detach().tolist()
    per_level: dict[str, float | None] = {
        f"loss_{level}": value if on else None
        for level, value, on in zip(SUPCON_LEVELS, values, active, strict=True)
    }
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
    weights = torch.tensor(
        [w if on else 0.0 for w, on in zip(level_weights, active, strict=True)],
        dtype=distances.dtype,
        device=device,
    )
    return (weights * level_values).sum() / weight_sum, per_level
