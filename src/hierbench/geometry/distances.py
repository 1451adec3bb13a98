"""Pairwise distances of the geometries: Euclidean, and the Poincaré ball's geodesic distance.

Pairwise distances are built from one Gram product in float64, ‖x − y‖² = ‖x‖² + ‖y‖² − 2⟨x, y⟩,
so a (B, B) matrix costs one small matrix multiply and O(B²) elementwise work (no (B, B, dim)
intermediate); the result is cast back to the input dtype. Squared distances at the float64
rounding level of that formula (≤ 1e-14·(‖x‖² + ‖y‖²)) are exactly 0 with a zero gradient, so
identical embeddings are at distance 0 and never produce an infinite square-root gradient.

The same function takes stacks of point sets, (K, n, D) → (K, n_a, n_b), for a bundle of K
cells trained together (``stacked_self_distances``); a 2-D call runs exactly the operations it
always ran.

Distances pass through ``sanitise_and_clip`` before use: every non-finite value (NaN, +inf and
-inf alike) becomes the upper clip value, i.e. a numerical failure is treated as "as far as
possible", never as close, and the result is then clamped to [0, upper].
"""

from __future__ import annotations

import math
from typing import Any

import torch

from hierbench.geometry.validation import check_pair, check_points, check_positive
from hierbench.protocol import (
    TRAIN_DISTANCE_CLIP as TRAIN_DISTANCE_CLIP,  # re-exported with the test clip
)

TEST_DISTANCE_CLIP = 1e6
SQUARED_ROUNDING = 1e-14  # relative float64 rounding level of the Gram squared distance


def _finite_or_zero(slope: torch.Tensor) -> torch.Tensor:
    """A derivative with every non-finite entry set to 0 (distance held constant there)."""
    return slope.nan_to_num_(nan=0.0, posinf=0.0, neginf=0.0)


class _PairwiseDistance(torch.autograd.Function):
    """Pairwise distances (Euclidean, or Poincaré for a curvature) with a derived backward.

    Forward: ‖x − y‖² from one float64 Gram product; d = √sq (Euclidean) or
    d = (2/√c)·artanh(√(sq / (sq + κ))), κ = (1 − c‖x‖²)(1 − c‖y‖²)/c (Poincaré). The
    derivatives ∂d/∂sq and ∂d/∂κ are formed in the forward pass; where one is not finite
    (identical points, points on or beyond the boundary) it is 0, i.e. the distance is held
    constant there. The backward is then two GEMMs and a few (n_a, n_b) products, instead of
    the dozens of small operations autograd would record.
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any, a: torch.Tensor, b: torch.Tensor | None, curvature: float | None
    ) -> torch.Tensor:
        """Distances from every row of ``a`` to every row of ``b`` (of ``a`` when b is None)."""
        a64 = a.detach().to(torch.float64)
        b64 = a64 if b is None else b.detach().to(torch.float64)
        a_sq = (a64 * a64).sum(dim=-1)
        b_sq = a_sq if b is None else (b64 * b64).sum(dim=-1)
        norms = a_sq[..., :, None] + b_sq[..., None, :]
        gram_update = torch.addmm if a64.ndim == 2 else torch.baddbmm
        squared = gram_update(norms, a64, b64.mT, alpha=-2.0)
        squared.masked_fill_(squared <= SQUARED_ROUNDING * norms, 0.0)
        root = squared.sqrt_()
        if curvature is None:
            distance, slopes = root, [_finite_or_zero(0.5 / root)]
        else:
            c = float(curvature)
            a_factor = 1.0 - c * a_sq
            b_factor = a_factor if b is None else 1.0 - c * b_sq
            kappa = (a_factor / c)[..., :, None] * b_factor[..., None, :]
            total_root = (root * root + kappa).sqrt_()
            distance = torch.atanh(root / total_root).mul_(2.0 / math.sqrt(c))
            slopes = [
                _finite_or_zero(1.0 / (math.sqrt(c) * root * total_root)),
                _finite_or_zero(-root / (math.sqrt(c) * kappa * total_root)),
                a_factor,
                b_factor,
            ]
        ctx.save_for_backward(a64, b64, *slopes)
        ctx.self_pairs = b is None
        ctx.dtypes = (a.dtype, a.dtype if b is None else b.dtype)
        return distance.to(torch.promote_types(*ctx.dtypes))

    @staticmethod
    def backward(  # type: ignore[override]
        ctx: Any, grad: torch.Tensor
    ) -> tuple[torch.Tensor | None, torch.Tensor | None, None]:
        """Chain rule through sq = ‖x‖² + ‖y‖² − 2⟨x, y⟩ and κ = (1 − c‖x‖²)(1 − c‖y‖²)/c."""
        a64, b64, slope_sq, *hyperbolic = ctx.saved_tensors
        grad64 = grad.to(torch.float64)
        grad_sq = grad64 * slope_sq  # ∂L/∂sq
        if ctx.self_pairs:  # x = y = z: both roles of every row add up
            grad_sq = grad_sq + grad_sq.mT
        grad_kappa = None
        if hyperbolic:  # ∂κ_ij/∂‖x_i‖² = −(1 − c‖y_j‖²), ∂κ_ij/∂‖y_j‖² = −(1 − c‖x_i‖²)
            slope_kappa, a_factor, b_factor = hyperbolic
            grad_kappa = grad64 * slope_kappa
            if ctx.self_pairs:
                grad_kappa = grad_kappa + grad_kappa.mT
        grad_a = grad_b = None
        if ctx.needs_input_grad[0]:
            row = grad_sq.sum(dim=-1)
            if grad_kappa is not None:
                row = row - _matvec(grad_kappa, b_factor)
            grad_a = (2.0 * (a64 * row[..., None] - grad_sq @ b64)).to(ctx.dtypes[0])
        if ctx.needs_input_grad[1] and not ctx.self_pairs:
            col = grad_sq.sum(dim=-2)
            if grad_kappa is not None:
                col = col - _matvec(grad_kappa.mT, a_factor)
            grad_b = (2.0 * (b64 * col[..., None] - grad_sq.mT @ a64)).to(ctx.dtypes[1])
        return grad_a, grad_b, None


def _matvec(matrix: torch.Tensor, vector: torch.Tensor) -> torch.Tensor:
    """matrix (…, n, m) times vector (…, m): a plain matrix-vector product in 2-D."""
    return matrix @ vector if matrix.ndim == 2 else (matrix @ vector[..., None]).squeeze(-1)


def _apply_pairwise(a: torch.Tensor, b: torch.Tensor, curvature: float | None) -> torch.Tensor:
    """Validate and run the distance function; ``a is b`` takes the cheaper self-pair path."""
    check_pair(a, b)
    return _PairwiseDistance.apply(a, None if b is a else b, curvature)


def euclidean_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Pairwise Euclidean distances (n_a, n_b); identical rows are exactly 0 with zero grads."""
    return _apply_pairwise(a, b, None)


