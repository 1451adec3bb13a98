"""Entailment pairs of a batch: partners of the same leaf, and the matrix against a plain loop."""

from __future__ import annotations

import pytest
import torch

from hierbench.cells.companion import PairSources
from hierbench.losses.entailment_pairs import NO_PARTNER, batch_pairs, cross_image_partners

LEAVES = torch.tensor([3, 1, 3, 2, 1, 3, 7, 1])  # leaf 2 and 7 have a single image


def test_partners_share_the_leaf_are_never_the_row_and_are_seeded() -> None:
    partners = cross_image_partners(LEAVES, 4, torch.Generator().manual_seed(5))
    assert partners.shape == (8, 4)
    for row, leaf in enumerate(LEAVES.tolist()):
        chosen = partners[row].tolist()
        if (leaf == LEAVES).sum() == 1:
            assert chosen == [NO_PARTNER] * 4
        else:
            assert all(c != row and LEAVES[c] == leaf for c in chosen), (row, chosen)
    again = cross_image_partners(LEAVES, 4, torch.Generator().manual_seed(5))
    assert torch.equal(partners, again)
    many = cross_image_partners(LEAVES, 400, torch.Generator().manual_seed(1))
    assert set(many[0].tolist()) == {2, 5}  # both other images of leaf 3 get drawn


def _loop_entails(batch, groups, sources, partners, high_of_middle):
    """The matrix built pair by pair from the module docstring's layout."""
    size, k = len(batch), sources.cross_image
    n_middle = len(high_of_middle) if sources.taxonomy else 0
    n_high = int(max(high_of_middle)) + 1 if sources.taxonomy else 0
    children = []
    if sources.boxes:
        children += [("crop", b, b) for b in range(size)]
    for b in range(size):
        for j in range(k):
            children.append(("partner", b, int(partners[batch[b], j])))
    if sources.taxonomy:
        children += [("middle", m, None) for m in range(n_middle)]
        children += [("image", b, None) for b in range(size)]
    parents = [("image", b) for b in range(size)]
    parents += [("middle", m) for m in range(n_middle)] + [("high", h) for h in range(n_high)]
    matrix = torch.zeros((len(parents), len(children)), dtype=torch.bool)
    for p, (kind, index) in enumerate(parents):
        for c, (child_kind, owner, row) in enumerate(children):
            if kind == "image" and child_kind == "crop":
                matrix[p, c] = owner == index
            elif kind == "image" and child_kind == "partner":
                matrix[p, c] = owner == index and row != NO_PARTNER
            elif kind == "middle" and child_kind == "image":
                matrix[p, c] = groups[owner][0] == index
            elif kind == "high" and child_kind == "middle":
                matrix[p, c] = high_of_middle[owner] == index
    return matrix


@pytest.mark.parametrize(
    "sources",
    [
        PairSources(boxes=True, cross_image=2, taxonomy=True),
        PairSources(boxes=True, cross_image=0, taxonomy=False),
        PairSources(boxes=False, cross_image=3, taxonomy=False),
        PairSources(boxes=False, cross_image=0, taxonomy=True),
    ],
)
def test_the_matrix_matches_a_plain_loop(sources: PairSources) -> None:
    high_of_middle = torch.tensor([0, 0, 1, 2])
    batch = torch.tensor([0, 2, 3, 6, 7])
    groups = torch.tensor([[0, 0], [1, 0], [2, 1], [3, 2], [1, 0]])
    k = max(sources.cross_image, 1)
    partners = cross_image_partners(LEAVES, k, torch.Generator().manual_seed(3))
    pairs = batch_pairs(batch, groups, sources, partners, high_of_middle)
    expected = _loop_entails(batch.tolist(), groups.tolist(), sources, partners, high_of_middle)
    assert torch.equal(pairs.entails, expected)
    n_crops = len(batch) * (int(sources.boxes) + sources.cross_image)
    assert len(pairs.crop_rows) == n_crops


def test_a_group_that_contradicts_the_taxonomy_is_an_error() -> None:
    sources = PairSources(boxes=False, cross_image=0, taxonomy=True)
    with pytest.raises(ValueError, match="high group"):
        batch_pairs(
            torch.tensor([0]), torch.tensor([[2, 0]]), sources, None, torch.tensor([0, 1, 1])
        )
