"""Entailment pairs of a training batch for the angle-entailment objective (loss A).

Three sources, each a config switch (``companion.pairs``):

- boxes: image b entails its own bird crop (the method's own pairs: the whole contains the part);
- cross-image: image b entails the crops of K other training images of its leaf, K distinct
  images drawn once per cell with the training seed (``cross_image_partners``; fewer where the
  leaf has fewer other images); the method's own too (a scene entails K same-class boxes of
  other images), ablated in its paper;
- taxonomy (our extension, not the method's): learnable embeddings of every middle and high
  group of the training data, each high group entailing its middle groups and each middle group
  its images.

A batch's parents are ``[images (B), middle groups (M), high groups (H)]`` and its children
``[crops (C), middle groups (M), images (B)]``, each block present only when its source is on;
``entails[p, c]`` says that parent p contains child c. The crops are the distinct training rows
whose crop some image of the batch entails (its own, a partner's), sorted, each one child: a
crop that is one image's own and another's partner (both images in the batch) is a positive of
both, and never also a negative of either.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from hierbench.cells.companion import PairSources

NO_PARTNER = -1


@dataclass(frozen=True)
class BatchPairs:
    """Row indices of a batch's crop children and its (parents, children) entailment matrix.

    ``crop_rows`` are the distinct training rows whose crops are children, ascending;
    ``entails`` is (P, C) in the layout of the module docstring.
    """

    crop_rows: torch.Tensor
    entails: torch.Tensor


def cross_image_partners(leaves: torch.Tensor, k: int, generator: torch.Generator) -> torch.Tensor:
    """(N, k) rows of k distinct other training images of each row's leaf (drawn without
    replacement, in a random order), padded with ``NO_PARTNER`` where the leaf has fewer than
    k other images. Leaf by leaf in ascending leaf order, one (n, n) draw of uniforms per leaf
    of n images: a row's partners are the first of the other rows sorted by its uniforms."""
    n = len(leaves)
    partners = torch.full((n, k), NO_PARTNER, dtype=torch.long)
    if k == 0:
        return partners
    for leaf in torch.unique(leaves).tolist():
        rows = torch.nonzero(leaves == leaf).flatten()
        keys = torch.rand((len(rows), len(rows)), generator=generator, dtype=torch.float64)
        keys.fill_diagonal_(float("inf"))  # a row is never its own partner
        chosen = torch.argsort(keys, dim=1, stable=True)[:, : min(k, len(rows) - 1)]
        partners[rows, : chosen.shape[1]] = rows[chosen]
    return partners


def short_of_partners(partners: torch.Tensor) -> int:
    """How many rows have fewer than K partners (their leaf has fewer than K other images)."""
    return int((partners == NO_PARTNER).any(dim=1).sum()) if partners.shape[1] else 0


def image_crop_block(
    batch: torch.Tensor, sources: PairSources, partners: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The distinct crop rows (C,) the batch's images entail, ascending, and the (B, C) matrix
    of which image entails which: its own crop (boxes), its partners' crops (cross-image)."""
    device = batch.device
    owned = [batch[:, None]] if sources.boxes else []
    if sources.cross_image > 0:
        if partners is None:
            raise ValueError("cross-image pairs need the cells' partner rows")
        owned.append(partners[batch])  # (B, K), NO_PARTNER where the leaf has too few images
    if not owned:
        empty = torch.empty(0, dtype=torch.long, device=device)
        return empty, torch.zeros((len(batch), 0), dtype=torch.bool, device=device)
    entailed = torch.cat(owned, dim=1)  # (B, 1 + K) rows, or fewer columns
    crop_rows = torch.unique(entailed[entailed != NO_PARTNER])  # sorted
    block = (entailed[:, :, None] == crop_rows[None, None, :]).any(dim=1)
    return crop_rows, block


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
    n_middle = len(high_of_middle) if sources.taxonomy and high_of_middle is not None else 0
    n_high = int(high_of_middle.max()) + 1 if n_middle else 0
    crop_rows, image_crops = image_crop_block(batch, sources, partners)
    n_crops = len(crop_rows)
    n_children = n_crops + (n_middle + size if n_middle else 0)
    entails = torch.zeros((size + n_middle + n_high, n_children), dtype=torch.bool, device=device)
    entails[:size, :n_crops] = image_crops
    if n_middle:
        middle, high = labels[:, 0], labels[:, 1]
        if (high_of_middle[middle] != high).any():
            raise ValueError("a batch item's high group is not its middle group's high group")
        groups = torch.arange(n_middle, device=device)
        entails[size : size + n_middle, n_crops + n_middle :] = groups[:, None] == middle[None, :]
        entails[size + n_middle :, n_crops : n_crops + n_middle] = (
            torch.arange(n_high, device=device)[:, None] == high_of_middle[None, :]
        )
    return BatchPairs(crop_rows=crop_rows, entails=entails)
