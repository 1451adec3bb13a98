"""Both directions of the exterior angle from one Gram product, with a hand-derived backward.

The angle-entailment loss needs ext(p_i, q_j) and ext(q_j, p_i) for every parent p (P, D) and
child q (C, D). :func:`paired_exterior_angles` returns both as (P, C) matrices (the second is
ext(q_j, p_i) at (i, j), so no transpose is made), sharing the Gram product and every symmetric
term (‖y − x‖ on E; the Lorentz a = cosh(√c·d) and √(1 − 1/a²) on L). Its backward is written
out (a handful of whole-matrix passes and two GEMMs) instead of recorded op by op, which makes
an update of the companion cells several times cheaper on the CPU than autograd's graph of
~40 elementwise nodes.

The values and clamps are exactly those of ``exterior_angle`` in ``hierbench.geometry.euclidean``
and ``hierbench.geometry.lorentz`` (the readable reference), and so
are the gradients, clamped entries included (a clamped entry passes no gradient); the tests
check both against the reference in float64 and by ``torch.autograd.gradcheck``. The Lorentz
curvature may be a tensor with a gradient (the L head learns it).

Notation (all pairwise terms are (P, C)): x = parents, y = children, s_x = ‖x‖², G = x yᵀ.
E: gap = ‖y − x‖, u₁ = (G − s_x)/(‖x‖·gap), u₂ = (G − s_y)/(‖y‖·gap).
L: x_t = √(1/c + s_x), a = c(x_t·y_t − G) ≥ 1, s = √(1 − 1/a²), ρ_x = ‖x‖/x_t,
   u₁ = (y_t/(x_t·a) − 1)/(ρ_x·s), u₂ = (x_t/(y_t·a) − 1)/(ρ_y·s).
Then ext(x, y) = arccos(u₁), ext(y, x) = arccos(u₂), arguments clamped as in the reference.
"""

from __future__ import annotations

from typing import Any

import torch

from hierbench.geometry.cones import ACOS_EPS, NORM_FLOOR, SQRT_FLOOR
from hierbench.geometry.lorentz import Curvature, time_from_squared_norms
from hierbench.geometry.validation import check_curvature, check_pair
from hierbench.losses.entailment import (
    _check_loss_inputs,
    entailment_nce,
    require_entailment_pairs,
)

_LOW, _HIGH = -1.0 + ACOS_EPS, 1.0 - ACOS_EPS


