"""Angle-entailment loss (losses/entailment.py): the exterior angles against direct geometric
computations, the loss against a plain loop (values and gradients), errors, numerical safety and
the learnable temperature."""

from __future__ import annotations

import math

import pytest
import torch

from hierbench.geometry.euclidean import exterior_angle as euclidean_exterior_angle
from hierbench.geometry.lorentz import angle_fn as lorentz_angle_fn
from hierbench.geometry.lorentz import exterior_angle as lorentz_exterior_angle
from hierbench.losses.entailment import (
    MAX_TEMPERATURE,
    MIN_TEMPERATURE,
    LearnableTemperature,
    NoEntailmentPairError,
    angle_entailment_loss,
)

F64 = torch.float64
CURVATURES = [0.1, 1.0, 2.5]


def _randn(*shape: int, seed: int, scale: float = 1.0, dtype=F64) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return scale * torch.randn(*shape, dtype=F64, generator=generator).to(dtype)


# ---------------------------------------------------------------- geometric references
def _on_hyperboloid(space: torch.Tensor, c) -> torch.Tensor:
    """The full (D + 1) point: space components, then time √(1/c + ‖x‖²)."""
    return torch.cat([space, torch.sqrt(1 / c + (space * space).sum()).reshape(1)])


def _minkowski(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return (u[:-1] * v[:-1]).sum() - u[-1] * v[-1]


def _log_map(x: torch.Tensor, y: torch.Tensor, c) -> torch.Tensor:
    """log_x(y) of full points: the tangent vector at x of length d(x, y) pointing to y."""
    cosh = -c * _minkowski(x, y)
    direction = y - cosh * x  # y + c⟨x, y⟩_L x, the part of y tangent at x
    length = torch.acosh(cosh) / c**0.5
    return length * direction / torch.sqrt(_minkowski(direction, direction))


def _geometric_lorentz_angle(xs: torch.Tensor, ys: torch.Tensor, c) -> torch.Tensor:
    """Angle at x, in the Lorentz metric, between −log_x(O) and log_x(y)."""
    x, y = _on_hyperboloid(xs, c), _on_hyperboloid(ys, c)
    origin = torch.cat([torch.zeros_like(xs), (1 / c**0.5) * torch.ones_like(xs[:1])])
    outward, toward = -_log_map(x, origin, c), _log_map(x, y, c)
    norms = torch.sqrt(_minkowski(outward, outward) * _minkowski(toward, toward))
    return torch.acos(_minkowski(outward, toward) / norms)


def _loop_euclidean_angle(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    step = y - x
    return torch.acos((x * step).sum() / (x.norm() * step.norm()))


def _loop_matrix(angle, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.stack([torch.stack([angle(a, b) for b in y]) for a in x])


def test_the_log_map_reference_is_tangent_and_has_the_geodesic_length():
    c = 1.7
    x = _on_hyperboloid(_randn(4, seed=0), c)
    y = _on_hyperboloid(_randn(4, seed=1), c)
    assert _minkowski(x, x).item() == pytest.approx(-1 / c, rel=1e-12)
    v = _log_map(x, y, c)
    assert _minkowski(x, v).item() == pytest.approx(0.0, abs=1e-12)
    distance = torch.acosh(-c * _minkowski(x, y)) / math.sqrt(c)
    assert torch.sqrt(_minkowski(v, v)).item() == pytest.approx(distance.item(), rel=1e-12)


@pytest.mark.parametrize("c", CURVATURES)
def test_lorentz_angle_matches_the_tangent_space_angle_both_ways(c):
    x, y = _randn(6, 5, seed=2, scale=0.8), _randn(7, 5, seed=3, scale=1.5)
    for a, b in ((x, y), (y, x)):
        expected = _loop_matrix(lambda u, v: _geometric_lorentz_angle(u, v, c), a, b)
        assert ((expected > 0.01) & (expected < math.pi - 0.01)).all()  # no clamp reached
        torch.testing.assert_close(lorentz_exterior_angle(a, b, c), expected, rtol=0, atol=1e-8)


def test_lorentz_angle_gradient_matches_the_reference_including_the_curvature():
    weights = _randn(4, 5, seed=4)
    inputs = [_randn(4, 3, seed=5), _randn(5, 3, seed=6), torch.tensor(0.8, dtype=F64)]
    mine = [t.clone().requires_grad_(True) for t in inputs]
    theirs = [t.clone().requires_grad_(True) for t in inputs]
    (lorentz_exterior_angle(*mine) * weights).sum().backward()
    x, y, c = theirs
    (_loop_matrix(lambda u, v: _geometric_lorentz_angle(u, v, c), x, y) * weights).sum().backward()
    for a, b in zip(mine, theirs, strict=True):
        assert b.grad.abs().sum() > 0
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-8, atol=1e-10)


def test_euclidean_angle_matches_a_loop():
    x, y = _randn(6, 4, seed=7), _randn(5, 4, seed=8, scale=2.0)
    for a, b in ((x, y), (y, x)):
        expected = _loop_matrix(_loop_euclidean_angle, a, b)
        torch.testing.assert_close(euclidean_exterior_angle(a, b), expected, rtol=0, atol=1e-10)


@pytest.mark.parametrize("kind", ["lorentz", "euclidean"])
def test_points_on_the_ray_through_x_give_zero_beyond_and_pi_before(kind):
    angle = lorentz_angle_fn(1.3) if kind == "lorentz" else euclidean_exterior_angle
    x = _randn(5, 3, seed=9)
    beyond, before = angle(x, 2.5 * x).diagonal(), angle(x, 0.4 * x).diagonal()
    flattened = math.acos(1 - 1e-6)  # the arccos clamp's smallest angle
    torch.testing.assert_close(beyond, torch.full_like(beyond, flattened))
    torch.testing.assert_close(before, torch.full_like(before, math.pi - flattened))


def test_lorentz_angle_tends_to_the_euclidean_one_as_curvature_vanishes():
    x, y = _randn(5, 4, seed=10), _randn(6, 4, seed=11)
    flat = euclidean_exterior_angle(x, y)
    torch.testing.assert_close(lorentz_exterior_angle(x, y, 1e-7), flat, rtol=0, atol=1e-5)
    assert (lorentz_exterior_angle(x, y, 1.0) - flat).abs().max() > 0.05


def test_lorentz_angle_keeps_its_accuracy_at_huge_norms_in_float32():
    x, y = _randn(6, 8, seed=12, scale=1e10), _randn(7, 8, seed=13, scale=3e9)
    expected = lorentz_exterior_angle(x, y, 1.0)
    got = lorentz_exterior_angle(x.float(), y.float(), 1.0)
    torch.testing.assert_close(got.double(), expected, rtol=0, atol=1e-3)


# ---------------------------------------------------------------- the loss against a loop
ENTAILS = torch.tensor(
    [  # parent 3 and child 7 have no pair; several positives per anchor both ways
        [1, 1, 1, 0, 0, 0, 0, 0],
        [0, 0, 1, 1, 0, 0, 0, 0],
        [1, 0, 0, 0, 1, 1, 1, 0],
        [0, 0, 0, 0, 0, 0, 0, 0],
        [0, 1, 0, 1, 0, 0, 0, 0],
    ],
    dtype=torch.bool,
)


def _loop_nce(anchors, others, positive, logit) -> torch.Tensor:
    terms = []
    for i, anchor in enumerate(anchors):
        positives = [j for j in range(len(others)) if positive(i, j)]
        if not positives:
            continue
        logits = [logit(anchor, other) for other in others]
        log_z = torch.log(sum(torch.exp(value) for value in logits))
        terms.append(-sum(logits[j] - log_z for j in positives) / len(positives))
    return sum(terms) / len(terms)


def _loop_loss(parents, children, entails, tau, angle):
    rows = entails.tolist()
    parent_child = _loop_nce(
        parents, children, lambda i, j: rows[i][j], lambda p, q: (math.pi - angle(p, q)) / tau
    )
    child_parent = _loop_nce(
        children, parents, lambda j, i: rows[i][j], lambda q, p: angle(q, p) / tau
    )
    return parent_child + child_parent, parent_child, child_parent


def _inputs() -> list[torch.Tensor]:
    return [
        _randn(5, 4, seed=20, scale=0.7),
        _randn(8, 4, seed=21, scale=1.2),
        torch.tensor(0.3, dtype=F64),
        torch.tensor(0.9, dtype=F64),
    ]


@pytest.mark.parametrize("kind", ["lorentz", "euclidean"])
def test_loss_matches_a_loop_in_value_and_gradients(kind):
    mine = [t.clone().requires_grad_(True) for t in _inputs()]
    theirs = [t.clone().requires_grad_(True) for t in _inputs()]
    if kind == "lorentz":
        got, parts = angle_entailment_loss(*mine[:2], ENTAILS, mine[2], lorentz_angle_fn(mine[3]))
        c = theirs[3]
        expected = _loop_loss(
            *theirs[:2], ENTAILS, theirs[2], lambda u, v: _geometric_lorentz_angle(u, v, c)
        )
        mine_checked, theirs_checked = mine, theirs
    else:
        got, parts = angle_entailment_loss(*mine[:2], ENTAILS, mine[2], euclidean_exterior_angle)
        expected = _loop_loss(*theirs[:2], ENTAILS, theirs[2], _loop_euclidean_angle)
        mine_checked, theirs_checked = mine[:3], theirs[:3]
    torch.testing.assert_close(got, expected[0], rtol=0, atol=1e-10)
    assert float(parts["loss_parent_child"]) == pytest.approx(expected[1].item(), abs=1e-10)
    assert float(parts["loss_child_parent"]) == pytest.approx(expected[2].item(), abs=1e-10)
    got.backward()
    expected[0].backward()
    for a, b in zip(mine_checked, theirs_checked, strict=True):
        assert b.grad.abs().sum() > 0
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("kind", ["lorentz", "euclidean"])
def test_loss_is_invariant_to_permuting_the_children_with_the_mask(kind):
    angle = lorentz_angle_fn(0.9) if kind == "lorentz" else euclidean_exterior_angle
    parents, children, tau, _ = _inputs()
    order = torch.randperm(len(children), generator=torch.Generator().manual_seed(3))
    assert not torch.equal(order, torch.arange(len(children)))
    loss, parts = angle_entailment_loss(parents, children, ENTAILS, tau, angle)
    shuffled, shuffled_parts = angle_entailment_loss(
        parents, children[order], ENTAILS[:, order], tau, angle
    )
    torch.testing.assert_close(shuffled, loss, rtol=1e-13, atol=1e-13)
    for key, value in parts.items():
        assert float(shuffled_parts[key]) == pytest.approx(float(value), rel=1e-13)


# ---------------------------------------------------------------- errors
def test_an_entailment_matrix_without_pairs_is_an_error():
    with pytest.raises(NoEntailmentPairError, match=r"3 parents .* 5 children") as raised:
        angle_entailment_loss(
            torch.randn(3, 4),
            torch.randn(5, 4),
            torch.zeros(3, 5, dtype=torch.bool),
            torch.tensor(0.1),
            euclidean_exterior_angle,
        )
    assert isinstance(raised.value, ValueError)


@pytest.mark.parametrize(
    ("shapes", "entails", "tau", "match"),
    [
        (((3, 4), (5, 3)), (3, 5), 0.1, r"parents and children .* \(3, 4\) and \(5, 3\)"),
        (((3, 4), (5, 4)), (5, 3), 0.1, r"\(3, 5\) .* got \(5, 3\)"),
        (((3,), (5, 4)), (3, 5), 0.1, r"parents must be a 2-D .* got \(3,\)"),
        (((3, 4), (5, 4)), (3, 5), [0.1], r"0-d tensor, got \(1,\)"),
        (((3, 4), (5, 4)), (3, 5), 0.0, r"finite and > 0, got 0.0"),
    ],
)
def test_loss_rejects_inputs_that_do_not_fit(shapes, entails, tau, match):
    parents, children = (torch.randn(*shape) for shape in shapes)
    with pytest.raises(ValueError, match=match):
        angle_entailment_loss(
            parents,
            children,
            torch.ones(*entails, dtype=torch.bool),
            torch.tensor(tau),
            euclidean_exterior_angle,
        )


def test_loss_rejects_a_non_bool_mask_and_a_misshapen_angle_fn():
    parents, children, tau = torch.randn(3, 4), torch.randn(5, 4), torch.tensor(0.1)
    with pytest.raises(ValueError, match=r"bool tensor, got torch\.int64"):
        angle_entailment_loss(parents, children, torch.ones(3, 5, dtype=torch.long), tau, None)
    with pytest.raises(ValueError, match=r"angle_fn\(parents, children\) .* \(3, 5\) .* \(5, 3\)"):
        angle_entailment_loss(
            parents, children, torch.ones(3, 5, dtype=torch.bool), tau, lambda a, b: b @ a.T
        )


@pytest.mark.parametrize("c", [0.0, -1.0, float("nan"), torch.tensor([1.0]), "1"])
def test_lorentz_angle_rejects_bad_curvatures(c):
    with pytest.raises(ValueError, match="curvature c"):
        lorentz_exterior_angle(torch.randn(2, 3), torch.randn(2, 3), c)


def test_angles_reject_mismatched_dimensions():
    with pytest.raises(ValueError, match=r"\(2, 3\) and \(4, 2\)"):
        euclidean_exterior_angle(torch.randn(2, 3), torch.randn(4, 2))
    with pytest.raises(ValueError, match=r"\(2, 3\) and \(4, 2\)"):
        lorentz_exterior_angle(torch.randn(2, 3), torch.randn(4, 2), 1.0)


# ---------------------------------------------------------------- numerical safety
def _awkward_points(dtype, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Parents with a row at the origin; children with the origin and copies of the parents."""
    parents = _randn(4, 6, seed=30, scale=scale, dtype=dtype)
    parents[0] = 0.0
    children = torch.cat([parents, torch.zeros(1, 6, dtype=dtype), _randn(2, 6, seed=31)])
    children = children.to(dtype)
    children[-1] = parents[2] * (1 + 1e-7)  # nearly coincident
    return parents, children


@pytest.mark.parametrize("kind", ["lorentz", "euclidean"])
@pytest.mark.parametrize(
    ("dtype", "scale"),
    [(F64, 1.0), (torch.float32, 1.0), (torch.float32, 1e4), (torch.float32, 1e10)],
)
def test_values_and_gradients_are_finite_at_the_origin_and_for_coincident_points(
    kind, dtype, scale
):
    parents, children = (t.requires_grad_(True) for t in _awkward_points(dtype, scale))
    c = torch.tensor(1.0, dtype=dtype, requires_grad=True)
    angle = lorentz_angle_fn(c) if kind == "lorentz" else euclidean_exterior_angle
    angles = angle(parents, children)
    assert torch.isfinite(angles).all() and torch.isfinite(angle(children, parents)).all()
    entails = torch.zeros(4, 7, dtype=torch.bool)
    entails[:, :5] = True  # every parent entails the origin, itself and the others
    tau = torch.tensor(0.05, dtype=dtype, requires_grad=True)
    loss, _ = angle_entailment_loss(parents, children, entails, tau, angle)
    loss.backward()
    assert torch.isfinite(loss)
    grads = [parents.grad, children.grad, tau.grad] + ([c.grad] if kind == "lorentz" else [])
    for grad in grads:
        assert torch.isfinite(grad).all()


# ---------------------------------------------------------------- learnable temperature
def test_temperature_starts_at_its_initial_value_without_a_random_draw():
    state = torch.get_rng_state()
    module = LearnableTemperature()
    assert torch.equal(state, torch.get_rng_state())
    assert module.log_inverse.item() == pytest.approx(math.log(1 / 0.07), rel=1e-7)
    assert module().item() == pytest.approx(0.07, rel=1e-6)
    assert LearnableTemperature(initial=0.2)().item() == pytest.approx(0.2, rel=1e-6)


@pytest.mark.parametrize(
    "settings", [{"initial": 0.0}, {"initial": 2.0}, {"minimum": 0.1, "initial": 0.05}]
)
def test_temperature_rejects_an_initial_value_outside_its_range(settings):
    with pytest.raises(ValueError, match="0 < minimum <= initial <= maximum"):
        LearnableTemperature(**settings)


def _bounded(tau: torch.Tensor) -> bool:
    return MIN_TEMPERATURE * (1 - 1e-6) <= tau.item() <= MAX_TEMPERATURE * (1 + 1e-6)


def test_temperature_stays_in_range_under_adamw_at_a_large_lr_and_can_come_back():
    module = LearnableTemperature()
    optimizer = torch.optim.AdamW(module.parameters(), lr=1.0)
    for sign, steps in ((1.0, 40), (-1.0, 40)):  # push τ down, then up
        for _ in range(steps):
            tau = module()
            assert _bounded(tau)
            optimizer.zero_grad()
            (sign * tau).backward()
            optimizer.step()
        assert _bounded(module())
        final = module().item()
        bound = MIN_TEMPERATURE if sign > 0 else MAX_TEMPERATURE
        assert final == pytest.approx(bound, rel=1e-5)


def test_temperature_stays_in_range_when_trained_with_the_loss():
    module = LearnableTemperature()
    parents, children, _, _ = (t.float() for t in _inputs())
    parents.requires_grad_(True)
    optimizer = torch.optim.AdamW([*module.parameters(), parents], lr=5.0)
    angle = lorentz_angle_fn(1.0)
    for _ in range(30):
        tau = module()
        assert _bounded(tau)
        loss, _ = angle_entailment_loss(parents, children, ENTAILS, tau, angle)
        optimizer.zero_grad()
        loss.backward()
        assert module.log_inverse.grad is not None
        optimizer.step()
    assert _bounded(module())


# ---------------------------------------------------------------- the E_A head (issue #33)
def _head_embeddings(normalise: bool) -> torch.Tensor:
    """Eight embeddings of one Euclidean head, unnormalised (E_A) or on the unit sphere."""
    from hierbench.geometry import build_head

    torch.manual_seed(0)
    head = build_head("E", 12, hidden_dim=16, embedding_dim=4, dropout=0.0, normalise=normalise)
    return head.eval()(_randn(8, 12, seed=5, dtype=torch.float32)).detach().double()


def test_the_unnormalised_euclidean_head_gives_asymmetric_exterior_angles():
    """E_A's head: embeddings of different norms, and ext(x, y) != ext(y, x) for every such
    pair, in the readable reference and in the fused form the cells train with."""
    from hierbench.losses.entailment_fused import paired_exterior_angles

    points = _head_embeddings(normalise=False)
    norms = points.norm(dim=1)
    different = (norms[:, None] - norms[None, :]).abs() > 1e-3
    assert different.sum() == 8 * 7  # every pair of distinct rows differs in norm
    forward = euclidean_exterior_angle(points, points)
    assert ((forward - forward.T).abs()[different] > 1e-3).all()
    first, second = paired_exterior_angles(points, points)
    torch.testing.assert_close(first, forward)
    torch.testing.assert_close(second, forward.T)


def test_on_the_unit_sphere_the_exterior_angle_is_symmetric():
    """Why E_A is unnormalised: on the sphere ext(x, y) = ext(y, x) = arccos(−‖x − y‖/2)."""
    points = _head_embeddings(normalise=True)
    torch.testing.assert_close(points.norm(dim=1), torch.ones(8, dtype=F64))
    angles = euclidean_exterior_angle(points, points)
    off_diagonal = ~torch.eye(8, dtype=torch.bool)
    close = {"rtol": 0.0, "atol": 1e-6}  # the head normalises in float32
    torch.testing.assert_close(angles[off_diagonal], angles.T[off_diagonal], **close)
    expected = torch.acos(-torch.cdist(points, points) / 2)
    torch.testing.assert_close(angles[off_diagonal], expected[off_diagonal], **close)
