"""The one input validator of the geometries and the objectives built on them: point matrices,
pairs of them, and positive settings such as a curvature, each error naming the argument."""

from __future__ import annotations

import math
from numbers import Real
from typing import Any

import torch


def _shape(value: Any) -> Any:
    """A value's shape for an error message (its type's name when it has none)."""
    return tuple(value.shape) if hasattr(value, "shape") else type(value).__name__


def check_points(name: str, points: Any) -> None:
    """Raise unless ``points`` is a floating-point 2-D (n, D) tensor."""
    if not isinstance(points, torch.Tensor) or points.ndim != 2:
        raise ValueError(f"{name} must be a 2-D (n, D) tensor, got {_shape(points)}")
    if not points.is_floating_point():
        raise ValueError(f"{name} must be floating point, got {points.dtype}")


def check_pair(a: Any, b: Any, names: tuple[str, str] = ("a", "b")) -> None:
    """Raise unless ``a`` (n_a, D) and ``b`` (n_b, D) are point matrices of the same D."""
    check_points(names[0], a)
    check_points(names[1], b)
    if a.shape[1] != b.shape[1]:
        raise ValueError(
            f"{names[0]} and {names[1]} must have the same dimension D, got shapes "
            f"{tuple(a.shape)} and {tuple(b.shape)}"
        )


def check_positive(name: str, value: float) -> None:
    """Raise unless ``value`` is a finite real number > 0."""
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")


def check_curvature(c: float | torch.Tensor) -> None:
    """Raise unless c is a finite number > 0 or a 0-d floating tensor holding one (a tensor is
    read back once)."""
    if isinstance(c, torch.Tensor):
        if c.ndim != 0 or not c.is_floating_point():
            raise ValueError(
                f"curvature c must be a 0-d floating tensor, got shape {tuple(c.shape)} "
                f"and dtype {c.dtype}"
            )
        value = float(c.detach())
    elif isinstance(c, Real) and not isinstance(c, bool):
        value = float(c)
    else:
        raise ValueError(f"curvature c must be a number or a 0-d tensor, got {c!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"curvature c must be a finite number > 0, got {value!r}")
