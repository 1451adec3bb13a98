"""Exterior angles as a retrieval score: the companion method's entailment angle, for the metric
engine to rank a gallery by (``evaluate(..., pair_scores=...)``). The digest of the companion's
paper names its retrieval metric ``Euc Ang.*`` / ``Hyp Ang.*`` without defining it; ranking by
this angle is our reading.

For a query q and a gallery item g the score is ext(q, g), the exterior angle at q of the
geodesic q → g (the angle between the continuation of O → q beyond q and q → g; see
``hierbench.losses.entailment``). It is the companion's parent → child entailment score with the
query in the parent's role (our choice of role): an item inside q's entailment cone has a small
angle. The engine ranks the gallery by ascending angle, ties by gallery index, exactly as it ranks
distances.

ext is not symmetric (ext(q, g) ≠ ext(g, q) in general) and, unlike a distance, depends on where
q lies relative to the origin, so the angle ranking may differ from the distance ranking. On a
head whose points all have unit norm the Euclidean angle is π/2 + θ/2, θ the angle between q and
g: a monotone function of the distance, so the two rankings agree there up to ties.

The formulas are the ones the companion cells train with, not a copy: the geometries'
``exterior_angle`` (Lorentz at the head's curvature, points as space components), evaluated
in float64 on the CPU, with their clamps: angles within about 1.4e-3 rad of 0 or π are
flattened to one value (such items tie, ordered by gallery index), and a query at the origin or
a gallery item on it gets some finite angle. A NaN angle (from a NaN embedding) becomes π, after
every real angle.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from hierbench.geometry import euclidean, lorentz
from hierbench.metrics.pair_scores import PairScores
from hierbench.protocol import EUCLIDEAN, HEAD_NAMES, LORENTZ


def exterior_angle_scores(curvature: float | None = None) -> PairScores:
    """ext(q, g) for query rows q and gallery rows g as a float64 (n_q, n_g) matrix: the Lorentz
    exterior angle at curvature −c when a curvature is given, else the Euclidean one."""
    angle_fn = euclidean.exterior_angle if curvature is None else lorentz.angle_fn(curvature)

    @torch.no_grad()
    def scores(queries: np.ndarray, gallery: np.ndarray) -> np.ndarray:
        """Pairwise exterior angles at each query of the geodesics to each gallery row."""
        angles = angle_fn(
            torch.as_tensor(queries, dtype=torch.float64),
            torch.as_tensor(gallery, dtype=torch.float64),
        ).numpy()
        return np.fmin(angles, math.pi)  # NaN becomes π; every real angle is below it

    return scores


def head_angle_scores(head: torch.nn.Module) -> PairScores:
    """The angle scores in a loaded head's own geometry: Lorentz at its learned curvature on a
    Lorentz head, Euclidean on a Euclidean head (the heads the angle objective trains)."""
    geometry = getattr(head, "geometry", None)
    if geometry == LORENTZ:
        return exterior_angle_scores(float(torch.as_tensor(head.curvature).detach()))
    if geometry == EUCLIDEAN:
        return exterior_angle_scores(None)
    heads = [HEAD_NAMES[EUCLIDEAN], HEAD_NAMES[LORENTZ]]
    raise ValueError(
        f"angle ranking needs a {' or '.join(heads)} head, got {type(head).__name__} with "
        f"geometry {geometry!r}"
    )
