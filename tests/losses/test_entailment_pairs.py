"""Entailment pairs of a batch: distinct partners of the same leaf, one child per distinct crop,
and the whole loss A of a batch against a plain loop (pairs from dictionaries, one angle at a
time)."""

from __future__ import annotations

import math
from collections import defaultdict

import pytest
import torch

from hierbench.cells.companion import PairSources
from hierbench.geometry import EuclideanHead, LorentzHead, Projector
from hierbench.geometry.cones import ACOS_EPS
from hierbench.losses.entailment_objective import EntailmentObjective, group_indices
from hierbench.losses.entailment_pairs import (
    NO_PARTNER,
    batch_pairs,
    cross_image_partners,
    short_of_partners,
)

LEAVES = torch.tensor([3, 1, 3, 2, 1, 3, 7, 1])  # leaf 2 and 7 have a single image
METHOD = PairSources(boxes=True, cross_image=2, taxonomy=False)


def test_partners_are_distinct_other_images_of_the_leaf_and_seeded() -> None:
    partners = cross_image_partners(LEAVES, 4, torch.Generator().manual_seed(5))
    assert partners.shape == (8, 4)
    for row, leaf in enumerate(LEAVES.tolist()):
        others = {r for r, other in enumerate(LEAVES.tolist()) if other == leaf and r != row}
        chosen = [c for c in partners[row].tolist() if c != NO_PARTNER]
        assert len(chosen) == len(set(chosen)) == min(4, len(others)), (row, chosen)
        assert set(chosen) <= others, (row, chosen)
        assert partners[row, len(chosen) :].eq(NO_PARTNER).all()  # padding at the end only
    again = cross_image_partners(LEAVES, 4, torch.Generator().manual_seed(5))
    assert torch.equal(partners, again)
    assert short_of_partners(partners) == 8  # no leaf has 4 other images


def test_k_partners_are_k_distinct_images_where_the_leaf_has_enough() -> None:
    leaves = torch.arange(20).repeat_interleave(5)  # 20 leaves of 5 images
    for seed in range(20):
        partners = cross_image_partners(leaves, 2, torch.Generator().manual_seed(seed))
        assert (partners[:, 0] != partners[:, 1]).all()  # with replacement, ~1 in 4 rows repeat
        assert (leaves[partners] == leaves[:, None]).all()
        assert (partners != torch.arange(100)[:, None]).all()
        assert short_of_partners(partners) == 0
    # Every other image of a leaf gets drawn over the rows and seeds: no position is favoured.
    drawn = cross_image_partners(leaves, 4, torch.Generator().manual_seed(1))
    assert set(drawn[0].tolist()) == {1, 2, 3, 4}
    assert cross_image_partners(leaves, 0, torch.Generator()).shape == (100, 0)


def _crop_conflicts(batch: torch.Tensor, crop_rows: torch.Tensor, entails: torch.Tensor) -> int:
    """(image, crop row) pairs of the batch where the crop is a positive of the image in one
    column and a negative of it in another (a crop that is a child twice)."""
    conflicts = 0
    for image in range(len(batch)):
        for row in torch.unique(crop_rows).tolist():
            values = set(entails[image, : len(crop_rows)][crop_rows == row].tolist())
            conflicts += values == {True, False}
    return conflicts


def test_every_crop_is_one_child_and_never_both_positive_and_negative() -> None:
    """34 images from 20 leaves of 5 with 2 partners each: the layout of one column per
    (image, source) gave 50 (image, crop) pairs that were both; now each crop is one child."""
    leaves = torch.arange(20).repeat_interleave(5)
    partners = cross_image_partners(leaves, 2, torch.Generator().manual_seed(0))
    batch = torch.randperm(100, generator=torch.Generator().manual_seed(0))[:34]
    pairs = batch_pairs(batch, torch.zeros((34, 2), dtype=torch.long), METHOD, partners, None)
    assert len(pairs.crop_rows) == len(torch.unique(pairs.crop_rows))
    assert torch.equal(pairs.crop_rows, torch.sort(pairs.crop_rows).values)
    in_batch = {int(r) for r in batch}
    inside = [int(p) for b in batch for p in partners[b] if int(p) in in_batch]
    assert inside, "the draw must put partners inside the batch for this test to mean anything"
    assert _crop_conflicts(batch, pairs.crop_rows, pairs.entails) == 0
    for i, row in enumerate(batch.tolist()):
        own_and_partners = {row, *partners[row].tolist()}
        expected = [r in own_and_partners for r in pairs.crop_rows.tolist()]
        assert pairs.entails[i].tolist() == expected