def _clamped_acos(u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """arccos of the clamped argument, and d arccos/du (zero where the clamp is active)."""
    inside = (u >= _LOW) & (u <= _HIGH)
    clamped = u.clamp(_LOW, _HIGH)
    slope = torch.where(inside, -torch.rsqrt(1.0 - clamped * clamped), 0.0)
    return torch.acos(clamped), slope


def _floored_norm(squares: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """√max(s, NORM_FLOOR²) and its derivative with respect to s (zero where floored)."""
    norm = squares.clamp_min(NORM_FLOOR**2).sqrt()
    return norm, torch.where(squares >= NORM_FLOOR**2, 0.5 / norm, 0.0)


class _EuclideanPairedAngles(torch.autograd.Function):
    """ext(x_i, y_j) and ext(y_j, x_i), both (P, C), on Euclidean entailment cones."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        sx, sy = (x * x).sum(dim=1)[:, None], (y * y).sum(dim=1)[None, :]
        gram = x @ y.T
        gap_squared = sx + sy - 2.0 * gram
        gap, gap_slope = _floored_norm(gap_squared)
        nx, nx_slope = _floored_norm(sx)
        ny, ny_slope = _floored_norm(sy)
        u1 = (gram - sx) / (nx * gap)
        u2 = (gram - sy) / (ny * gap)
        angle1, slope1 = _clamped_acos(u1)
        angle2, slope2 = _clamped_acos(u2)
        ctx.save_for_backward(x, y, u1, u2, slope1, slope2, gap, gap_slope, nx, ny)
        ctx.slopes = (nx_slope, ny_slope)
        return angle1, angle2

    @staticmethod
    def backward(ctx: Any, grad1: torch.Tensor, grad2: torch.Tensor) -> tuple[torch.Tensor, ...]:
        x, y, u1, u2, slope1, slope2, gap, gap_slope, nx, ny = ctx.saved_tensors
        nx_slope, ny_slope = ctx.slopes
        k1, k2 = grad1 * slope1, grad2 * slope2  # dL/du
        f1, f2 = k1 * u1, k2 * u2
        t1, t2 = k1 / (nx * gap), k2 / (ny * gap)  # dL/d(G − s_x), dL/d(G − s_y)
        d_gap_squared = -(f1 + f2) / gap * gap_slope
        d_gram = t1 + t2 - 2.0 * d_gap_squared
        d_sx = (
            -(f1.sum(dim=1, keepdim=True) / nx) * nx_slope
            - t1.sum(dim=1, keepdim=True)
            + d_gap_squared.sum(dim=1, keepdim=True)
        )
        d_sy = (
            -(f2.sum(dim=0, keepdim=True) / ny) * ny_slope
            - t2.sum(dim=0, keepdim=True)
            + d_gap_squared.sum(dim=0, keepdim=True)
        )
        d_x = d_gram @ y + 2.0 * x * d_sx
        d_y = d_gram.T @ x + 2.0 * y * d_sy.T
        return d_x, d_y


class _LorentzPairedAngles(torch.autograd.Function):
    """ext(x_i, y_j) and ext(y_j, x_i), both (P, C), on the hyperboloid of curvature −c."""

    @staticmethod
    def forward(
        ctx: Any, x: torch.Tensor, y: torch.Tensor, c: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        sx, sy = (x * x).sum(dim=1)[:, None], (y * y).sum(dim=1)[None, :]
        xt, yt = time_from_squared_norms(sx, c), time_from_squared_norms(sy, c)
        gram = x @ y.T
        b = c * (xt * yt - gram)
        a = b.clamp_min(1.0)
        a_passes = b >= 1.0
        sine_squared = 1.0 - a.pow(-2)
        sine = sine_squared.clamp_min(SQRT_FLOOR).sqrt()
        sine_passes = sine_squared >= SQRT_FLOOR
        nx, nx_slope = _floored_norm(sx)
        ny, ny_slope = _floored_norm(sy)
        rho_x, rho_y = nx / xt, ny / yt
        w1 = yt / (xt * a)
        w2 = xt / (yt * a)
        u1 = (w1 - 1.0) / (rho_x * sine)
        u2 = (w2 - 1.0) / (rho_y * sine)
        angle1, slope1 = _clamped_acos(u1)
        angle2, slope2 = _clamped_acos(u2)
        ctx.save_for_backward(x, y, c, xt, yt, b, a, sine, u1, u2, w1, w2, slope1, slope2)
        ctx.masks = (a_passes, sine_passes)
        ctx.norms = (nx, nx_slope, ny, ny_slope)
        return angle1, angle2

    @staticmethod
    def backward(ctx: Any, grad1: torch.Tensor, grad2: torch.Tensor) -> tuple[torch.Tensor, ...]:
        x, y, c, xt, yt, b, a, sine, u1, u2, w1, w2, slope1, slope2 = ctx.saved_tensors
        a_passes, sine_passes = ctx.masks
        nx, nx_slope, ny, ny_slope = ctx.norms
        rho_x, rho_y = nx / xt, ny / yt
        k1, k2 = grad1 * slope1, grad2 * slope2  # dL/du
        f1, f2 = k1 * u1, k2 * u2
        e1 = k1 / (rho_x * sine) * w1  # dL/dN₁ · w₁
        e2 = k2 / (rho_y * sine) * w2
        d_sine = -(f1 + f2) / sine
        d_a = -(e1 + e2) / a + torch.where(sine_passes, d_sine / (sine * a.pow(3)), 0.0)
        d_b = torch.where(a_passes, d_a, 0.0)
        d_gram = -c * d_b
        d_rho_x = -f1.sum(dim=1, keepdim=True) / rho_x
        d_rho_y = -f2.sum(dim=0, keepdim=True) / rho_y
        difference = e2 - e1
        d_xt = (
            difference.sum(dim=1, keepdim=True) / xt
            + c * (d_b * yt).sum(dim=1, keepdim=True)
            - d_rho_x * rho_x / xt
        )
        d_yt = (
            -difference.sum(dim=0, keepdim=True) / yt
            + c * (d_b * xt).sum(dim=0, keepdim=True)
            - d_rho_y * rho_y / yt
        )
        d_sx = d_xt / (2.0 * xt) + (d_rho_x / xt) * nx_slope
        d_sy = d_yt / (2.0 * yt) + (d_rho_y / yt) * ny_slope
        d_x = d_gram @ y + 2.0 * x * d_sx
        d_y = d_gram.T @ x + 2.0 * y * d_sy.T
        d_c = None
        if ctx.needs_input_grad[2]:
            d_c = (
                (d_b * b).sum() / c
                - (d_xt / xt).sum() / (2.0 * c * c)
                - (d_yt / yt).sum() / (2.0 * c * c)
            ).reshape(c.shape)
        return d_x, d_y, d_c


def paired_exterior_angles(
    parents: torch.Tensor, children: torch.Tensor, curvature: Curvature | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(ext(p_i, q_j), ext(q_j, p_i)), both (P, C): Lorentz at curvature −c when a curvature
    is given, else Euclidean cones."""
    check_pair(parents, children, ("parents", "children"))
    if curvature is None:
        return _EuclideanPairedAngles.apply(parents, children)
    check_curvature(curvature)
    c = torch.as_tensor(curvature, dtype=parents.dtype, device=parents.device)
    return _LorentzPairedAngles.apply(parents, children, c)


def fused_angle_entailment_loss(
    parents: torch.Tensor,
    children: torch.Tensor,
    entails: torch.Tensor,
    temperature: torch.Tensor,
    curvature: Curvature | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """``angle_entailment_loss`` with both angle directions from :func:`paired_exterior_angles`
    (Lorentz at ``curvature``, Euclidean cones without): same value, gradients and errors."""
    _check_loss_inputs(parents, children, entails, temperature)
    entails = entails.to(parents.device)
    require_entailment_pairs(parents, children, entails)
    parent_child, child_parent = paired_exterior_angles(parents, children, curvature)
    return entailment_nce(parent_child, child_parent, entails, temperature)
