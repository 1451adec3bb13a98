"""Regression and Taxonomy-SupCon against plain-loop references, for both geometries."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from hierbench.geometry import TRAIN_DISTANCE_CLIP, build_head, sanitise_and_clip
from hierbench.losses import (
    DEFAULT_REGRESSION_TARGETS,
    NoPositiveError,
    level_floats,
    regression_loss,
    taxonomy_supcon_loss,
)

IN_DIM = 16
CURVATURE = {"H": 2.0, "H_small_c": 0.1}
TARGETS = DEFAULT_REGRESSION_TARGETS


def _supcon(*args, **kwargs):
    """taxonomy_supcon_loss with its per-level values as numbers (None: inactive)."""
    total, levels = taxonomy_supcon_loss(*args, **kwargs)
    return total, level_floats(levels)


# ---------------------------------------------------------------- plain-loop references
def _relation(a: list[int], b: list[int]) -> str:
    if a[0] == b[0]:
        return "c"
    if a[1] == b[1]:
        return "m"
    if a[2] == b[2]:
        return "h"
    return "o"


def _loop_distance(z: torch.Tensor, i: int, j: int, curvature: float | None) -> torch.Tensor:
    """Distance of one pair: Euclidean, or the Poincaré closed form when a curvature is given."""
    x, y = z[i], z[j]
    if curvature is None:
        return torch.sqrt(((x - y) ** 2).sum())
    c, minus_x = curvature, -x
    xy, x2, y2 = (minus_x * y).sum(), (minus_x**2).sum(), (y**2).sum()
    num = (1 + 2 * c * xy + c * y2) * minus_x + (1 - c * x2) * y
    sum_ = num / (1 + 2 * c * xy + c**2 * x2 * y2)
    return 2 / math.sqrt(c) * torch.atanh(math.sqrt(c) * torch.sqrt((sum_**2).sum()))


def _loop_regression(z: torch.Tensor, labels: list[list[int]], curvature: float | None):
    terms = []
    for i in range(len(labels)):
        for j in range(len(labels)):
            if i == j:
                continue
            diff = _loop_distance(z, i, j, curvature) - TARGETS[_relation(labels[i], labels[j])]
            terms.append(0.5 * diff**2 if abs(diff.item()) < 1.0 else abs(diff) - 0.5)
    return sum(terms) / len(terms)


def _loop_supcon_levels(z, labels, curvature, tau) -> dict[str, torch.Tensor | None]:
    n = len(labels)
    distance = {(i, j): _loop_distance(z, i, j, curvature) for i in range(n) for j in range(n)}
    levels = {}
    for level in ("c", "m", "h"):
        anchor_terms = []
        for i in range(n):
            positives = [j for j in range(n) if j != i and _relation(labels[i], labels[j]) == level]
            if not positives:
                continue
            log_denominator = torch.log(
                sum(torch.exp(-distance[i, a] / tau) for a in range(n) if a != i)
            )
            logs = [-distance[i, p] / tau - log_denominator for p in positives]
            anchor_terms.append(sum(logs) / len(logs))
        levels[level] = -sum(anchor_terms) / len(anchor_terms) if anchor_terms else None
    return levels


def _loop_supcon(z, labels, curvature, tau, weights):
    levels = _loop_supcon_levels(z, labels, curvature, tau)
    active = [
        (w, levels[level])
        for level, w in zip("cmh", weights, strict=True)
        if w > 0 and levels[level] is not None
    ]
    return sum(w * value for w, value in active) / sum(w for w, _ in active)


# ---------------------------------------------------------------- fixtures
def _tree_labels(seed: int, n: int = 12) -> np.ndarray:
    """Random tree labels (leaf -> middle -> high) with positives at every level."""
    rng = np.random.default_rng(seed)
    leaf = rng.integers(0, 8, n)
    labels = np.stack([leaf, leaf // 2, leaf // 4], axis=1)
    relations = {_relation(a, b) for k, a in enumerate(labels) for b in labels[k + 1 :]}
    if not {"c", "m", "h"} <= relations:
        raise RuntimeError(f"seed {seed} gives no positive at some level; pick another seed")
    return labels


def _head_and_input(geometry: str, seed: int = 0):
    """A float64 head (dropout 0, train mode: BatchNorm batch statistics) and its input."""
    torch.manual_seed(seed)
    hyperbolic = {"curvature": CURVATURE[geometry], "radius": 0.4} if geometry != "E" else {}
    head = build_head(
        "E" if geometry == "E" else "H",
        IN_DIM,
        hidden_dim=24,
        embedding_dim=6,
        dropout=0.0,
        **hyperbolic,
    ).double()
    x = torch.randn(12, IN_DIM, dtype=torch.float64, requires_grad=True)
    return head, x, CURVATURE.get(geometry)


def _vectorised_and_loop(geometry, labels, loss, reference):
    """Loss value and grads (w.r.t. embeddings and projector input) of both implementations."""
    head, x, curvature = _head_and_input(geometry)
    z = head(x)
    distances = sanitise_and_clip(head.distance(z, z), TRAIN_DISTANCE_CLIP)
    got = loss(distances, torch.as_tensor(labels, dtype=torch.long))
    expected = reference(z, labels.tolist(), curvature)
    got_grads = torch.autograd.grad(got, [z, x], retain_graph=True)
    expected_grads = torch.autograd.grad(expected, [z, x])
    return got, expected, got_grads, expected_grads


def _assert_agree(got, expected, got_grads, expected_grads):
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)
    for mine, theirs in zip(got_grads, expected_grads, strict=True):
        assert torch.isfinite(mine).all()
        assert mine.abs().sum() > 0
        torch.testing.assert_close(mine, theirs, rtol=1e-6, atol=1e-6)


GEOMETRIES = ["E", "H", "H_small_c"]


# ---------------------------------------------------------------- regression
@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("seed", [0, 1])
def test_regression_matches_loop_values_and_gradients(geometry, seed):
    labels = _tree_labels(seed)
    results = _vectorised_and_loop(
        geometry, labels, lambda d, y: regression_loss(d, y), _loop_regression
    )
    _assert_agree(*results)


def test_regression_hand_example_beta_one_and_ordered_pairs():
    labels = torch.tensor([[0, 0, 0], [0, 0, 0], [1, 1, 1]])
    distances = torch.tensor([[9.0, 0.7, 3.0], [0.7, 9.0, 1.0], [3.0, 1.0, 9.0]])
    # pairs (0,1),(1,0): c, |0.7-0.2| = 0.5 < 1 -> 0.5*0.25 = 0.125 each
    # pairs (0,2),(2,0): o, |3-1| = 2 >= 1 -> 2 - 0.5 = 1.5 each; pairs (1,2),(2,1): o, 0
    expected = (2 * 0.125 + 2 * 1.5 + 2 * 0.0) / 6  # diagonal (9.0) never counts
    assert regression_loss(distances, labels).item() == pytest.approx(expected, abs=1e-7)


def test_regression_uses_the_given_targets():
    labels = torch.tensor([[0, 0, 0], [1, 0, 0]])  # one m pair
    distances = torch.tensor([[0.0, 0.5], [0.5, 0.0]])
    assert regression_loss(distances, labels).item() == 0.0
    targets = {**TARGETS, "m": 0.3}
    assert regression_loss(distances, labels, targets).item() == pytest.approx(0.5 * 0.04)


def test_regression_rejects_bad_targets_and_inputs():
    labels, distances = torch.tensor([[0, 0, 0], [1, 0, 0]]), torch.zeros(2, 2)
    with pytest.raises(ValueError, match="exactly the keys"):
        regression_loss(distances, labels, {"c": 0.2, "m": 0.5, "h": 0.8})
    with pytest.raises(ValueError, match="finite number"):
        regression_loss(distances, labels, {**TARGETS, "o": float("nan")})
    with pytest.raises(ValueError, match=r"\(B, 3\)"):
        regression_loss(distances, labels[:, :2])
    with pytest.raises(ValueError, match="integer"):
        regression_loss(distances, labels.double())
    with pytest.raises(ValueError, match=r"\(2, 2\) matrix"):
        regression_loss(torch.zeros(3, 3), labels)
    with pytest.raises(ValueError, match="sanitise_and_clip"):
        regression_loss(torch.tensor([[0.0, float("inf")], [1.0, 0.0]]), labels)
    with pytest.raises(ValueError, match="at least 2"):
        regression_loss(torch.zeros(1, 1), labels[:1])


# ---------------------------------------------------------------- Taxonomy-SupCon
@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize(
    ("seed", "tau", "weights"),
    [(0, 0.2, (1.0, 1.0, 1.0)), (1, 0.5, (0.25, 0.5, 1.0)), (2, 0.07, (1.0, 1.0, 1.0))],
)
def test_supcon_matches_loop_values_and_gradients(geometry, seed, tau, weights):
    labels = _tree_labels(seed)

    def loss(distances, y):
        total, levels = _supcon(distances, y, tau, weights)
        assert all(levels[f"loss_{level}"] is not None for level in "cmh")
        return total

    def reference(z, rows, curvature):
        return _loop_supcon(z, rows, curvature, tau, weights)

    _assert_agree(*_vectorised_and_loop(geometry, labels, loss, reference))


@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_supcon_per_level_values_match_loop(geometry):
    labels = _tree_labels(3)
    head, x, curvature = _head_and_input(geometry)
    z = head(x)
    _, levels = _supcon(head.distance(z, z), torch.as_tensor(labels), 0.3)
    expected = _loop_supcon_levels(z, labels.tolist(), curvature, 0.3)
    for level in "cmh":
        assert levels[f"loss_{level}"] == pytest.approx(expected[level].item(), abs=1e-9)


def _skipped_middle_batch() -> torch.Tensor:
    """Every middle holds one leaf, so no pair is m; high 0 spans middles 0 and 1."""
    return torch.tensor([[0, 0, 0], [0, 0, 0], [1, 1, 0], [1, 1, 0], [2, 2, 1], [2, 2, 1]])


def _random_points(n: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(n, 3, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _random_distances(n: int, seed: int = 0) -> torch.Tensor:
    points = _random_points(n, seed)
    return torch.cdist(points, points)


def test_supcon_skipped_level_renormalises_the_weights():
    labels, distances = _skipped_middle_batch(), _random_distances(6)
    total, levels = _supcon(distances, labels, 0.2, (1.0, 2.0, 3.0))
    assert levels["loss_m"] is None
    assert levels["loss_c"] is not None and levels["loss_h"] is not None
    expected = (1.0 * levels["loss_c"] + 3.0 * levels["loss_h"]) / 4.0
    assert total.item() == pytest.approx(expected, abs=1e-12)
    points = _random_points(6)
    reference = _loop_supcon(points, labels.tolist(), None, 0.2, (1.0, 2.0, 3.0))
    assert total.item() == pytest.approx(reference.item(), abs=1e-9)


def test_supcon_zero_weight_makes_a_level_inactive():
    labels, distances = torch.as_tensor(_tree_labels(0)), _random_distances(12, seed=1)
    full_total, full = _supcon(distances, labels, 0.3, (1.0, 1.0, 1.0))
    leaf_total, leaf = _supcon(distances, labels, 0.3, (0.25, 0.0, 0.0))
    assert leaf == {"loss_c": full["loss_c"], "loss_m": None, "loss_h": None}
    assert leaf_total.item() == pytest.approx(full["loss_c"], abs=1e-12)
    two_total, two = _supcon(distances, labels, 0.3, (0.25, 0.5, 0.0))
    assert two["loss_h"] is None
    expected = (0.25 * full["loss_c"] + 0.5 * full["loss_m"]) / 0.75
    assert two_total.item() == pytest.approx(expected, abs=1e-12)
    three_total, _ = _supcon(distances, labels, 0.3, (0.25, 0.5, 1.0))
    expected = (0.25 * full["loss_c"] + 0.5 * full["loss_m"] + full["loss_h"]) / 1.75
    assert three_total.item() == pytest.approx(expected, abs=1e-12)
    assert full_total.item() == pytest.approx(sum(full.values()) / 3, abs=1e-12)


def test_supcon_zero_weight_level_gets_no_gradient():
    labels = torch.as_tensor(_tree_labels(0))
    distances = _random_distances(12, seed=2).requires_grad_()
    total, _ = _supcon(distances, labels, 0.3, (0.0, 1.0, 0.0))
    (grad,) = torch.autograd.grad(total, distances)
    middle_only, _ = _supcon(distances, labels, 0.3, (0.0, 2.0, 0.0))
    (expected,) = torch.autograd.grad(middle_only, distances)
    torch.testing.assert_close(grad, expected, rtol=0, atol=1e-12)


def test_supcon_without_any_positive_raises():
    labels = torch.tensor([[0, 0, 0], [1, 1, 1], [2, 2, 2], [3, 3, 3]])
    with pytest.raises(NoPositiveError, match=r"leaf \(c\), middle \(m\), high \(h\)"):
        _supcon(_random_distances(4), labels, 0.2)


def test_supcon_raises_when_only_inactive_levels_have_positives():
    labels = torch.tensor([[0, 0, 0], [1, 0, 0], [2, 1, 0], [3, 1, 0]])  # no shared leaf
    with pytest.raises(NoPositiveError, match=r"leaf \(c\)") as error:
        _supcon(_random_distances(4), labels, 0.2, (0.25, 0.0, 0.0))
    assert "middle" not in str(error.value)
    assert isinstance(error.value, ValueError)
    total, levels = _supcon(_random_distances(4), labels, 0.2, (0.25, 0.5, 0.0))
    assert levels["loss_c"] is None
    assert total.item() == pytest.approx(levels["loss_m"], abs=1e-12)


def test_supcon_keeps_every_non_self_item_in_the_denominator():
    labels = torch.tensor([[0, 0, 0], [0, 0, 0], [1, 1, 1]])
    distances = torch.tensor(
        [[0.0, 1.0, 2.0], [1.0, 0.0, 3.0], [2.0, 3.0, 0.0]], dtype=torch.float64
    )
    _, levels = _supcon(distances, labels, 1.0, (1.0, 0.0, 0.0))
    anchor0 = -(-1.0 - math.log(math.exp(-1.0) + math.exp(-2.0)))
    anchor1 = -(-1.0 - math.log(math.exp(-1.0) + math.exp(-3.0)))
    assert levels["loss_c"] == pytest.approx((anchor0 + anchor1) / 2, abs=1e-12)


def test_supcon_is_stable_for_tiny_temperatures():
    labels = torch.as_tensor(_tree_labels(1))
    distances = (_random_distances(12, seed=3) * 10).clamp(max=TRAIN_DISTANCE_CLIP).float()
    distances.requires_grad_()
    total, _ = _supcon(distances, labels, 1e-3)
    (grad,) = torch.autograd.grad(total, distances)
    assert torch.isfinite(total) and torch.isfinite(grad).all()


def test_supcon_rejects_bad_settings():
    labels, distances = _skipped_middle_batch(), _random_distances(6)
    for tau in (0.0, -1.0, float("inf")):
        with pytest.raises(ValueError, match="tau"):
            _supcon(distances, labels, tau)
    for weights in ((1.0, 1.0), (1.0, -1.0, 1.0), (1.0, float("nan"), 1.0)):
        with pytest.raises(ValueError, match="three finite numbers"):
            _supcon(distances, labels, 0.2, weights)
    with pytest.raises(ValueError, match="at least one"):
        _supcon(distances, labels, 0.2, (0.0, 0.0, 0.0))
