"""The Euclidean geometry (E): the projector's output on the unit sphere, Euclidean distance."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from hierbench.geometry.distances import euclidean_distance
from hierbench.geometry.projector import Projector


class EuclideanHead(nn.Module):
    """Projector output L2-normalised onto the unit sphere; Euclidean distance (≅ cosine rank)."""

    geometry = "E"

    def __init__(self, projector: Projector) -> None:
        super().__init__()
        self.projector = projector

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """Unit-norm embeddings of (batch, in_dim) features."""
        return F.normalize(self.projector(features), p=2.0, dim=1)

    def distance(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """Pairwise Euclidean distances between embeddings, shape (n_a, n_b)."""
        return euclidean_distance(a, b)

    @classmethod
    def build(
        cls,
        make_projector: Callable[[], Projector],
        *,
        curvature: float | None,
        radius: float | None,
    ) -> EuclideanHead:
        """The head around a new projector; curvature and radius do not apply to it."""
        if curvature is not None or radius is not None:
            raise ValueError("curvature and radius apply only to geometry 'H'; pass None for 'E'")
        return cls(make_projector())