def _loop_entails(batch, groups, sources, partners, high_of_middle):
    """The matrix built from dictionaries of what each parent entails, in the module
    docstring's layout (crops: the distinct entailed rows, ascending)."""
    entailed: dict[tuple, set[tuple]] = defaultdict(set)
    for b, row in enumerate(batch):
        if sources.boxes:
            entailed[("image", b)].add(("crop", row))
        for j in range(sources.cross_image):
            if int(partners[row, j]) != NO_PARTNER:
                entailed[("image", b)].add(("crop", int(partners[row, j])))
    crops = sorted({key for keys in entailed.values() for key in keys})
    children, parents = list(crops), [("image", b) for b in range(len(batch))]
    if sources.taxonomy:
        n_middle, n_high = len(high_of_middle), int(max(high_of_middle)) + 1
        for b in range(len(batch)):
            entailed[("middle", int(groups[b][0]))].add(("image", b))
        for m in range(n_middle):
            entailed[("high", int(high_of_middle[m]))].add(("middle", m))
        children += [("middle", m) for m in range(n_middle)]
        children += [("image", b) for b in range(len(batch))]
        parents += [("middle", m) for m in range(n_middle)] + [("high", h) for h in range(n_high)]
    matrix = torch.zeros((len(parents), len(children)), dtype=torch.bool)
    for p, parent in enumerate(parents):
        for c, child in enumerate(children):
            matrix[p, c] = child in entailed[parent]
    return matrix, parents, children


SOURCES = [
    PairSources(boxes=True, cross_image=2, taxonomy=True),
    PairSources(boxes=True, cross_image=2, taxonomy=False),
    PairSources(boxes=True, cross_image=0, taxonomy=False),
    PairSources(boxes=False, cross_image=3, taxonomy=False),
    PairSources(boxes=False, cross_image=0, taxonomy=True),
]


@pytest.mark.parametrize("sources", SOURCES)
def test_the_matrix_matches_a_plain_loop(sources: PairSources) -> None:
    high_of_middle = torch.tensor([0, 0, 1, 2])
    batch = torch.tensor([0, 2, 3, 6, 7, 5])  # 0, 2 and 5 share leaf 3: partners inside
    groups = torch.tensor([[0, 0], [1, 0], [2, 1], [3, 2], [1, 0], [0, 0]])
    k = max(sources.cross_image, 1)
    partners = cross_image_partners(LEAVES, k, torch.Generator().manual_seed(3))
    pairs = batch_pairs(batch, groups, sources, partners, high_of_middle)
    expected, _, children = _loop_entails(
        batch.tolist(), groups.tolist(), sources, partners, high_of_middle.tolist()
    )
    assert torch.equal(pairs.entails, expected)
    assert pairs.crop_rows.tolist() == [row for kind, row in children if kind == "crop"]


def test_a_group_that_contradicts_the_taxonomy_is_an_error() -> None:
    sources = PairSources(boxes=False, cross_image=0, taxonomy=True)
    with pytest.raises(ValueError, match="high group"):
        batch_pairs(
            torch.tensor([0]), torch.tensor([[2, 0]]), sources, None, torch.tensor([0, 1, 1])
        )


# ---------------------------------------------------------------- the whole loss, by a loop
def _clamped_acos(value: float) -> float:
    return math.acos(min(max(value, -1.0 + ACOS_EPS), 1.0 - ACOS_EPS))


def _euclidean_angle(x: list[float], y: list[float]) -> float:
    """ext(x, y): the angle at x between the continuation of O → x and x → y; π/2 where x = y
    (an image or group that is both parent and child), where the angle is undefined and the
    clamps of ``geometry.cones`` give π/2."""
    if x == y:
        return math.pi / 2
    step = [b - a for a, b in zip(x, y, strict=True)]
    along = sum(a * s for a, s in zip(x, step, strict=True))
    return _clamped_acos(along / (math.hypot(*x) * math.hypot(*step)))


