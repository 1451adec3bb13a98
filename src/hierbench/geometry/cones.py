"""Entailment cones: what the exterior angles of every geometry share, the clamps that keep
their values and gradients finite at the origin, for coincident points and for huge norms.

The exterior angle at x of the geodesic x → y is the angle between the continuation of O → x
beyond x and x → y (``euclidean.exterior_angle``, ``lorentz.exterior_angle``): the companion
method's entailment score. Its arccos argument is clamped to [−1 + ACOS_EPS, 1 − ACOS_EPS]
(angles within ~1.4e-3 rad of 0 or π are flattened), norms are clamped ≥ NORM_FLOOR and the
Lorentz 1 − 1/a² ≥ SQRT_FLOOR; where the angle is undefined the clamps pick some finite value.
"""

from __future__ import annotations

import torch

ACOS_EPS = 1e-6  # arccos argument clamped to [−1 + ACOS_EPS, 1 − ACOS_EPS]
NORM_FLOOR = 1e-6  # ‖x‖ and ‖y − x‖ clamped ≥ NORM_FLOOR
SQRT_FLOOR = 1e-12  # 1 − 1/a² clamped ≥ SQRT_FLOOR (a = 1 means x = y)


def safe_norm(points: torch.Tensor) -> torch.Tensor:
    """Row norms (n,) clamped ≥ NORM_FLOOR, with a zero gradient where clamped."""
    return (points * points).sum(dim=1).clamp_min(NORM_FLOOR**2).sqrt()


def safe_acos(argument: torch.Tensor) -> torch.Tensor:
    """arccos of the argument clamped to [−1 + ACOS_EPS, 1 − ACOS_EPS] (finite gradient)."""
    return torch.acos(argument.clamp(-1.0 + ACOS_EPS, 1.0 - ACOS_EPS))
