"""Stacked distances and losses, as a bundle of K cells runs them: each cell's slice gets what
the 2-D call gives it (values and gradients), and a stack of one is bitwise the 2-D call."""

from __future__ import annotations

import pytest
import torch

from hierbench.geometry.distances import (
    euclidean_distance,
    poincare_distance,
    stacked_self_distances,
)
from hierbench.losses.common import check_batch
from hierbench.losses.regression import regression_loss
from hierbench.losses.supcon import taxonomy_supcon_loss

CELLS, BATCH, DIM = 3, 24, 6
CURVATURES = {"E": None, "H": 0.7}


def _labels(generator: torch.Generator) -> torch.Tensor:
    """(K, B, 3) nested labels: 8 leaves in 4 middles in 2 highs."""
    leaf = torch.randint(0, 8, (CELLS, BATCH), generator=generator)
    return torch.stack([leaf, leaf // 2, leaf // 4], dim=-1)


def _points(generator: torch.Generator, dtype=torch.float32) -> torch.Tensor:
    return (
        torch.randn(CELLS, BATCH, DIM, generator=generator, dtype=dtype) * 0.15
    ).requires_grad_()


def _plain_distance(points: torch.Tensor, curvature: float | None) -> torch.Tensor:
    if curvature is None:
        return euclidean_distance(points, points)
    return poincare_distance(points, points, curvature)


@pytest.mark.parametrize("geometry", ["E", "H"])
def test_stacked_distances_are_each_slice_s_distances_with_its_gradient(geometry):
    generator = torch.Generator().manual_seed(1)
    points = _points(generator, torch.float64)
    weights = torch.rand(CELLS, BATCH, BATCH, generator=generator, dtype=torch.float64)
    stacked = stacked_self_distances(points, CURVATURES[geometry])
    (grad,) = torch.autograd.grad((stacked * weights).sum(), points)
    for cell in range(CELLS):
        alone = points[cell].detach().clone().requires_grad_()
        plain = _plain_distance(alone, CURVATURES[geometry])
        (plain_grad,) = torch.autograd.grad((plain * weights[cell]).sum(), alone)
        torch.testing.assert_close(stacked[cell], plain, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(grad[cell], plain_grad, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("geometry", ["E", "H"])
def test_a_stack_of_one_is_bitwise_the_plain_call(geometry):
    points = _points(torch.Generator().manual_seed(2))[:1].detach().requires_grad_()
    stacked = stacked_self_distances(points, CURVATURES[geometry])
    (grad,) = torch.autograd.grad(stacked.square().sum(), points)
    alone = points[0].detach().clone().requires_grad_()
    plain = _plain_distance(alone, CURVATURES[geometry])
    (plain_grad,) = torch.autograd.grad(plain.square().sum(), alone)
    assert torch.equal(stacked[0], plain) and torch.equal(grad[0], plain_grad)


def _supcon(distances, labels):
    return taxonomy_supcon_loss(distances, labels, 0.3, (0.25, 0.5, 1.0), strict=False)


def _regression(distances, labels):
    return regression_loss(distances, labels, sanitised=True), {}


@pytest.mark.parametrize("loss", [_supcon, _regression], ids=["S", "R"])
def test_stacked_losses_give_each_cell_its_own_loss_levels_and_gradient(loss):
    generator = torch.Generator().manual_seed(3)
    points, labels = _points(generator, torch.float64), _labels(generator)
    distances = stacked_self_distances(points, 1.0)
    values, levels = loss(distances, labels)
    assert values.shape == (CELLS,)
    (grad,) = torch.autograd.grad(values.sum(), points)
    for cell in range(CELLS):
        alone = points[cell].detach().clone().requires_grad_()
        value, level_values = loss(poincare_distance(alone, alone, 1.0), labels[cell])
        (plain_grad,) = torch.autograd.grad(value, alone)
        torch.testing.assert_close(values[cell], value, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(grad[cell], plain_grad, rtol=1e-10, atol=1e-12)
        assert levels.keys() == level_values.keys()
        for key, stacked_value in levels.items():
            torch.testing.assert_close(stacked_value[cell], level_values[key], equal_nan=True)


def test_a_stacked_batch_of_the_wrong_shape_is_refused_naming_the_shape():
    labels = _labels(torch.Generator().manual_seed(4))
    with pytest.raises(ValueError, match=r"distances must be a \(3, 24, 24\) matrix"):
        check_batch(torch.zeros(2, BATCH, BATCH), labels)
    with pytest.raises(ValueError, match="stacked points must be a floating"):
        stacked_self_distances(torch.zeros(BATCH, DIM), None)
