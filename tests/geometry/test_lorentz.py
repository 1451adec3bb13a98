"""The Lorentz head and its geometry against geoopt's ``Lorentz(k)``, finite differences and the
metric engine's NumPy twin."""

from __future__ import annotations

import math

import geoopt
import numpy as np
import pytest
import torch

from hierbench.geometry import (
    EXTRA_HEADS,
    HEADS,
    LorentzHead,
    Projector,
    build_head,
    expmap0,
    lorentz_distance,
    lorentz_time,
    pairwise_inner,
)
from hierbench.geometry.lorentz import CURVATURE_RANGE, MAX_SCALED_NORM
from hierbench.metrics import pairwise_distances
from hierbench.protocol import EXTRA_GEOMETRY_NAMES, GEOMETRIES, HEAD_NAMES, LORENTZ
from hierbench.training.trainer import head_param_groups

SETTINGS = {"hidden_dim": 256, "embedding_dim": 32, "dropout": 0.1}
CURVATURES = [0.1, 1.0, 2.0]


def _tangents(n: int, dim: int, seed: int, scale: float = 0.7) -> torch.Tensor:
    """Random float64 tangent vectors at the origin (space parts)."""
    return scale * torch.randn(
        n, dim, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)
    )


def _points(n: int, dim: int, c: float, seed: int) -> torch.Tensor:
    """Random hyperboloid points (space components), geodesic radii around 1/√c·O(1)."""
    return expmap0(_tangents(n, dim, seed, scale=1.0 / math.sqrt(c)), c)


def _full(x: torch.Tensor, c: float) -> torch.Tensor:
    """geoopt's (time, space) coordinates of points given by their space components."""
    return torch.cat([lorentz_time(x, c), x], dim=-1)


def _manifold(c: float) -> geoopt.Lorentz:
    """geoopt's hyperboloid ⟨x, x⟩_L = −k of curvature −1/k, k = 1/c, in float64."""
    return geoopt.Lorentz(k=torch.tensor(1.0 / c, dtype=torch.float64))


def _head(geometry: str, in_dim: int = 16, seed: int = 42, curvature: float = 1.0):
    """A head built right after seeding the global RNG, as the training stage does."""
    torch.manual_seed(seed)
    options = {
        "E": {},
        "H": {"curvature": 2.0, "radius": 0.4},
        "L": {"curvature": curvature},
    }[geometry]
    return build_head(geometry, in_dim, **SETTINGS, **options)


def test_protocol_keeps_l_out_of_the_factorial():
    assert GEOMETRIES == ("E", "H")
    assert set(HEADS) == {"E", "H"}
    assert EXTRA_GEOMETRY_NAMES == {LORENTZ: "lorentz"} and LORENTZ == "L"
    assert HEAD_NAMES == {"E": "euclidean", "H": "poincare", "L": "lorentz"}
    assert EXTRA_HEADS[LORENTZ] is LorentzHead and len(EXTRA_HEADS) == 1


