"""The fused angle-entailment loss (losses/entailment_fused.py) against the readable reference
(losses/entailment.py, itself checked against direct geometry and a plain loop): both angle
directions, values and hand-derived gradients, clamped entries, and errors."""

from __future__ import annotations

import pytest
import torch
from test_entailment import (
    ENTAILS,
    _awkward_points,
    _geometric_lorentz_angle,
    _inputs,
    _loop_euclidean_angle,
    _loop_loss,
)

from hierbench.geometry.euclidean import exterior_angle as euclidean_exterior_angle
from hierbench.geometry.lorentz import angle_fn as lorentz_angle_fn
from hierbench.geometry.lorentz import exterior_angle as lorentz_exterior_angle
from hierbench.losses.entailment import (
    NoEntailmentPairError,
    angle_entailment_loss,
)
from hierbench.losses.entailment_fused import fused_angle_entailment_loss, paired_exterior_angles

F64 = torch.float64


def _points(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    x = 0.8 * torch.randn(6, 4, dtype=F64, generator=generator)
    y = 1.3 * torch.randn(9, 4, dtype=F64, generator=generator)
    return x, y


def _reference(x, y, c):
    """(ext(x_i, y_j), ext(y_j, x_i)) as (P, C) from the reference pairwise functions."""
    if c is None:
        return euclidean_exterior_angle(x, y), euclidean_exterior_angle(y, x).T
    return lorentz_exterior_angle(x, y, c), lorentz_exterior_angle(y, x, c).T


@pytest.mark.parametrize("c", [None, 0.1, 1.0, 2.5])
def test_both_directions_match_the_reference_in_value_and_gradient(c):
    x, y = _points(seed=1)
    weights = torch.rand(2, 6, 9, dtype=F64, generator=torch.Generator().manual_seed(2))
    grads = []
    for angles in (paired_exterior_angles, _reference):
        xs, ys = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
        curvature = None if c is None else torch.tensor(c, dtype=F64, requires_grad=True)
        first, second = angles(xs, ys, curvature)
        ((first * weights[0]).sum() + (second * weights[1]).sum()).backward()
        grads.append([xs.grad, ys.grad] + ([] if c is None else [curvature.grad]))
        if angles is paired_exterior_angles:
            values = (first.detach(), second.detach())
        else:
            torch.testing.assert_close(values[0], first.detach(), rtol=0, atol=1e-12)
            torch.testing.assert_close(values[1], second.detach(), rtol=0, atol=1e-12)
    for fused, reference in zip(*grads, strict=True):
        assert reference.abs().sum() > 0
        torch.testing.assert_close(fused, reference, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("lorentz", [False, True])
def test_hand_derived_backward_passes_gradcheck(lorentz):
    x, y = _points(seed=3)
    inputs = [x.requires_grad_(True), y.requires_grad_(True)]
    if lorentz:
        inputs.append(torch.tensor(1.3, dtype=F64, requires_grad=True))
    assert torch.autograd.gradcheck(lambda *t: paired_exterior_angles(*t), tuple(inputs))


@pytest.mark.parametrize("kind", ["lorentz", "euclidean"])
def test_fused_loss_matches_the_plain_loop_and_the_reference(kind):
    mine = [t.clone().requires_grad_(True) for t in _inputs()]
    loop = [t.clone().requires_grad_(True) for t in _inputs()]
    if kind == "lorentz":
        got, parts = fused_angle_entailment_loss(*mine[:2], ENTAILS, mine[2], mine[3])
        parents, children, tau, c = _inputs()
        reference, _ = angle_entailment_loss(parents, children, ENTAILS, tau, lorentz_angle_fn(c))
        expected = _loop_loss(
            *loop[:2], ENTAILS, loop[2], lambda u, v: _geometric_lorentz_angle(u, v, loop[3])
        )
        checked = list(zip(mine, loop, strict=True))
    else:
        got, parts = fused_angle_entailment_loss(*mine[:2], ENTAILS, mine[2])
        parents, children, tau, _ = _inputs()
        reference, _ = angle_entailment_loss(
            parents, children, ENTAILS, tau, euclidean_exterior_angle
        )
        expected = _loop_loss(*loop[:2], ENTAILS, loop[2], _loop_euclidean_angle)
        checked = list(zip(mine[:3], loop[:3], strict=True))
    torch.testing.assert_close(got.detach(), reference, rtol=0, atol=1e-12)
    torch.testing.assert_close(got, expected[0], rtol=0, atol=1e-10)
    assert float(parts["loss_parent_child"]) == pytest.approx(expected[1].item(), abs=1e-10)
    got.backward()
    expected[0].backward()
    for fused, plain in checked:
        assert plain.grad.abs().sum() > 0
        torch.testing.assert_close(fused.grad, plain.grad, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("lorentz", [False, True])
@pytest.mark.parametrize(
    ("dtype", "scale"), [(F64, 1.0), (torch.float32, 1.0), (torch.float32, 1e10)]
)
def test_values_match_and_gradients_stay_finite_at_the_origin_and_coincident_points(
    lorentz, dtype, scale
):
    """Points at the origin, nearly coincident and huge: the clamps give the reference's angles
    wherever the angle is defined, and finite gradients everywhere. At a coincident pair (a
    parent and its copy, the origin and itself, the near copy) the geodesic has no direction:
    the angle is a 0/0 of rounding errors, which the two formulations round differently, so
    there it is only held to [0, π]. (Gradients are compared on well-conditioned points above.)"""
    values = []
    for angles in (paired_exterior_angles, _reference):
        parents, children = (t.requires_grad_(True) for t in _awkward_points(dtype, scale))
        c = torch.tensor(1.0, dtype=dtype, requires_grad=True) if lorentz else None
        first, second = angles(parents, children, c)
        (first.sum() + 2.0 * second.sum()).backward()
        for grad in [parents.grad, children.grad] + ([c.grad] if lorentz else []):
            assert torch.isfinite(grad).all()
        values.append(torch.stack([first.detach(), second.detach()]))
    assert torch.isfinite(values[0]).all()
    coincident = torch.zeros(4, 7, dtype=torch.bool)  # as _awkward_points builds them
    coincident[range(4), range(4)] = True  # the children start with copies of the parents
    coincident[0, 4] = coincident[2, 6] = True  # the origin twice; parent 2's near copy
    defined = ~coincident.expand(2, 4, 7)
    tolerance = 1e-9 if dtype == F64 else 5e-4
    torch.testing.assert_close(values[0][defined], values[1][defined], rtol=0, atol=tolerance)
    for angles in values:
        assert ((angles >= 0) & (angles <= torch.pi)).all()


def test_errors_match_the_reference():
    parents, children, tau, _ = _inputs()
    with pytest.raises(NoEntailmentPairError, match="no True entry"):
        fused_angle_entailment_loss(parents, children, torch.zeros_like(ENTAILS), tau)
    with pytest.raises(ValueError, match="curvature c must be a finite number > 0"):
        fused_angle_entailment_loss(parents, children, ENTAILS, tau, -1.0)
    with pytest.raises(ValueError, match=r"entails must be a \(5, 8\)"):
        fused_angle_entailment_loss(parents, children, ENTAILS.T, tau)
    with pytest.raises(ValueError, match="same dimension D"):
        paired_exterior_angles(parents, children[:, :3])
