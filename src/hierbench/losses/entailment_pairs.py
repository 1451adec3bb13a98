"""Entailment pairs of a training batch for the angle-entailment objective (loss A).

Three sources, each a config switch (``companion.pairs``):

- boxes: image b entails its own bird crop (the method's own pairs: the whole contains the part);
- cross-image: image b entails the crops of K other training images of its leaf, drawn once per
  cell with the training seed (``cross_image_partners``); the method's own too (a scene entails
  K same-class boxes of other images), ablated in its paper;
- taxonomy (our extension, not the method's): learnable embeddings of every middle and high
  group of the training data, each high group entailing its middle groups and each middle group
  its images.

A batch's parents are ``[images (B), middle groups (M), high groups (H)]`` and its children
``[own crops (B), partner crops (B·K), middle groups (M), images (B)]``, each block present only
when its source is on; ``entails[p, c]`` says that parent p contains child c.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from hierbench.cells.companion import PairSources

NO_PARTNER = -1


@dataclass(frozen=True)
class BatchPairs:
    """Row indices of a batch's crop children and its (parents, children) entailment matrix.

    ``crop_rows`` are training rows whose crops are children, own crops first, then partners;
    ``entails`` is (P, C) in the layout of the module docstring.
    """

    crop_rows: torch.Tensor
    entails: torch.Tensor


def cross_image_partners(leaves: torch.Tensor, k: int, generator: torch.Generator) -> torch.Tensor:
    """(N, k) rows of other training images of each row's leaf, uniform with replacement;
    ``NO_PARTNER`` where the leaf has a single image. One draw of (N, k) uniforms, in row order."""
    n, leaves = len(leaves), leaves.contiguous()
    uniforms = torch.rand((n, k), generator=generator, dtype=torch.float64)
    if k == 0:
        return torch.empty((n, 0), dtype=torch.long)
    order = torch.argsort(leaves, stable=True)
    sorted_leaves = leaves[order]
    start = torch.searchsorted(sorted_leaves, leaves, right=False)
    count = torch.searchsorted(sorted_leaves, leaves, right=True) - start
    rank = torch.empty(n, dtype=torch.long)
    rank[order] = torch.arange(n) - start[order]  # each row's position within its leaf
    others = (count - 1).clamp_min(1)
    pick = (uniforms * others[:, None]).floor().long().clamp_max((others - 1)[:, None])
    pick = pick + (pick >= rank[:, None]).long()  # skip the row itself
    partners = order[(start[:, None] + pick).clamp_max(n - 1)]
    return torch.where((count > 1)[:, None], partners, torch.full_like(partners, NO_PARTNER))


def batch_pairs(
    batch: torch.Tensor,
    labels: torch.Tensor,
    sources: PairSources,
    partners: torch.Tensor | None,
    high_of_middle: torch.Tensor | None,
) -> BatchPairs:
    """The crop rows and entailment matrix of one batch.

    ``labels`` (B, 2) are the batch's middle and high group indices (0-based, training groups),
    ``partners`` (N, K) from ``cross_image_partners``, ``high_of_middle`` (M,) each middle group's
    high group index (taxonomy pairs only). Every tensor is made on ``batch``'s device.
    """
    size, device = len(batch), batch.device
    eye = torch.eye(size, dtype=torch.bool, device=device)
    n_middle = len(high_of_middle) if sources.taxonomy and high_of_middle is not None else 0
    n_high = int(high_of_middle.max()) + 1 if n_middle else 0
    crop_rows, image_blocks = [], []
    if sources.boxes:
        crop_rows.append(batch)
        image_blocks.append(eye)
    if sources.cross_image > 0:
        if partners is None:
            raise ValueError("cross-image pairs need the cells' partner rows")
        chosen = partners[batch]  # (B, K)
        crop_rows.append(chosen.clamp_min(0).reshape(-1))
        owner = eye.repeat_interleave(sources.cross_image, dim=1)  # image b -> its K partners
        image_blocks.append(owner & (chosen.reshape(1, -1) != NO_PARTNER))
    n_crops = sum(block.shape[1] for block in image_blocks)
    n_children = n_crops + (n_middle + size if n_middle else 0)
    entails = torch.zeros((size + n_middle + n_high, n_children), dtype=torch.bool, device=device)
    if image_blocks:
        entails[:size, :n_crops] = torch.cat(image_blocks, dim=1)
    if n_middle:
        middle, high = labels[:, 0], labels[:, 1]
        if (high_of_middle[middle] != high).any():
            raise ValueError("a batch item's high group is not its middle group's high group")
        groups = torch.arange(n_middle, device=device)
        entails[size : size + n_middle, n_crops + n_middle :] = groups[:, None] == middle[None, :]
        entails[size + n_middle :, n_crops : n_crops + n_middle] = (
            torch.arange(n_high, device=device)[:, None] == high_of_middle[None, :]
        )
    rows = torch.cat(crop_rows) if crop_rows else torch.empty(0, dtype=torch.long, device=device)
    return BatchPairs(crop_rows=rows, entails=entails)
