"""The curvature/radius control's points: their labels, the cells they train and the config
that lists them. What the training and the paths read; the control's tables are in
``hierbench.controls.curvature``, so editing a table reruns no training.
"""

from __future__ import annotations

import math
import re
from typing import Any

from hierbench.protocol import EUCLIDEAN, POINCARE, REGRESSION, cell_name

MATCHED_EUCLIDEAN = "euclidean"  # the variant (and cell folder) of the control's own E_R
POINT_REGEX = r"c([0-9.e+-]+)_r([0-9.e+-]+)"
POINT_PATTERN = rf"{MATCHED_EUCLIDEAN}|c[0-9.e+-]+_r[0-9.e+-]+"


class CurvatureControlError(ValueError):
    """The control's configuration or inputs are unusable; the message names the key or file."""


def point_label(curvature: float, radius: float) -> str:
    """The label of an operating point in paths and tables, e.g. ``c0.1_r0.4``."""
    return f"c{curvature:g}_r{radius:g}"


def point_geometry(label: str) -> str:
    """The geometry a control variant trains: E for the matched Euclidean, H for a point."""
    if label == MATCHED_EUCLIDEAN:
        return EUCLIDEAN
    parse_point(label)
    return POINCARE


def point_hyperbolic(label: str) -> dict[str, float] | None:
    """The Poincaré operating point a label names, as the config spells one (None for E)."""
    if point_geometry(label) == EUCLIDEAN:
        return None
    curvature, radius = parse_point(label)
    return {"curvature": curvature, "radius": radius}


def cell_label(point: str, seed: int | str) -> str:
    """A control cell's name in records and the fairness audit, e.g. ``HR-42@c1_r0.4``."""
    return f"{cell_name(point_geometry(point), REGRESSION, seed)}@{point}"


def parse_point(label: str) -> tuple[float, float]:
    """The (curvature, radius) a label names; anything else is an error naming it."""
    match = re.fullmatch(POINT_REGEX, label)
    if not match:
        raise CurvatureControlError(f"{label!r} is not a curvature point label (c<c>_r<r>)")
    return float(match.group(1)), float(match.group(2))


def _block(config: dict[str, Any], dataset: str) -> dict[str, Any]:
    return config["datasets"][dataset].get("controls", {}).get("curvature", {})


def curvature_points(config: dict[str, Any], dataset: str) -> list[tuple[float, float]]:
    """The control's configured (c, r) points for a dataset, or none when it is switched off."""
    key = f"datasets.{dataset}.controls.curvature"
    block = _block(config, dataset)
    if not block.get("enabled", False):
        return []
    points = [(float(c), float(r)) for c, r in block["points"]]
    for c, r in points:
        if not (math.isfinite(c) and math.isfinite(r) and c > 0 and r > 0):
            raise CurvatureControlError(f"{key}.points: ({c}, {r}) needs c > 0 and r > 0")
    labels = [point_label(c, r) for c, r in points]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise CurvatureControlError(f"{key}.points lists {repeated} more than once")
    return points


def operating_point(config: dict[str, Any], dataset: str) -> tuple[float, float]:
    """The dataset's own Poincaré operating point (the factorial's), the control's base."""
    hyperbolic = config["datasets"][dataset]["hyperbolic"]
    return float(hyperbolic["curvature"]), float(hyperbolic["radius"])


def control_variants(config: dict[str, Any], dataset: str) -> list[str]:
    """Every variant the control trains: the matched Euclidean, then each point by (c, r),
    the base among them even when the config does not list it (none when switched off)."""
    points = curvature_points(config, dataset)
    if not points:
        return []
    labels = {point_label(c, r) for c, r in [*points, operating_point(config, dataset)]}
    return [MATCHED_EUCLIDEAN, *sorted(labels, key=parse_point)]


def control_epochs(config: dict[str, Any], dataset: str) -> int:
    """The epoch budget of the control's cells: its own, else the factorial's."""
    epochs = _block(config, dataset).get("epochs")
    return int(config["training"]["epochs"] if epochs is None else epochs)
