"""The Poincaré geometry (H): the projector's output as a radius-bounded tangent vector mapped
into the ball of ``geoopt.PoincareBall(c)``, and the ball's geodesic distance."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from hierbench.geometry.distances import poincare_distance, stacked_self_distances
from hierbench.geometry.projector import Projector
from hierbench.geometry.validation import check_positive

MIN_TANGENT_NORM = 1e-6


def _projx_eps(dtype: torch.dtype) -> float:
    """geoopt's default boundary margin of ``projx``: 4e-3 in float32, 1e-5 otherwise."""
    return 4e-3 if dtype == torch.float32 else 1e-5


def poincare_map(tangent: torch.Tensor, curvature: float, radius: float) -> torch.Tensor:
    """z = projx(expmap0(t')) on ``geoopt.PoincareBall(c)``; t' = r·tanh(n)·t/n, n = max(‖t‖, 1e-6).

    Each of the three steps rescales a row along its own direction, so z = t·s(‖t‖) and only
    the (batch, 1) scale is computed, with geoopt's formulas and clamps: expmap0 maps norm ρ to
    tanh(clamp(√c·max(ρ, 1e-15), ±15))/√c, projx caps the norm at (1 − eps)/√c. About twenty
    small operations instead of geoopt's many (the tests check agreement with geoopt itself).
    """
    check_positive("curvature", curvature)
    check_positive("radius", radius)
    sqrt_c = math.sqrt(curvature)
    norm = tangent.norm(dim=-1, keepdim=True)
    bounded = radius * torch.tanh(norm.clamp_min(MIN_TANGENT_NORM))  # ‖t'‖ for ‖t‖ ≥ 1e-6
    scale = bounded / norm.clamp_min(MIN_TANGENT_NORM)  # t' = scale·t
    rho = (scale * norm).clamp_min(1e-15)
    expmap_scale = torch.tanh((sqrt_c * rho).clamp(-15.0, 15.0)) / (sqrt_c * rho)
    image_norm = (expmap_scale * scale * norm).clamp_min(1e-15)
    max_norm_ = (1.0 - _projx_eps(tangent.dtype)) / sqrt_c
    projx_scale = torch.where(image_norm > max_norm_, max_norm_ / image_norm, 1.0)
    return tangent * (scale * expmap_scale * projx_scale)


class PoincareHead(nn.Module):
    """Projector output as a radius-bounded tangent vector mapped into a fixed Poincaré ball.

    The curvature is a plain float, not a parameter or buffer, so the head has exactly the
    projector's parameters and state-dict keys; ``poincare_map`` and ``poincare_distance`` are
    the maps and distance of ``geoopt.PoincareBall(c)``.
    """

    geometry = "H"

    def __init__(self, projector: Projector, curvature: float, radius: float) -> None:
        super().__init__()
        check_positive("curvature", curvature)
        check_positive("radius", radius)
        self.projector = projector
        self.curvature = float(curvature)
        self.radius = float(radius)

    def extra_repr(self) -> str:
        """Curvature and tangent radius in the module's printout."""
        return f"curvature={self.curvature}, radius={self.radius}"

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """Ball points of (batch, in_dim) features (see ``poincare_map``)."""
        return self.from_projection(self.projector(features))

    def from_projection(self, output: torch.Tensor) -> torch.Tensor:
        """Ball points of projector outputs (…, out_dim) (see ``poincare_map``)."""
        return poincare_map(output, self.curvature, self.radius)

    def distance(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """Pairwise geodesic distances of the ball, shape (n_a, n_b)."""
        return poincare_distance(a, b, self.curvature)

    def stacked_distances(self, points: torch.Tensor) -> torch.Tensor:
        """Each stacked set's pairwise distances, (K, n, D) → (K, n, n), for a cell bundle."""
        return stacked_self_distances(points, self.curvature)

    @classmethod
    def build(
        cls,
        make_projector: Callable[[], Projector],
        *,
        curvature: float | None,
        radius: float | None,
    ) -> PoincareHead:
        """The head around a new projector in the ball of ``curvature``, tangents up to radius."""
        if curvature is None or radius is None:
            raise ValueError(
                f"geometry 'H' needs curvature and radius, got {curvature!r}, {radius!r}"
            )
        return cls(make_projector(), curvature, radius)
