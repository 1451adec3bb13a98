"""The Lorentz geometry (L): the projector's output mapped onto the hyperboloid of a learnable
curvature −c by the exponential map at its origin, and the hyperboloid's geodesic distance.

Conventions (those of meru's ``lorentz.py``): the hyperboloid of curvature −c (c > 0) holds the
points x = (x_time, x_space) with −x_time² + ‖x_space‖² = −1/c and x_time > 0. Only the space
components (D of them) are stored and passed around; x_time = √(1/c + ‖x_space‖²) is implied.
⟨x, y⟩_L = ⟨x_space, y_space⟩ − x_time·y_time, and d(x, y) = (1/√c)·acosh(−c⟨x, y⟩_L).
geoopt's ``Lorentz(k)`` is the same manifold with k = 1/c and the time coordinate first.

Every function takes ``c`` as a python float or a 0-d tensor; a tensor that requires grad
receives the derivative of the result with respect to the curvature.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from hierbench.geometry.cones import SQRT_FLOOR, safe_acos, safe_norm
from hierbench.geometry.distances import SQUARED_ROUNDING, _finite_or_zero
from hierbench.geometry.projector import Projector
from hierbench.geometry.validation import check_curvature, check_pair, check_positive

Curvature = float | torch.Tensor

# ‖v‖·√c below this is treated as this in expmap0 (sinh(t)/t → 1): the map is v ↦ v there.
MIN_SCALED_NORM = 1e-8
# sinh's argument in expmap0 is at most asinh(2^15) (meru's bound): ‖x_space‖ ≤ 2^15/√c, so
# x_time² and the distance's acosh argument stay far from float32's range.
MAX_SCALED_NORM = math.asinh(2.0**15)
# The learnable curvature stays within [c_init / 10, c_init · 10] (meru's range).
CURVATURE_RANGE = 10.0


def _curvature(c: Curvature, like: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
    """c as a tensor on ``like``'s device, a float in ``dtype`` (default ``like``'s) and checked
    to be > 0; a tensor keeps its dtype and is not checked (that would synchronise a GPU)."""
    if isinstance(c, torch.Tensor):
        return c.to(device=like.device)
    check_positive("curvature", c)
    return torch.tensor(float(c), dtype=dtype or like.dtype, device=like.device)


def time_from_squared_norms(squared_norms: torch.Tensor, c: Curvature) -> torch.Tensor:
    """Time components √(1/c + ‖x‖²) from the squared norms ‖x‖² of the space components (for
    code that has them already, such as the fused angle kernel)."""
    return torch.sqrt(1.0 / c + squared_norms)


def lorentz_time(x: torch.Tensor, c: Curvature) -> torch.Tensor:
    """Time components √(1/c + ‖x‖²) of hyperboloid points given by their space components.

    x: (..., D) space components; returns (..., 1).
    """
    return time_from_squared_norms((x * x).sum(dim=-1, keepdim=True), _curvature(c, x))


def expmap0(v: torch.Tensor, c: Curvature) -> torch.Tensor:
    """Space components of exp_o(v), o the hyperboloid's origin: sinh(√c‖v‖)·v/(√c‖v‖).

    v: (..., D), the space part of a tangent vector at the origin (its time part is 0); returns
    (..., D). √c‖v‖ enters sinh clamped to [MIN_SCALED_NORM, MAX_SCALED_NORM] and the division
    clamped below at MIN_SCALED_NORM: tiny tangents map to themselves (zero included, with the
    identity as derivative), and beyond the upper bound the image's norm stays 2^15/√c.
    """
    sqrt_c = _curvature(c, v).sqrt()
    scaled = sqrt_c * v.norm(dim=-1, keepdim=True)
    bounded = scaled.clamp(MIN_SCALED_NORM, MAX_SCALED_NORM)
    return v * (torch.sinh(bounded) / scaled.clamp_min(MIN_SCALED_NORM))


def pairwise_inner(a: torch.Tensor, b: torch.Tensor, c: Curvature) -> torch.Tensor:
    """Lorentz inner products ⟨x, y⟩_L = ⟨x_space, y_space⟩ − x_time·y_time of all pairs.

    a: (n_a, D), b: (n_b, D) space components; returns (n_a, n_b), plain autograd (≤ −1/c).
    """
    check_pair(a, b)
    return a @ b.T - lorentz_time(a, c) * lorentz_time(b, c).T


def exterior_angle(x: torch.Tensor, y: torch.Tensor, c: Curvature) -> torch.Tensor:
    """Pairwise exterior angles (N_x, N_y) at x of the geodesics x → y on the hyperboloid.

    ext(x, y) = arccos((y_t + x_t·c⟨x, y⟩_L) / (‖x‖·√((c⟨x, y⟩_L)² − 1))) (meru's
    ``oxy_angle``), computed in the algebraically equal, scale-free form with
    a = −c⟨x, y⟩_L = cosh(√c·d) ≥ 1: arccos((y_t/(x_t·a) − 1) / ((‖x‖/x_t)·√(1 − 1/a²))),
    whose factors stay bounded for huge norms; clamped as ``geometry.cones``.
    """
    check_pair(x, y, ("x", "y"))
    check_curvature(c)
    x_time, y_time = lorentz_time(x, c), lorentz_time(y, c).T
    cosh_distance = (-c * pairwise_inner(x, y, c)).clamp_min(1.0)  # a = cosh(√c·d) ≥ 1
    numerator = y_time / x_time / cosh_distance - 1.0
    sine = (1.0 - cosh_distance.pow(-2)).clamp_min(SQRT_FLOOR).sqrt()
    denominator = (safe_norm(x)[:, None] / x_time) * sine
    return safe_acos(numerator / denominator)


class _LorentzDistance(torch.autograd.Function):
    """Pairwise geodesic distances of the hyperboloid with a derived backward.

    Forward, in float64: sq = ‖x − y‖² from one Gram product (rows within its rounding level are
    exactly 0, as in ``geometry.distances``), Δ = x_time − y_time, and
    u = −c⟨x, y⟩_L − 1 = (c/2)(sq − Δ²), clamped at 0: the acosh argument 1 + u is at least 1,
    and exactly 1 for identical rows. d = log1p(u + √(u(u + 2)))/√c = acosh(1 + u)/√c.
    ∂d/∂u = 1/(√c·√(u(u + 2))) is set to 0 where it is not finite (u = 0: identical rows), so
    their distance is exactly 0 with a zero gradient. Backward:
    ∂u/∂x_i = c(y_time·x_i/x_time − y), ∂u/∂c = u/c − Δ²/(2c·x_time·y_time) and
    ∂d/∂c = ∂d/∂u·∂u/∂c − d/(2c): two GEMMs and a few (n_a, n_b) products.
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any, a: torch.Tensor, b: torch.Tensor | None, c: torch.Tensor
    ) -> torch.Tensor:
        """Distances from every row of ``a`` to every row of ``b`` (of ``a`` when b is None)."""
        a64 = a.detach().to(torch.float64)
        b64 = a64 if b is None else b.detach().to(torch.float64)
        c64 = c.detach().to(torch.float64)
        a_sq = (a64 * a64).sum(dim=1)
        b_sq = a_sq if b is None else (b64 * b64).sum(dim=1)
        norms = a_sq[:, None] + b_sq[None, :]
        squared = torch.addmm(norms, a64, b64.T, alpha=-2.0)
        squared.masked_fill_(squared <= SQUARED_ROUNDING * norms, 0.0)
        a_time = (1.0 / c64 + a_sq).sqrt_()
        b_time = a_time if b is None else (1.0 / c64 + b_sq).sqrt_()
        delta_sq = (a_time[:, None] - b_time[None, :]).square_()
        u = (squared - delta_sq).mul_(c64 / 2.0).clamp_min_(0.0)
        root = (u * (u + 2.0)).sqrt_()
        sqrt_c = c64.sqrt()
        distance = torch.log1p(u + root).div_(sqrt_c)
        slope_u = _finite_or_zero(1.0 / (sqrt_c * root))  # ∂d/∂u
        slope_c = torch.zeros((), dtype=c64.dtype, device=c64.device)
        if ctx.needs_input_grad[2]:
            du_dc = u / c64 - delta_sq / (2.0 * c64 * torch.outer(a_time, b_time))
            slope_c = slope_u * du_dc - distance / (2.0 * c64)
        ctx.save_for_backward(a64, b64, a_time, b_time, c64, slope_u, slope_c)
        ctx.self_pairs = b is None
        ctx.dtypes = (a.dtype, a.dtype if b is None else b.dtype, c.dtype)
        return distance.to(torch.promote_types(ctx.dtypes[0], ctx.dtypes[1]))

    @staticmethod
    def backward(  # type: ignore[override]
        ctx: Any, grad: torch.Tensor
    ) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
        """Chain rule through u = c(x_time·y_time − ⟨x_space, y_space⟩) − 1 and the curvature."""
        a64, b64, a_time, b_time, c64, slope_u, slope_c = ctx.saved_tensors
        grad64 = grad.to(torch.float64)
        grad_u = grad64 * slope_u  # ∂L/∂u
        if ctx.self_pairs:  # x = y = z: both roles of every row add up
            grad_u = grad_u + grad_u.T
        grad_a = grad_b = grad_c = None
        if ctx.needs_input_grad[0]:
            row = (grad_u @ b_time) / a_time
            grad_a = (c64 * (a64 * row[:, None] - grad_u @ b64)).to(ctx.dtypes[0])
        if ctx.needs_input_grad[1] and not ctx.self_pairs:
            col = (grad_u.T @ a_time) / b_time
            grad_b = (c64 * (b64 * col[:, None] - grad_u.T @ a64)).to(ctx.dtypes[1])
        if ctx.needs_input_grad[2]:
            grad_c = (grad64 * slope_c).sum().to(ctx.dtypes[2])
        return grad_a, grad_b, grad_c


