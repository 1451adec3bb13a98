"""The unit sphere's geodesic distance, a geometry that joins the Geometry × Loss factorial as C.

The projector's output is put on the unit sphere (as the paper's E head does) and two points are
as far apart as the great-circle arc between them, arccos⟨x, y⟩, in [0, π]: a space of constant
positive curvature beside the Euclidean (zero) and Poincaré (negative) ones. The cosine is held
inside [−1 + ε, 1 − ε], where arccos has a finite slope, so identical points are at distance
≈ √(2ε), not 0, and train without an infinite gradient. Both functions keep any leading axes
(a bundle stacks its cells on one).

Name it in a config (examples/sphere.yaml):

    factorial: {geometries: [E, H, C]}
    plugins: {geometries: {C: examples/sphere.py:GEOMETRY}}
"""

import torch
import torch.nn.functional as F

from hierbench.geometry.plain import PlainGeometry

EPSILON = 1e-6


def on_sphere(outputs: torch.Tensor) -> torch.Tensor:
    """Projector outputs (…, D) scaled to unit length."""
    return F.normalize(outputs, p=2.0, dim=-1)


def arc_lengths(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Great-circle distances between unit points, (…, n, D) × (…, m, D) -> (…, n, m)."""
    cosine = (a @ b.transpose(-1, -2)).clamp(-1.0 + EPSILON, 1.0 - EPSILON)
    return torch.arccos(cosine)


GEOMETRY = PlainGeometry("sphere", on_sphere, arc_lengths)
