"""Projector, geometry heads, distances and clipping against independent references."""

from __future__ import annotations

import math

import geoopt
import numpy as np
import pytest
import torch

from hierbench.geometry import (
    TEST_DISTANCE_CLIP,
    TRAIN_DISTANCE_CLIP,
    EuclideanHead,
    PoincareHead,
    Projector,
    build_head,
    count_trainable_parameters,
    euclidean_distance,
    max_norm,
    poincare_distance,
    poincare_map,
    poincare_radius,
    sanitise_and_clip,
)

SETTINGS = {"hidden_dim": 256, "embedding_dim": 32, "dropout": 0.1}
OPERATING_POINTS = [(2.0, 0.4), (0.1, 0.4), (1e-6, 0.4), (0.1, 0.8)]


def _head(geometry: str, in_dim: int = 768, seed: int = 42, **overrides):
    """A head built right after seeding the global RNG, as the training stage does."""
    torch.manual_seed(seed)
    hyperbolic = {"curvature": 2.0, "radius": 0.4} if geometry == "H" else {}
    return build_head(geometry, in_dim, **{**SETTINGS, **hyperbolic, **overrides})


def _mobius_add(x: np.ndarray, y: np.ndarray, c: float) -> np.ndarray:
    """Möbius addition x ⊕_c y on the Poincaré ball (closed form)."""
    xy, x2, y2 = x @ y, x @ x, y @ y
    return ((1 + 2 * c * xy + c * y2) * x + (1 - c * x2) * y) / (1 + 2 * c * xy + c**2 * x2 * y2)


def _poincare_closed_form(x: np.ndarray, y: np.ndarray, c: float) -> float:
    """d_c(x, y) = (2/√c)·artanh(√c·‖(−x) ⊕_c y‖)."""
    return 2 / math.sqrt(c) * math.atanh(math.sqrt(c) * np.linalg.norm(_mobius_add(-x, y, c)))


def _points_in_ball(rng: np.random.Generator, n: int, dim: int, c: float) -> np.ndarray:
    """Random points strictly inside the ball of curvature −c (norm up to 0.9 radius)."""
    directions = rng.normal(size=(n, dim))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    return directions * rng.uniform(0, 0.9, size=(n, 1)) / math.sqrt(c)


def test_projector_has_205600_parameters_for_768_dims():
    assert 768 * 256 + 256 + 2 * 256 + 256 * 32 + 32 == 205_600
    assert count_trainable_parameters(Projector(768)) == 205_600


@pytest.mark.parametrize("geometry", ["E", "H"])
def test_heads_have_exactly_the_projector_parameters(geometry):
    head = _head(geometry)
    assert count_trainable_parameters(head) == 205_600
    assert sum(p.numel() for p in head.parameters()) == 205_600
    assert all(name.startswith("projector.") for name in head.state_dict())


def test_e_and_h_start_from_identical_weights_and_rng_state():
    euclidean = _head("E")
    after_e = torch.rand(4)
    hyperbolic = _head("H")
    after_h = torch.rand(4)
    e_state, h_state = euclidean.state_dict(), hyperbolic.state_dict()
    assert list(e_state) == list(h_state)
    for key in e_state:
        assert torch.equal(e_state[key], h_state[key]), key
    assert torch.equal(after_e, after_h)


def test_different_seeds_give_different_weights():
    a, b = _head("E", seed=1).state_dict(), _head("E", seed=2).state_dict()
    assert not torch.equal(a["projector.hidden.weight"], b["projector.hidden.weight"])


def test_checkpoint_of_h_loads_into_fresh_e_and_back():
    hyperbolic = _head("H", seed=3)
    euclidean = _head("E", seed=4)
    euclidean.load_state_dict(hyperbolic.state_dict(), strict=True)
    hyperbolic.load_state_dict(euclidean.state_dict(), strict=True)


def test_build_head_rejects_inconsistent_settings():
    with pytest.raises(ValueError, match="geometry must be one of"):
        build_head("X", 8, **SETTINGS)
    with pytest.raises(ValueError, match="apply only to geometry 'H'"):
        build_head("E", 8, **SETTINGS, curvature=1.0, radius=0.4)
    with pytest.raises(ValueError, match="needs curvature and radius"):
        build_head("H", 8, **SETTINGS, curvature=1.0)
    with pytest.raises(ValueError, match="curvature must be > 0"):
        build_head("H", 8, **SETTINGS, curvature=0.0, radius=0.4)
    with pytest.raises(ValueError, match="dropout"):
        build_head("E", 8, **{**SETTINGS, "dropout": 1.0})
    with pytest.raises(ValueError, match="hidden_dim"):
        build_head("E", 8, **{**SETTINGS, "hidden_dim": 0})
    with pytest.raises(ValueError, match="normalise=False applies only to geometry 'E'"):
        build_head("H", 8, **SETTINGS, curvature=1.0, radius=0.4, normalise=False)


