"""Geometries a researcher adds to the factorial: a plain geometry, and the head built on it.

A plain geometry maps the shared projector's outputs onto its space (``embed``) and measures
distances there (``distances``); both take any leading dimensions, (…, n, D), because a bundle
stacks its cells, and both must be differentiable in torch. The head around it has exactly the
projector's parameters and draws no random numbers, so its cells start from the paper cells'
weights of the same seed. A researcher's geometry is one module (a :class:`PlainGeometry` named
in it) and one config entry (``plugins.geometries.<CODE>``, read by :mod:`hierbench.factorial`);
the code joins ``factorial.geometries``; :mod:`hierbench.cells.checkpoints` loads it for the
cells whose spec names it. Evaluation ranks the sealed gallery by the same ``distances`` in
float64, sanitised and clipped as every distance is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from hierbench.geometry.distances import sanitise_and_clip
from hierbench.geometry.projector import Projector

__all__ = ["PlainGeometry", "PluginHead", "plugin_pair_scores"]


@dataclass(frozen=True)
class PlainGeometry:
    """A geometry of the factorial: ``embed(outputs)`` maps projector outputs (…, D) to points
    (…, D'), ``distances(a, b)`` gives the pairwise distances (…, n, m) of points (…, n, D') and
    (…, m, D'); no parameters, no random numbers."""

    name: str
    embed: Callable[[torch.Tensor], torch.Tensor]
    distances: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class PluginHead(nn.Module):
    """The projector with a plain geometry on its output (a geometry added to the factorial).

    The geometry is a plain attribute, so the head's state dict is the projector's; the cell's
    spec names the plugin (``geometry_plugin``), which rebuilds the head from a checkpoint.
    """

    def __init__(self, projector: Projector, geometry: PlainGeometry, code: str) -> None:
        super().__init__()
        self.projector = projector
        self.plain = geometry
        self.geometry = code

    def extra_repr(self) -> str:
        """The geometry's name in the module's printout."""
        return f"geometry={self.plain.name}"

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """Points of (batch, in_dim) features."""
        return self.from_projection(self.projector(features))

    def from_projection(self, output: torch.Tensor) -> torch.Tensor:
        """Points of projector outputs (…, out_dim)."""
        return self.plain.embed(output)

    def distance(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """Pairwise distances between points, shape (n_a, n_b)."""
        return self.plain.distances(a, b)

    def stacked_distances(self, points: torch.Tensor) -> torch.Tensor:
        """Each stacked set's pairwise distances, (K, n, D) → (K, n, n), for a cell bundle."""
        return self.plain.distances(points, points)


def plugin_pair_scores(
    geometry: PlainGeometry, clip: float
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The metric engine's ranking scores for a plugin geometry: its distances from each query
    to each distinct gallery point in float64, non-finite ones at ``clip`` (the test clip)."""

    @torch.inference_mode()
    def scores(queries: np.ndarray, gallery: np.ndarray) -> Any:
        a = torch.from_numpy(np.ascontiguousarray(queries, dtype=np.float64))
        b = torch.from_numpy(np.ascontiguousarray(gallery, dtype=np.float64))
        return sanitise_and_clip(geometry.distances(a, b), clip).numpy()

    return scores