def _lorentz_angle(x: list[float], y: list[float], c: float) -> float:
    """The method's formula: arccos((y_t + x_t·c⟨x, y⟩_L) / (‖x‖·√((c⟨x, y⟩_L)² − 1))); π/2
    where x = y, as ``_euclidean_angle``."""
    if x == y:
        return math.pi / 2
    x_time = math.sqrt(1 / c + sum(a * a for a in x))
    y_time = math.sqrt(1 / c + sum(b * b for b in y))
    inner = c * (sum(a * b for a, b in zip(x, y, strict=True)) - x_time * y_time)
    return _clamped_acos((y_time + x_time * inner) / (math.hypot(*x) * math.sqrt(inner**2 - 1)))


def _mean_nce(logits: dict, positives: dict) -> float:
    """mean over anchors with a positive of −mean over its positives of log softmax."""
    losses = []
    for anchor, row in logits.items():
        if positives[anchor]:
            log_total = math.log(sum(math.exp(v) for v in row.values()))
            losses.append(
                -sum(row[p] - log_total for p in positives[anchor]) / len(positives[anchor])
            )
    return sum(losses) / len(losses)


def _loop_loss(model, objective, features, crops, batch, sources, c) -> float:
    """Loss A of one batch, pair by pair: each key embedded on its own (eval mode)."""
    batch_groups = objective.groups[batch].tolist()
    entailed, parents, children = _loop_entails(
        batch.tolist(), batch_groups, sources, objective.partners, objective.high_of_middle.tolist()
    )
    with torch.no_grad():
        place = objective._place  # the group embeddings in the head's space

        def point(key: tuple) -> list[float]:
            kind, index = key
            if kind == "image":
                return model(features[batch[index]][None])[0].tolist()
            if kind == "crop":
                return model(crops[index][None])[0].tolist()
            table = objective.middle if kind == "middle" else objective.high
            return place(model, table[index][None])[0].tolist()

        points = {key: point(key) for key in {*parents, *children}}
        tau = float(objective.temperature())
    angle = _euclidean_angle if c is None else (lambda x, y: _lorentz_angle(x, y, c))
    down = {
        p: {q: (math.pi - angle(points[p], points[q])) / tau for q in children} for p in parents
    }
    up = {q: {p: angle(points[q], points[p]) / tau for p in parents} for q in children}
    down_positives = {
        p: [q for j, q in enumerate(children) if entailed[i, j]] for i, p in enumerate(parents)
    }
    up_positives = {
        q: [p for i, p in enumerate(parents) if entailed[i, j]] for j, q in enumerate(children)
    }
    return _mean_nce(down, down_positives) + _mean_nce(up, up_positives)


@pytest.mark.parametrize("geometry", ["E", "L"])
@pytest.mark.parametrize("sources", SOURCES)
def test_the_whole_loss_matches_a_plain_loop(geometry: str, sources: PairSources) -> None:
    """Three batches of 14 training rows (leaves of 3 and 2 images, one of 1): the first holds
    images with their partners, the last a leaf with a single image (no partner)."""
    torch.manual_seed(0)
    labels = torch.tensor(
        [[0, 0, 0]] * 3
        + [[1, 0, 0]] * 3
        + [[2, 1, 0]] * 2
        + [[3, 2, 1]] * 3
        + [[4, 3, 1]] * 2
        + [[5, 3, 1]]
    ).numpy()
    features = torch.randn(14, 6, dtype=torch.float64)
    crops = torch.randn(14, 6, dtype=torch.float64)
    projector = Projector(6, 8, 4, dropout=0.0)
    model = (
        LorentzHead(projector, 0.7)
        if geometry == "L"
        else EuclideanHead(projector, normalise=False)
    )
    model = model.double().eval()
    groups, high_of_middle = group_indices(labels)
    partners = cross_image_partners(
        torch.as_tensor(labels[:, 0]), sources.cross_image, torch.Generator().manual_seed(1)
    )
    objective = EntailmentObjective(
        geometry,
        4,
        sources,
        groups,
        high_of_middle,
        crops=crops,
        partners=partners,
        temperature=0.3,
        init_seed=2,
    ).double()
    c = model.curvature.item() if geometry == "L" else None
    for batch in (
        torch.tensor([0, 1, 2, 5, 8]),
        torch.tensor([3, 4, 6, 7, 9, 10]),
        torch.tensor([13, 11, 12, 0]),
    ):
        loss, _ = objective.batch_loss(
            model, features[batch], torch.as_tensor(labels)[batch], batch
        )
        expected = _loop_loss(model, objective, features, crops, batch, sources, c)
        assert loss.item() == pytest.approx(expected, rel=1e-8)