def test_euclidean_head_outputs_unit_vectors():
    head = _head("E", in_dim=16).eval()
    z = head(torch.randn(10, 16))
    assert z.shape == (10, 32)
    torch.testing.assert_close(z.norm(dim=1), torch.ones(10))


def test_the_unnormalised_euclidean_head_is_the_projector_as_it_is():
    """E_A's head: the normalising head's weights and state dict, the projector's raw output
    (norms free), the same Euclidean distance."""
    raw, unit = _head("E", in_dim=16, normalise=False).eval(), _head("E", in_dim=16).eval()
    assert (raw.normalise, unit.normalise) == (False, True) and "normalise=False" in repr(raw)
    assert list(raw.state_dict()) == list(unit.state_dict())
    for key, tensor in raw.state_dict().items():
        assert torch.equal(tensor, unit.state_dict()[key]), key
    x = torch.randn(32, 16)
    with torch.no_grad():
        output = raw(x)
        assert torch.equal(output, raw.projector(x))
        torch.testing.assert_close(unit(x), output / output.norm(dim=1, keepdim=True))
    assert output.norm(dim=1).std() > 0.01


def test_euclidean_distance_matches_numpy():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(7, 5)), rng.normal(size=(9, 5))
    expected = np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))
    got = EuclideanHead(Projector(3)).distance(torch.from_numpy(a), torch.from_numpy(b))
    np.testing.assert_allclose(got.numpy(), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("curvature", [2.0, 0.1])
def test_poincare_distance_matches_geoopt_inside_the_ball(curvature):
    rng = np.random.default_rng(1)
    a, b = _points_in_ball(rng, 7, 5, curvature), _points_in_ball(rng, 9, 5, curvature)
    ball = geoopt.PoincareBall(c=torch.tensor(curvature, dtype=torch.float64))
    a_t, b_t = torch.from_numpy(a), torch.from_numpy(b)
    expected = ball.dist(a_t[:, None, :], b_t[None, :, :])
    got = poincare_distance(a_t, b_t, curvature)
    torch.testing.assert_close(got, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("geometry", ["E", "H"])
def test_duplicate_rows_are_exactly_zero_apart_and_near_duplicates_are_resolved(geometry):
    """Gram-product distances: bitwise duplicates give 0 (zero gradient), 1e-4 gaps survive."""
    head = _head(geometry, in_dim=4)
    base = torch.tensor([[0.3, -0.2, 0.1], [0.05, 0.1, -0.3]], dtype=torch.float64)
    near = base[:1] + torch.tensor([[1e-4, 0.0, 0.0]], dtype=torch.float64)
    z = torch.cat([base, base[:1], near]).requires_grad_(True)
    distances = head.distance(z, z)
    assert distances[0, 2] == 0 and distances[2, 0] == 0
    expected_gap = _reference_distance(geometry, base[0], near[0])
    assert distances[0, 3].item() == pytest.approx(expected_gap, rel=1e-6)
    distances[0, 2].backward()
    assert torch.equal(z.grad, torch.zeros_like(z))


@pytest.mark.parametrize("geometry", ["E", "H"])
def test_float32_distances_agree_with_a_float64_reference(geometry):
    head = _head(geometry, in_dim=16).eval()
    with torch.no_grad():
        z = head(torch.randn(64, 16))
        got = head.distance(z, z)
        reference = head.distance(z.double(), z.double())
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.double(), reference, rtol=1e-6, atol=1e-7)


def _reference_distance(geometry: str, x: torch.Tensor, y: torch.Tensor) -> float:
    """Distance of two points by the textbook formulas (difference vector, Möbius addition)."""
    if geometry == "E":
        return float((x - y).norm())
    return _poincare_closed_form(x.numpy(), y.numpy(), 2.0)  # the curvature _head uses


@pytest.mark.parametrize("curvature", [2.0, 0.1, 1.0])
def test_poincare_distance_matches_closed_form(curvature):
    rng = np.random.default_rng(2)
    a, b = _points_in_ball(rng, 6, 5, curvature), _points_in_ball(rng, 8, 5, curvature)
    expected = np.array([[_poincare_closed_form(x, y, curvature) for y in b] for x in a])
    head = PoincareHead(Projector(3), curvature, 0.4)
    got = head.distance(torch.from_numpy(a), torch.from_numpy(b))
    assert got.dtype == torch.float64
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(("curvature", "radius"), OPERATING_POINTS)
def test_poincare_head_matches_the_tangent_recipe(curvature, radius):
    head = PoincareHead(Projector(16), curvature, radius).double().eval()
    x = torch.randn(9, 16, dtype=torch.float64)
    t = head.projector(x).detach().numpy()
    norm = np.maximum(np.linalg.norm(t, axis=1, keepdims=True), 1e-6)
    scaled = radius * np.tanh(norm) * t / norm
    u = np.linalg.norm(scaled, axis=1, keepdims=True)
    sqrt_c = math.sqrt(curvature)
    expected = np.tanh(sqrt_c * u) * scaled / (sqrt_c * u)  # expmap0, far from the boundary
    np.testing.assert_allclose(head(x).detach().numpy(), expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(("curvature", "radius"), [*OPERATING_POINTS, (2.0, 50.0), (1.0, 1e3)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_poincare_outputs_stay_inside_the_ball_for_huge_projector_outputs(curvature, radius, dtype):
    head = PoincareHead(Projector(16), curvature, radius).to(dtype).eval()
    with torch.no_grad():
        head.projector.output.weight.mul_(1e6)
    z = head(1e3 * torch.randn(20, 16, dtype=dtype))
    assert torch.isfinite(z).all()
    assert max_norm(z) < poincare_radius(curvature)
    distances = head.distance(z, z)
    assert torch.isfinite(distances).all()


def test_poincare_curvature_is_a_fixed_float_outside_the_state():
    head = PoincareHead(Projector(4), 0.1, 0.4)
    assert head.curvature == 0.1
    assert list(head.state_dict()) == list(head.projector.state_dict(prefix="projector."))
    assert not any(name.endswith("c") for name, _ in head.named_parameters())


def _geoopt_map(tangent: torch.Tensor, curvature: float, radius: float) -> torch.Tensor:
    """The protocol's recipe with geoopt itself: projx(expmap0(t')) on PoincareBall(c)."""
    ball = geoopt.PoincareBall(c=torch.tensor(curvature, dtype=torch.float64), learnable=False)
    norm = tangent.norm(dim=1, keepdim=True).clamp_min(1e-6)
    return ball.projx(ball.expmap0(radius * torch.tanh(norm) * tangent / norm))


@pytest.mark.parametrize(("curvature", "radius"), [*OPERATING_POINTS, (2.0, 50.0), (1.0, 1e3)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("scale", [1e-9, 1e-3, 1.0, 1e4])
def test_poincare_map_equals_geoopt_projx_expmap0(curvature, radius, dtype, scale):
    """Tiny, ordinary and huge tangents, with and without the projx cap at work."""
    tangent = scale * torch.randn(50, 8, dtype=dtype, generator=torch.Generator().manual_seed(0))
    tangent[0] = 0.0
    got = poincare_map(tangent, curvature, radius)
    expected = _geoopt_map(tangent, curvature, radius)
    assert got.dtype == dtype
    tolerance = 1e-6 if dtype == torch.float32 else 1e-13
    torch.testing.assert_close(got, expected, rtol=tolerance, atol=tolerance * 1e-6)


def test_poincare_map_gradients_match_geoopt():
    tangent = torch.randn(20, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    weights = torch.randn(20, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    ours, reference = tangent.clone().requires_grad_(True), tangent.clone().requires_grad_(True)
    (poincare_map(ours, 2.0, 0.4) * weights).sum().backward()
    (_geoopt_map(reference, 2.0, 0.4) * weights).sum().backward()
    torch.testing.assert_close(ours.grad, reference.grad, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("geometry", ["E", "H"])
def test_self_distance_is_zero_with_finite_gradients(geometry):
    head = _head(geometry, in_dim=16).double()
    x = torch.randn(12, 16, dtype=torch.float64, requires_grad=True)
    z = head(x)
    distances = head.distance(z, z)
    torch.testing.assert_close(distances.diagonal(), torch.zeros(12, dtype=torch.float64))
    distances.sum().backward()
    assert torch.isfinite(x.grad).all()
    assert x.grad.abs().sum() > 0


def test_euclidean_diagonal_gradient_is_finite_for_identical_rows():
    z = torch.ones(3, 4, dtype=torch.float64, requires_grad=True)
    euclidean_distance(z, z).sum().backward()
    assert torch.isfinite(z.grad).all()


def test_sanitise_and_clip_replaces_non_finite_by_upper_and_clamps():
    raw = torch.tensor([-1.0, 0.0, 5.0, 25.0, float("nan"), float("inf"), float("-inf")])
    got = sanitise_and_clip(raw, TRAIN_DISTANCE_CLIP)
    expected = torch.tensor([0.0, 0.0, 5.0, 20.0, 20.0, 20.0, 20.0])
    torch.testing.assert_close(got, expected, rtol=0, atol=0)
    big = torch.tensor([3e6, 10.0, float("nan")])
    torch.testing.assert_close(
        sanitise_and_clip(big, TEST_DISTANCE_CLIP), torch.tensor([1e6, 10.0, 1e6]), rtol=0, atol=0
    )


def test_sanitise_and_clip_passes_gradients_only_inside_the_range():
    raw = torch.tensor([1.0, 30.0, -2.0], requires_grad=True)
    sanitise_and_clip(raw, 20.0).sum().backward()
    torch.testing.assert_close(raw.grad, torch.tensor([1.0, 0.0, 0.0]))


def test_sanitise_and_clip_rejects_a_bad_upper():
    with pytest.raises(ValueError, match="upper"):
        sanitise_and_clip(torch.zeros(2), float("nan"))
    with pytest.raises(ValueError, match="upper"):
        sanitise_and_clip(torch.zeros(2), 0.0)


def test_radius_and_max_norm():
    assert poincare_radius(2.0) == pytest.approx(0.70710678, rel=1e-8)
    assert poincare_radius(0.1) == pytest.approx(3.16227766, rel=1e-8)
    assert max_norm(torch.tensor([[3.0, 4.0], [0.0, 1.0]])) == pytest.approx(5.0)
    with pytest.raises(ValueError, match="curvature"):
        poincare_radius(-1.0)
    with pytest.raises(ValueError, match="empty"):
        max_norm(torch.zeros(0, 3))


def test_distance_rejects_mismatched_dims():
    mismatch = r"a and b must have the same dimension D, got shapes \(2, 3\) and \(2, 4\)"
    with pytest.raises(ValueError, match=mismatch):
        euclidean_distance(torch.zeros(2, 3), torch.zeros(2, 4))


@pytest.mark.parametrize("curvature", [None, 2.0, 0.1])
def test_distance_gradients_match_finite_differences(curvature):
    """The hand-derived backward against torch.autograd.gradcheck, for (a, b) and for (z, z)."""
    rng = np.random.default_rng(3)
    c = curvature or 1.0
    a = torch.from_numpy(_points_in_ball(rng, 5, 4, c)).requires_grad_(True)
    b = torch.from_numpy(_points_in_ball(rng, 6, 4, c)).requires_grad_(True)

    def distance(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if curvature is None:
            return euclidean_distance(x, y)
        return poincare_distance(x, y, curvature)

    assert torch.autograd.gradcheck(distance, (a, b), eps=1e-6, atol=1e-7, rtol=1e-5)
    # the self matrix has exact zeros on the diagonal, where the gradient is defined as 0
    z = a.detach().clone().requires_grad_(True)
    weights = torch.from_numpy(rng.uniform(size=(5, 5)))
    (distance(z, z) * weights).sum().backward()
    off_diagonal = ~torch.eye(5, dtype=torch.bool)

    def off_diagonal_sum(x: torch.Tensor) -> torch.Tensor:
        return (distance(x, x) * weights)[off_diagonal].sum()

    assert torch.autograd.gradcheck(off_diagonal_sum, (a,), eps=1e-6, atol=1e-7, rtol=1e-5)
    a.grad = None
    off_diagonal_sum(a).backward()
    torch.testing.assert_close(z.grad, a.grad, rtol=1e-12, atol=1e-15)


def test_points_beyond_the_ball_get_clipped_distances_and_finite_zero_gradients():
    inside = torch.tensor([[0.1, 0.0], [0.0, 0.2]], dtype=torch.float64)
    outside = torch.tensor([[3.0, 0.0], [0.0, 1.0]], dtype=torch.float64)  # beyond, on the ball
    z = torch.cat([inside, outside]).requires_grad_(True)
    distances = sanitise_and_clip(poincare_distance(z, z, 1.0), TRAIN_DISTANCE_CLIP)
    assert torch.isfinite(distances).all()
    assert (distances[2:, :] == TRAIN_DISTANCE_CLIP).sum() >= 3
    distances.sum().backward()
    assert torch.isfinite(z.grad).all()
    assert z.grad[:2].abs().sum() > 0


@pytest.mark.parametrize(
    ("curvature", "radius", "name"), [(0.0, 0.4, "curvature"), (2.0, -1.0, "radius")]
)
def test_poincare_map_rejects_a_bad_curvature_or_radius(curvature, radius, name):
    with pytest.raises(ValueError, match=name):
        poincare_map(torch.zeros(2, 3), curvature, radius)
