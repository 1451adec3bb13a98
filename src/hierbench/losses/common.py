"""What every objective shares: the batch checks and the strict-positive masks of a batch.

An objective takes the batch's (B, B) distance matrix from the head (already sanitised and
clipped) and the (B, 3) integer labels (leaf, middle, high); a bundle of K cells passes stacks,
(K, B, B) and (K, B, 3), and gets one value per cell. Relations come from
``relations.strict_relation_masks``, the project's one definition of c / m / h / o. Everything
is whole-matrix tensor work on the distances' device, without boolean indexing, because it runs
once per update.
"""

from __future__ import annotations

import torch

from hierbench.relations import strict_relation_masks

LEVEL_CODES: tuple[str, ...] = ("c", "m", "h")
LEVEL_NAMES = {"c": "leaf", "m": "middle", "h": "high"}


def check_batch(distances: torch.Tensor, labels: torch.Tensor, *, finite: bool = True) -> None:
    """Raise unless distances is a finite (B, B) float matrix and labels a (B, 3) integer one
    (or stacks of them with the same leading dimensions, a bundle's). ``finite=False`` skips
    the finiteness check (a read back to the host): for distances that ``sanitise_and_clip``
    made finite, as the trainer's are."""
    if not isinstance(labels, torch.Tensor) or labels.ndim < 2 or labels.shape[-1] != 3:
        shape = tuple(labels.shape) if hasattr(labels, "shape") else type(labels).__name__
        raise ValueError(f"labels must be a (B, 3) tensor of leaf/middle/high codes, got {shape}")
    if labels.is_floating_point() or labels.is_complex() or labels.dtype == torch.bool:
        raise ValueError(f"labels must be an integer tensor, got {labels.dtype}")
    size = labels.shape[-2]
    if size < 2:
        raise ValueError(f"a batch needs at least 2 items to form pairs, got {size}")
    expected = (*labels.shape[:-1], size)
    if not isinstance(distances, torch.Tensor) or tuple(distances.shape) != expected:
        shape = tuple(distances.shape) if hasattr(distances, "shape") else type(distances).__name__
        raise ValueError(f"distances must be a {expected} matrix for {size} labels, got {shape}")
    if not distances.is_floating_point():
        raise ValueError(f"distances must be floating point, got {distances.dtype}")
    if finite and not bool(torch.isfinite(distances).all()):  # the one read back
        raise ValueError("distances contain NaN or inf; pass them through sanitise_and_clip first")


def positive_masks(labels: torch.Tensor) -> torch.Tensor:
    """(3, B, B) strict positive masks for levels c, m, h of (B, 3) labels ((…, 3, B, B) of
    (…, B, 3)); the diagonal (self) is False."""
    columns = labels.mT.contiguous()  # (…, 3, B): per-level comparisons on contiguous memory
    same = columns[..., :, None] == columns[..., None, :]
    masks = torch.stack(strict_relation_masks(*same.unbind(dim=-3)), dim=-3)
    masks.diagonal(dim1=-2, dim2=-1).fill_(False)
    return masks


def off_diagonal(size: int, device: torch.device) -> torch.Tensor:
    """Boolean (size, size) mask that is True off the diagonal."""
    return ~torch.eye(size, dtype=torch.bool, device=device)