@pytest.mark.parametrize("c", CURVATURES)
def test_expmap0_matches_geoopt(c):
    v = _tangents(40, 6, seed=0, scale=1.5)
    v[0] = 0.0
    v[1] = 1e-12
    ours = _full(expmap0(v, c), c)
    tangent = torch.cat([torch.zeros(40, 1, dtype=torch.float64), v], dim=1)
    reference = _manifold(c).expmap0(tangent, project=False)
    # geoopt clamps the tangent norm at 1e-4 from below, so rows 0 and 1 differ there
    torch.testing.assert_close(ours[2:], reference[2:], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(ours[:2, 1:], v[:2], rtol=0, atol=1e-20)
    torch.testing.assert_close(ours[:2, 0], torch.full((2,), 1 / math.sqrt(c), dtype=torch.float64))


@pytest.mark.parametrize("c", CURVATURES)
def test_points_lie_on_the_hyperboloid(c):
    x = _points(30, 5, c, seed=1)
    ok, reason = _manifold(c)._check_point_on_manifold(_full(x, c), atol=1e-10, rtol=1e-10)
    assert ok, reason
    torch.testing.assert_close(
        pairwise_inner(x, x, c).diagonal(), torch.full((30,), -1.0 / c, dtype=torch.float64)
    )


@pytest.mark.parametrize("c", CURVATURES)
def test_pairwise_inner_matches_geoopt(c):
    a, b = _points(7, 5, c, seed=2), _points(9, 5, c, seed=3)
    expected = _manifold(c).inner(None, _full(a, c)[:, None], _full(b, c)[None])
    torch.testing.assert_close(pairwise_inner(a, b, c), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("c", CURVATURES)
def test_distance_matches_geoopt(c):
    a, b = _points(7, 5, c, seed=4), _points(9, 5, c, seed=5)
    expected = _manifold(c).dist(_full(a, c)[:, None], _full(b, c)[None])
    got = lorentz_distance(a, b, c)
    assert got.shape == (7, 9) and got.dtype == torch.float64
    assert expected.min() > 0.1  # far from geoopt's own clamp near 0
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("c", CURVATURES)
def test_distance_from_the_origin_is_the_tangent_norm(c):
    v = _tangents(12, 4, seed=6, scale=3.0)
    origin = torch.zeros(1, 4, dtype=torch.float64)
    got = lorentz_distance(origin, expmap0(v, c), c)[0]
    torch.testing.assert_close(got, v.norm(dim=1), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("c", CURVATURES)
def test_distance_is_symmetric_and_zero_on_the_diagonal_with_finite_gradients(c):
    x = torch.cat([_points(6, 4, c, seed=7), torch.zeros(1, 4, dtype=torch.float64)])
    x = torch.cat([x, x[:2]]).requires_grad_(True)  # rows 7, 8 duplicate rows 0, 1
    curvature = torch.tensor(c, dtype=torch.float64, requires_grad=True)
    distances = lorentz_distance(x, x, curvature)
    torch.testing.assert_close(distances, distances.T, rtol=1e-14, atol=1e-14)
    assert torch.equal(distances.diagonal(), torch.zeros(9, dtype=torch.float64))
    assert distances[0, 7] == 0 and distances[1, 8] == 0
    assert (distances[:7, :7] + torch.eye(7) > 0).all()
    # identical rows (the origin included) have a zero gradient, for the points and for c
    (distances.diagonal().sum() + distances[0, 7] + distances[8, 1]).backward()
    assert torch.equal(x.grad, torch.zeros_like(x)) and curvature.grad == 0
    x.grad, curvature.grad = None, None
    lorentz_distance(x, x, curvature).sum().backward()
    assert torch.isfinite(x.grad).all() and torch.isfinite(curvature.grad)
    assert x.grad[6].abs().sum() > 0 and curvature.grad != 0  # the origin moves too


def test_near_duplicates_are_resolved():
    c = 1.0
    base = _points(1, 3, c, seed=8)
    near = base + torch.tensor([[1e-4, 0.0, 0.0]], dtype=torch.float64)
    got = lorentz_distance(base, near, c).item()
    inner = (base * near).sum() - lorentz_time(base, c) * lorentz_time(near, c)
    # acosh(1 + u) with u = −c⟨x, y⟩ − 1 from the Lorentzian norm of the difference
    diff = _full(near, c) - _full(base, c)
    u = c / 2 * (-(diff[0, 0] ** 2) + (diff[0, 1:] ** 2).sum())
    # the Gram product's rounding (~1e-16·‖x‖²) against a squared gap of 1e-8
    assert got == pytest.approx(math.acosh(1 + u.item()), rel=1e-6)
    assert got == pytest.approx(math.acosh(-c * inner.item()), rel=1e-5)
    assert got > 5e-5


@pytest.mark.parametrize("c", CURVATURES)
def test_distance_gradients_match_finite_differences_including_the_curvature(c):
    a, b = _points(5, 4, c, seed=9), _points(6, 4, c, seed=10)
    a.requires_grad_(True)
    b.requires_grad_(True)
    curvature = torch.tensor(c, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lorentz_distance, (a, b, curvature), eps=1e-6, atol=1e-7, rtol=1e-5
    )
    weights = torch.from_numpy(np.random.default_rng(0).uniform(size=(5, 5)))
    off_diagonal = ~torch.eye(5, dtype=torch.bool)

    def self_sum(x: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return (lorentz_distance(x, x, k) * weights)[off_diagonal].sum()

    assert torch.autograd.gradcheck(self_sum, (a, curvature), eps=1e-6, atol=1e-7, rtol=1e-5)
    # the self-pair path's gradient equals that of two distinct (equal) operands
    z = a.detach().clone().requires_grad_(True)
    (lorentz_distance(z, z, c) * weights).sum().backward()
    left, right = a.detach().clone().requires_grad_(True), a.detach().clone().requires_grad_(True)
    (lorentz_distance(left, right, c) * weights).sum().backward()
    torch.testing.assert_close(z.grad, left.grad + right.grad, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("c", CURVATURES)
def test_expmap0_gradients_match_finite_differences(c):
    v = _tangents(6, 4, seed=11).requires_grad_(True)
    curvature = torch.tensor(c, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(expmap0, (v, curvature), eps=1e-6, atol=1e-7, rtol=1e-5)
    zero = torch.zeros(2, 4, dtype=torch.float64, requires_grad=True)
    (expmap0(zero, c) * torch.arange(8.0, dtype=torch.float64).view(2, 4)).sum().backward()
    torch.testing.assert_close(zero.grad, torch.arange(8.0, dtype=torch.float64).view(2, 4))


def test_curvature_given_as_float_or_tensor_agrees():
    a, b = _points(4, 3, 0.3, seed=12), _points(5, 3, 0.3, seed=13)
    torch.testing.assert_close(
        lorentz_distance(a, b, 0.3), lorentz_distance(a, b, torch.tensor(0.3, dtype=torch.float64))
    )
    with pytest.raises(ValueError, match="curvature"):
        lorentz_distance(a, b, 0.0)
    with pytest.raises(ValueError, match="scalar"):
        lorentz_distance(a, b, torch.ones(2))
    mismatch = r"a and b must have the same dimension D, got shapes \(4, 3\) and \(5, 2\)"
    with pytest.raises(ValueError, match=mismatch):
        lorentz_distance(a, b[:, :2], 0.3)


def test_heads_start_from_identical_projector_weights_and_rng_state():
    states, after = {}, {}
    for geometry in ("E", "H", "L"):
        states[geometry] = _head(geometry, curvature=0.5).state_dict()
        after[geometry] = torch.rand(4)
    lorentz = dict(states["L"])
    assert lorentz.pop("log_curvature").item() == pytest.approx(math.log(0.5), rel=1e-7)
    # meru's tangent scale starts at 1/√D (D = 32): no random draw either
    assert lorentz.pop("log_tangent_scale").item() == pytest.approx(-0.5 * math.log(32), rel=1e-7)
    for geometry in ("E", "H"):
        assert list(lorentz) == list(states[geometry])
        for key, value in states[geometry].items():
            assert torch.equal(lorentz[key], value), (geometry, key)
        assert torch.equal(after["L"], after[geometry])


def test_lorentz_head_parameters_and_checkpoint_round_trip():
    head = _head("L", curvature=2.0)
    assert {"log_curvature", "log_tangent_scale"} <= set(dict(head.named_parameters()))
    assert (
        sum(p.numel() for p in head.parameters())
        == sum(p.numel() for p in head.projector.parameters()) + 2
    )
    with torch.no_grad():
        head.log_curvature.fill_(math.log(3.0))
        head.log_tangent_scale.fill_(math.log(0.4))
    fresh = _head("L", seed=7, curvature=2.0)
    fresh.load_state_dict(head.state_dict(), strict=True)
    assert fresh.curvature.item() == pytest.approx(3.0, rel=1e-6)
    assert fresh.tangent_scale.item() == pytest.approx(0.4, rel=1e-6)
    x = torch.randn(5, 16)
    torch.testing.assert_close(fresh.eval()(x), head.eval()(x), rtol=0, atol=0)


def test_build_head_options_for_l():
    assert isinstance(_head("L"), LorentzHead)
    with pytest.raises(ValueError, match="needs an initial curvature and no radius"):
        build_head("L", 8, **SETTINGS)
    with pytest.raises(ValueError, match="needs an initial curvature and no radius"):
        build_head("L", 8, **SETTINGS, curvature=1.0, radius=0.4)
    with pytest.raises(ValueError, match="curvature must be > 0"):
        build_head("L", 8, **SETTINGS, curvature=-1.0)
    with pytest.raises(ValueError, match="geometry must be one of"):
        build_head("X", 8, **SETTINGS)


@pytest.mark.parametrize("c", CURVATURES)
def test_head_forward_is_expmap0_of_the_projector_at_its_curvature(c):
    head = LorentzHead(Projector(16), c).double().eval()
    with torch.no_grad():
        head.log_curvature.fill_(math.log(1.5 * c))
        head.log_tangent_scale.fill_(math.log(0.3))
    x = torch.randn(9, 16, dtype=torch.float64)
    tangent = 0.3 * head.projector(x).detach()  # meru's α times the projector's output
    norm = tangent.norm(dim=1, keepdim=True)
    sqrt_c = math.sqrt(1.5 * c)
    expected = torch.sinh(sqrt_c * norm) * tangent / (sqrt_c * norm)
    torch.testing.assert_close(head(x), expected, rtol=1e-12, atol=1e-14)
    assert head.curvature.item() == pytest.approx(1.5 * c, rel=1e-12)


def test_gradients_reach_the_curvature_through_map_and_distance():
    head = _head("L", curvature=1.0)
    z = head(torch.randn(8, 16))
    distances = head.distance(z, z)
    assert distances.shape == (8, 8)
    distances.sum().backward()
    assert head.log_curvature.grad is not None and head.log_curvature.grad != 0
    assert all(torch.isfinite(p.grad).all() for p in head.parameters())


@pytest.mark.parametrize("direction", [1.0, -1.0])
def test_curvature_stays_in_its_range_under_adamw_and_leaves_a_bound(direction):
    """The objective pushes c to a bound at a huge learning rate; reversed, it comes back."""
    c_init = 0.5
    head = _head("L", curvature=c_init)
    optimizer = torch.optim.AdamW(head.parameters(), lr=5.0, weight_decay=0.01, fused=True)
    features = torch.randn(16, 16)
    low, high = c_init / CURVATURE_RANGE, c_init * CURVATURE_RANGE
    seen = []
    for sign in [direction] * 8 + [-direction] * 12:
        z = head.train()(features)
        loss = sign * head.curvature + 0.0 * head.distance(z, z).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        head(features)  # a training forward projects the parameter back into range
        seen.append(head.curvature.item())
        assert low * (1 - 1e-6) <= seen[-1] <= high * (1 + 1e-6)
        log_c = head.log_curvature.item()
        assert math.log(low) - 1e-6 <= log_c <= math.log(high) + 1e-6
    bound = low if direction > 0 else high
    assert seen[7] == pytest.approx(bound, rel=1e-5)  # pinned at the bound ...
    assert abs(seen[-1] - bound) > 0.1 * low  # ... and free to leave it


def test_the_tangent_scale_never_scales_up_and_learns_without_weight_decay():
    """meru's α: starts at 1/√D, a training forward clamps log α at 0 (α ≤ 1, where gradients
    still move it), an eval forward clamps only its value; the optimiser's head groups give it
    no weight decay."""
    head = _head("L", curvature=1.0)
    assert head.tangent_scale.item() == pytest.approx(32**-0.5, rel=1e-6)
    features = torch.randn(8, 16)
    head.train()(features).sum().backward()
    assert head.log_tangent_scale.grad is not None and head.log_tangent_scale.grad != 0
    with torch.no_grad():
        head.log_tangent_scale.fill_(0.7)
    head.eval()(features)
    assert head.log_tangent_scale.item() == pytest.approx(0.7) and head.tangent_scale.item() == 1.0
    head.train()(features)
    assert head.log_tangent_scale.item() == 0.0
    groups = head_param_groups(head)
    decayed = {
        id(p) for group in groups if group.get("weight_decay") != 0.0 for p in group["params"]
    }
    assert id(head.log_tangent_scale) not in decayed and id(head.log_curvature) not in decayed


def test_eval_forward_does_not_touch_the_parameter_but_clamps_the_curvature():
    head = _head("L", curvature=1.0).eval()
    with torch.no_grad():
        head.log_curvature.fill_(math.log(1e3))
    head(torch.randn(4, 16))
    assert head.log_curvature.item() == pytest.approx(math.log(1e3))
    assert head.curvature.item() == pytest.approx(CURVATURE_RANGE, rel=1e-6)


@pytest.mark.parametrize("c", CURVATURES)
def test_metric_engine_distance_equals_the_torch_one(c):
    a, b = _points(11, 6, c, seed=14), _points(13, 6, c, seed=15)
    b[3] = a[2]  # an identical pair
    expected = lorentz_distance(a, b, c).numpy()
    got = pairwise_distances(a, b, geometry="lorentz", curvature=c)
    distinct = np.ones(got.shape, dtype=bool)
    distinct[2, 3] = False
    np.testing.assert_allclose(got[distinct], expected[distinct], rtol=1e-9, atol=1e-12)
    # no rounding-level cut-off here (as for E and H): √(1e-16·‖x‖²)-sized, not exactly 0
    assert expected[2, 3] == 0 and got[2, 3] < 1e-6
    got32 = pairwise_distances(a.float(), b.float(), geometry="lorentz", curvature=c)
    np.testing.assert_allclose(got32, lorentz_distance(a.float(), b.float(), c), atol=1e-5)


def test_metric_engine_clips_and_checks_the_lorentz_settings():
    a = torch.tensor([[0.0, 0.0], [1e200, 0.0], [float("nan"), 0.0]], dtype=torch.float64)
    got = pairwise_distances(a, a[:1], geometry="lorentz", curvature=1.0, distance_clip=50.0)
    np.testing.assert_array_equal(got[:, 0], [0.0, 50.0, 50.0])
    with pytest.raises(ValueError, match="needs the hyperboloid's"):
        pairwise_distances(a, a, geometry="lorentz")
    with pytest.raises(ValueError, match="finite positive"):
        pairwise_distances(a, a, geometry="lorentz", curvature=0.0)


@pytest.mark.parametrize("c", CURVATURES)
def test_huge_tangents_give_finite_float32_outputs_and_gradients(c):
    head = LorentzHead(Projector(16), c).train()
    with torch.no_grad():
        head.projector.output.weight.mul_(1e6)
    features = 1e3 * torch.randn(20, 16)
    z = head(features)
    assert z.dtype == torch.float32 and torch.isfinite(z).all()
    norms = z.norm(dim=1)
    assert norms.max() <= math.sinh(MAX_SCALED_NORM) / math.sqrt(c) * (1 + 1e-5)
    assert torch.isfinite(lorentz_time(z, head.curvature)).all()
    distances = head.distance(z, z)
    assert torch.isfinite(distances).all() and distances.max() > 10
    distances.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in head.parameters())


def test_float32_distances_agree_with_a_float64_reference():
    head = _head("L", curvature=1.0).eval()
    with torch.no_grad():
        z = head(torch.randn(64, 16))
        got = head.distance(z, z)
        reference = lorentz_distance(z.double(), z.double(), head.curvature.double())
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.double(), reference, rtol=1e-6, atol=1e-7)
