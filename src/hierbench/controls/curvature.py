"""The curvature/radius control: does negative curvature explain the geometry contrast?

H_R cells are trained at several Poincaré operating points (c, r) with the factorial's recipe,
seeds, initial weights and batch order, and read against the matched Euclidean E_R and the
dataset's own operating point (the factorial's H_R). A point near c = 0 is a nearly flat ball:
if the contrast vanishes there and grows with c, curvature is doing the work.

Formats: evaluation summaries as the factorial's, plus a ``variant`` column (a point's label,
or the factorial arm ``E_R`` / ``H_R``); the per-seed table adds ``variant`` to the factorial's
per-seed columns.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pandas as pd

from hierbench.controls.common import seeds_mean_sd
from hierbench.protocol import MEAN_HIERARCHY, POINCARE, REGRESSION, cell_name

POINT_PATTERN = r"c[0-9.e+-]+_r[0-9.e+-]+"
MATCHED_EUCLIDEAN = "E_R"
OPERATING_POINT = "H_R"
LEVELS_SHOWN = ("middle", "high", MEAN_HIERARCHY)


class CurvatureControlError(ValueError):
    """The control's configuration or inputs are unusable; the message names the key or file."""


def point_label(curvature: float, radius: float) -> str:
    """The label of an operating point in paths and tables, e.g. ``c0.1_r0.4``."""
    return f"c{curvature:g}_r{radius:g}"


def cell_label(point: str, seed: int | str) -> str:
    """A control cell's name in records and the fairness audit, e.g. ``HR-42@c1_r0.4``."""
    return f"{cell_name(POINCARE, REGRESSION, seed)}@{point}"


def parse_point(label: str) -> tuple[float, float]:
    """The (curvature, radius) a label names; anything else is an error naming it."""
    match = re.fullmatch(r"c([0-9.e+-]+)_r([0-9.e+-]+)", label)
    if not match:
        raise CurvatureControlError(f"{label!r} is not a curvature point label (c<c>_r<r>)")
    return float(match.group(1)), float(match.group(2))


def curvature_points(config: dict[str, Any], dataset: str) -> list[tuple[float, float]]:
    """The control's (c, r) points for a dataset, or none when it is switched off."""
    key = f"datasets.{dataset}.controls.curvature"
    block = config["datasets"][dataset].get("controls", {}).get("curvature", {})
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


def _map_rows(per_seed: pd.DataFrame) -> pd.DataFrame:
    """The mAP rows at the levels the control reports."""
    return per_seed[(per_seed["metric"] == "map") & per_seed["level"].isin(LEVELS_SHOWN)]


def variant_order(variants: list[str]) -> list[str]:
    """E_R first, then the points by (c, r), then the operating point's factorial H_R."""
    points = sorted((v for v in variants if re.fullmatch(POINT_PATTERN, v)), key=parse_point)
    ends = [v for v in (MATCHED_EUCLIDEAN,) if v in variants]
    return ends + points + [v for v in (OPERATING_POINT,) if v in variants]


def _text(value: float | str) -> str:
    """A curvature or radius as the table shows it ("" for the Euclidean row)."""
    return value if isinstance(value, str) else f"{value:g}"


def curvature_table(per_seed: pd.DataFrame, operating_point: tuple[float, float]) -> pd.DataFrame:
    """The paper's Table-10 layout: a row per variant, mean ± SD over seeds per level."""
    rows = _map_rows(per_seed)
    table = []
    for variant in variant_order(sorted(set(rows["variant"]))):
        part = rows[rows["variant"] == variant]
        if variant == MATCHED_EUCLIDEAN:
            arm, c, r = "E_R (matched)", "", ""
        elif variant == OPERATING_POINT:
            arm, (c, r) = "H_R (operating point)", operating_point
        else:
            arm, (c, r) = "H_R", parse_point(variant)
        entry = {"arm": arm, "curvature": _text(c), "radius": _text(r)}
        for level in LEVELS_SHOWN:
            entry[level] = seeds_mean_sd(part[part["level"] == level]["value"])
        table.append(entry)
    return pd.DataFrame(table)


def curvature_contrasts(per_seed: pd.DataFrame) -> pd.DataFrame:
    """Each point's mean hierarchy mAP minus the operating point's, per seed and mean ± SD."""
    rows = _map_rows(per_seed)
    wide = rows[rows["level"] == MEAN_HIERARCHY].pivot(
        index="seed", columns="variant", values="value"
    )
    if OPERATING_POINT not in wide.columns:
        raise CurvatureControlError("curvature contrasts need the operating point's H_R cells")
    table = []
    for variant in variant_order(list(wide.columns)):
        if variant == OPERATING_POINT:
            continue
        diff = (wide[variant] - wide[OPERATING_POINT]).sort_index()
        signs = " ".join("+" if d > 0 else ("−" if d < 0 else "0") for d in diff)
        table.append(
            {
                "variant": variant,
                "contrast": f"{variant} − H_R (operating point)",
                "mean": float(diff.mean()),
                "sd": float(diff.std(ddof=1)),
                "positive_seeds": int((diff > 0).sum()),
                "seeds": int(diff.notna().sum()),
                "signs": signs,
            }
        )
    return pd.DataFrame(table).astype({"mean": np.float64, "sd": np.float64})