def poincare_distance(a: torch.Tensor, b: torch.Tensor, curvature: float) -> torch.Tensor:
    """Pairwise geodesic distances (2/√c)·artanh(√c·‖(−x)⊕_c y‖) of the Poincaré ball.

    Uses c·‖(−x)⊕_c y‖² = ‖x − y‖² / (‖x − y‖² + (1 − c‖x‖²)(1 − c‖y‖²)/c) (the identity
    ``metrics`` uses too). Inside the ball this is geoopt's ``PoincareBall.dist`` without its
    clamping; on or outside the boundary it is inf or NaN, for ``sanitise_and_clip`` to handle.
    """
    check_positive("curvature", curvature)
    return _apply_pairwise(a, b, float(curvature))


def stacked_self_distances(points: torch.Tensor, curvature: float | None) -> torch.Tensor:
    """Each stacked point set's pairwise distances: (K, n, D) → (K, n, n), Euclidean for
    ``curvature`` None, else the Poincaré ball's of that curvature (as the 2-D functions)."""
    if not isinstance(points, torch.Tensor) or points.ndim != 3 or not points.is_floating_point():
        shape = tuple(points.shape) if isinstance(points, torch.Tensor) else type(points).__name__
        raise ValueError(f"stacked points must be a floating (K, n, D) tensor, got {shape}")
    if curvature is not None:
        check_positive("curvature", curvature)
        curvature = float(curvature)
    return _PairwiseDistance.apply(points, None, curvature)


def poincare_radius(curvature: float) -> float:
    """Radius 1/√c of the Poincaré ball of curvature −c."""
    check_positive("curvature", curvature)
    return 1.0 / math.sqrt(curvature)


def max_norm(embeddings: torch.Tensor) -> float:
    """Largest L2 norm of the rows, for the "hyperbolic embeddings inside the ball" audit."""
    check_points("embeddings", embeddings)
    if len(embeddings) == 0:
        raise ValueError("max_norm needs at least one embedding, got an empty matrix")
    return float(embeddings.detach().norm(dim=1).max())


def sanitise_and_clip(distances: torch.Tensor, upper: float) -> torch.Tensor:
    """Replace every non-finite distance (NaN, ±inf) by ``upper``, then clamp to [0, upper]."""
    check_positive("upper", upper)
    upper = float(upper)
    return torch.nan_to_num(distances, nan=upper, posinf=upper, neginf=upper).clamp(0.0, upper)
