"""What every objective shares: the batch checks and the strict-positive masks of a batch.

An objective takes the batch's (B, B) distance matrix from the head (already sanitised and
clipped) and the (B, 3) integer labels (leaf, middle, high). Relations come from
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
    """Raise unless distances is a finite (B, B) float matrix and labels a (B, 3) integer one.
    ``finite=False`` skips the finiteness check (a read back to the host): for distances that
    ``sanitise_and_clip`` made finite, as the trainer's are."""
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
    if finite and not bool(torch.isfinite(distances).all()):  # the one read back
        raise ValueError("distances contain NaN or inf; pass them through sanitise_and_clip first")


def positive_masks(labels: torch.Tensor) -> torch.Tensor:
    """(3, B, B) strict positive masks for levels c, m, h; the diagonal (self) is False."""
    columns = labels.T.contiguous()  # (3, B): per-level comparisons on contiguous memory
    same = columns[:, :, None] == columns[:, None, :]
    masks = torch.stack(strict_relation_masks(same[0], same[1], same[2]))
    masks.diagonal(dim1=1, dim2=2).fill_(False)
    return masks


def off_diagonal(size: int, device: torch.device) -> torch.Tensor:
    """Boolean (size, size) mask that is True off the diagonal."""
    return ~torch.eye(size, dtype=torch.bool, device=device)
