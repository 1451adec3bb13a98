"""The Euclidean geometry (E): the projector's output, on the unit sphere (the factorial's E
cells) or as it is (the companion method's E_A cells), and the Euclidean distance."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from hierbench.geometry.cones import NORM_FLOOR, safe_acos, safe_norm
from hierbench.geometry.distances import euclidean_distance, stacked_self_distances
from hierbench.geometry.projector import Projector
from hierbench.geometry.validation import check_pair


class EuclideanHead(nn.Module):
    """Projector output, L2-normalised onto the unit sphere (``normalise``, the factorial's E:
    Euclidean distance ≅ cosine rank) or left as it is (E_A: every norm is free); Euclidean
    distance either way.

    The flag is a plain attribute, not a buffer: both heads have the projector's state dict, so
    a checkpoint's bytes do not say which one wrote it (the cell's spec does).
    """

    geometry = "E"

    def __init__(self, projector: Projector, *, normalise: bool = True) -> None:
        super().__init__()
        self.projector = projector
        self.normalise = bool(normalise)

    def extra_repr(self) -> str:
        """Whether the head normalises, in the module's printout."""
        return f"normalise={self.normalise}"

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """Embeddings of (batch, in_dim) features: unit-norm, or the projector's raw output."""
        return self.from_projection(self.projector(features))

    def from_projection(self, output: torch.Tensor) -> torch.Tensor:
        """Embeddings of projector outputs (…, out_dim): unit-norm, or as they are."""
        return F.normalize(output, p=2.0, dim=-1) if self.normalise else output

    def distance(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """Pairwise Euclidean distances between embeddings, shape (n_a, n_b)."""
        return euclidean_distance(a, b)

    def stacked_distances(self, points: torch.Tensor) -> torch.Tensor:
        """Each stacked set's pairwise distances, (K, n, D) → (K, n, n), for a cell bundle."""
        return stacked_self_distances(points, None)

    @classmethod
    def build(
        cls,
        make_projector: Callable[[], Projector],
        *,
        curvature: float | None,
        radius: float | None,
        normalise: bool = True,
    ) -> EuclideanHead:
        """The head around a new projector; curvature and radius do not apply to it."""
        if curvature is not None or radius is not None:
            raise ValueError("curvature and radius apply only to geometry 'H'; pass None for 'E'")
        return cls(make_projector(), normalise=normalise)


def exterior_angle(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Pairwise exterior angles (N_x, N_y) at x between the ray O → x (beyond x) and x → y
    (Ganea et al., 2018): arccos(⟨x, y − x⟩ / (‖x‖·‖y − x‖)), clamped as ``geometry.cones``."""
    check_pair(x, y, ("x", "y"))
    x_squared, y_squared = (x * x).sum(dim=1)[:, None], (y * y).sum(dim=1)[None, :]
    gram = x @ y.T
    along = gram - x_squared  # ⟨x, y − x⟩
    gap = (x_squared + y_squared - 2.0 * gram).clamp_min(NORM_FLOOR**2).sqrt()  # ‖y − x‖
    return safe_acos(along / (safe_norm(x)[:, None] * gap))