def angle_fn(c: Curvature) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """The exterior angle at curvature −c as a function of the two point sets (for the
    angle-entailment loss and the angle ranking); c is checked once, here."""
    check_curvature(c)

    def angles(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Pairwise exterior angles (N_x, N_y) at the closed-over curvature."""
        return exterior_angle(x, y, c)

    return angles


def lorentz_distance(a: torch.Tensor, b: torch.Tensor, c: Curvature) -> torch.Tensor:
    """Pairwise geodesic distances (1/√c)·acosh(−c⟨x, y⟩_L), shape (n_a, n_b).

    a: (n_a, D), b: (n_b, D) space components; ``a is b`` takes the cheaper self-pair path.
    Computed in float64 and returned in the inputs' promoted dtype. The acosh argument is
    clamped at 1; identical rows (within the Gram product's float64 rounding) are exactly 0 apart
    with a zero gradient, also with respect to c (see ``_LorentzDistance``).
    """
    check_pair(a, b)
    curvature = _curvature(c, a, torch.float64)
    if curvature.ndim != 0:
        raise ValueError(f"curvature must be a scalar, got shape {tuple(curvature.shape)}")
    return _LorentzDistance.apply(a, None if b is a else b, curvature)


class LorentzHead(nn.Module):
    """Projector output as a tangent vector at the origin, mapped onto the hyperboloid of a
    learnable curvature by ``expmap0``; the hyperboloid's geodesic distance.

    As meru's ``MERU.encode_image`` does, the projector's output is multiplied by a learnable
    scale α before the exponential map: α starts at 1/√D (D the embedding dimension, meru's
    ``embed_dim**-0.5``), is never above 1 (meru clamps log α at 0 on every forward) and has
    no weight decay (``trainer.head_param_groups``, as meru's ``exclude_params``).

    The projector is built first (it makes all the random draws), then ``log_curvature`` and
    ``log_tangent_scale`` are set to log(c_init) and log(1/√D) without any: heads built after
    the same seed have the projector weights of the E and H heads, and the state dict is the
    projector's plus those two. The curvature in use is exp(log_curvature) clamped to
    [c_init/10, c_init·10]; a training-mode forward first projects both parameters into their
    ranges (as meru does), so an update that overshoots a bound leaves it at the bound, where
    gradients still move it. The tangent vector's norm has no radius bound (meru has none).
    """

    geometry = "L"

    def __init__(self, projector: Projector, curvature: float) -> None:
        super().__init__()
        check_positive("curvature", curvature)
        self.projector = projector
        self.initial_curvature = float(curvature)
        self.log_bounds = (
            math.log(curvature / CURVATURE_RANGE),
            math.log(curvature * CURVATURE_RANGE),
        )
        self.log_curvature = nn.Parameter(torch.tensor(math.log(curvature)))
        self.log_tangent_scale = nn.Parameter(
            torch.tensor(-0.5 * math.log(projector.output.out_features))
        )

    def extra_repr(self) -> str:
        """Initial curvature and the range of the learned one in the module's printout."""
        low, high = (math.exp(bound) for bound in self.log_bounds)
        return f"initial_curvature={self.initial_curvature}, range=[{low:g}, {high:g}]"

    @property
    def tangent_scale(self) -> torch.Tensor:
        """α (0-d tensor): exp(log_tangent_scale), the exponent clamped at 0 straight-through
        (α ≤ 1; training-mode forwards project the parameter itself, so the clamp is the
        identity there)."""
        log_alpha = self.log_tangent_scale
        return (log_alpha + (log_alpha.clamp(max=0.0) - log_alpha).detach()).exp()

    @property
    def curvature(self) -> torch.Tensor:
        """The curvature c in use (0-d tensor): exp(log_curvature) with the exponent clamped to
        the range, differentiated as if unclamped (a straight-through clamp).

        Training-mode forwards project the parameter into the range, so there the clamp is the
        identity and the gradient exact; the straight-through form keeps it from vanishing at a
        bound, where torch's clamp may compare the float32 parameter with the float64 bound
        and find it just outside.
        """
        log_c = self.log_curvature
        return (log_c + (log_c.clamp(*self.log_bounds) - log_c).detach()).exp()

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """Space components (batch, D) of the hyperboloid points of (batch, in_dim) features."""
        if self.training:
            self.log_curvature.data.clamp_(*self.log_bounds)
            self.log_tangent_scale.data.clamp_(max=0.0)
        return expmap0(self.projector(features) * self.tangent_scale, self.curvature)

    def distance(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """Pairwise geodesic distances at the current curvature, shape (n_a, n_b)."""
        return lorentz_distance(a, b, self.curvature)

    @classmethod
    def build(
        cls,
        make_projector: Callable[[], Projector],
        *,
        curvature: float | None,
        radius: float | None,
    ) -> LorentzHead:
        """The head around a new projector, starting at ``curvature``; radius must be None."""
        if curvature is None or radius is not None:
            raise ValueError(
                f"geometry 'L' needs an initial curvature and no radius, got {curvature!r}, "
                f"{radius!r}"
            )
        check_positive("curvature", curvature)
        return cls(make_projector(), curvature)
