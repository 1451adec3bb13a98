"""Taxonomy-SupCon (S): logits s_ij = −d_ij/τ; for each level ℓ ∈ {c, m, h} with strict
positives P_ℓ(i), L_ℓ = −mean_{i∈A_ℓ} mean_{p∈P_ℓ(i)} [s_ip − log Σ_{a≠i} exp(s_ia)], where A_ℓ
are the items with at least one positive. Every non-self item stays in the denominator. The total
is the weighted mean over active levels (weight > 0 and A_ℓ non-empty). The per-level values stay
on the device (the trainer reads them once per epoch).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Real
from typing import Any

import torch

from hierbench.losses.common import (
    LEVEL_CODES,
    LEVEL_NAMES,
    check_batch,
    off_diagonal,
    positive_masks,
)


class NoPositiveError(ValueError):
    """A SupCon batch has no anchor with a strict positive at any level with weight > 0."""


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
    *,
    strict: bool = True,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Taxonomy-SupCon total and per-level values (``loss_c/m/h``, detached 0-d tensors, NaN
    where the level is inactive); stacked (K, B, B) distances give (K,) values, one per cell.

    A level is inactive when its weight is 0 or no item of the batch has a strict positive at
    it; active weights are renormalised. When no level is active, ``strict`` raises
    ``NoPositiveError`` (a read back to the host); otherwise the total is NaN, which the
    trainer reports with the batch's step. ``strict=False`` also takes the distances as
    sanitised (finite), so the call never waits for the device.
    """
    check_batch(distances, labels, finite=strict)
    level_weights = _check_supcon_settings(tau, weights)
    size, device = labels.shape[-2], distances.device
    logits = (-distances / tau).masked_fill(~off_diagonal(size, device), float("-inf"))
    log_prob = logits - torch.logsumexp(logits, dim=-1, keepdim=True)
    positives = positive_masks(labels)  # (…, 3, B, B)
    counts = positives.sum(dim=-1)  # (…, 3, B) positives per anchor
    anchors = (counts > 0).sum(dim=-1)  # (…, 3) anchors per level
    per_anchor = torch.where(positives, log_prob[..., None, :, :], 0.0).sum(dim=-1)
    per_anchor = per_anchor / counts.clamp_min(1)
    level_values = -per_anchor.sum(dim=-1) / anchors.clamp_min(1)  # 0 at levels without anchors
    given = torch.tensor(level_weights, dtype=distances.dtype, device=device)
    active = (given > 0) & (anchors > 0)
    weighted = torch.where(active, given, 0.0)
    weight_sum = weighted.sum(dim=-1)
    if strict and not bool((weight_sum > 0).all()):
        _raise_no_positive(size, level_weights)
    shown = torch.where(active, level_values.detach(), torch.nan)
    per_level = {f"loss_{level}": shown[..., index] for index, level in enumerate(LEVEL_CODES)}
    return (weighted * level_values).sum(dim=-1) / weight_sum, per_level


def _raise_no_positive(size: int, level_weights: tuple[float, float, float]) -> None:
    """The error of a batch with no strict positive at any weighted level."""
    weighted = [
        f"{LEVEL_NAMES[level]} ({level})"
        for level, weight in zip(LEVEL_CODES, level_weights, strict=True)
        if weight > 0
    ]
    raise NoPositiveError(
        f"no item in this batch of {size} has a strict positive at any weighted SupCon level "
        f"({', '.join(weighted)}; weights {level_weights}); use larger batches or a sampler "
        "that guarantees positives"
    )


def supcon_objective(
    distances: torch.Tensor, labels: torch.Tensor, spec: Any
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The S objective of a cell (``spec.tau``, ``spec.supcon_weights``) on sanitised
    distances, per-level values too; never waits for the device."""
    return taxonomy_supcon_loss(distances, labels, spec.tau, spec.supcon_weights, strict=False)
