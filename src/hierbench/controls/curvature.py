"""The curvature/radius control (the paper's Table 10): does negative curvature explain the
geometry contrast?

H_R cells are trained at several Poincaré operating points (c, r), the dataset's own operating
point (the base) among them, beside a matched Euclidean E_R, all within the control: the
factorial's seeds, initial weights, batch order and optimiser, and the control's own epoch
budget (``controls.curvature.epochs``; 84 in the paper config, the paper's budget for its four
new points, whose base and Euclidean controls' epochs it does not give; by default the
factorial's). So every
contrast among the points is measured under one recipe. Each point has a role against the base
when it differs in one coordinate: near-flat (the smallest c), strong curvature (the largest c),
small and large radius; the contrasts are those of the paper's text.

Formats: evaluation summaries as the factorial's, plus a ``variant`` column (a point's label, or
``euclidean`` for the matched E_R); the per-seed table adds ``variant`` to the factorial's
per-seed columns.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hierbench.controls.curvature_points import (
    MATCHED_EUCLIDEAN,
    CurvatureControlError,
    parse_point,
    point_label,
)
from hierbench.effects.intervals import DEFAULT_INTERVALS, IntervalSettings
from hierbench.effects.query_contrasts import QueryContrasts
from hierbench.effects.variants import paired_contrast, seeds_mean_sd
from hierbench.protocol import MEAN_HIERARCHY

LEVELS_SHOWN = ("middle", "high", MEAN_HIERARCHY)
# A point's role against the base and the name the tables give it.
BASE, NEAR_FLAT, STRONG, SMALL_RADIUS, LARGE_RADIUS = (
    "base",
    "near_flat",
    "strong",
    "small_radius",
    "large_radius",
)
ROLE_NAMES = {
    BASE: "Base",
    NEAR_FLAT: "Near-flat",
    STRONG: "Strong curvature",
    SMALL_RADIUS: "Small radius",
    LARGE_RADIUS: "Large radius",
    MATCHED_EUCLIDEAN: "Matched Euclidean",
}
# The paper's contrasts (Table 10's text), as (minuend, subtrahend) roles.
CONTRASTS: tuple[tuple[str, str], ...] = (
    (BASE, NEAR_FLAT),
    (STRONG, BASE),
    (SMALL_RADIUS, BASE),
    (LARGE_RADIUS, BASE),
    (NEAR_FLAT, MATCHED_EUCLIDEAN),
)


def point_roles(labels: list[str], base: tuple[float, float]) -> dict[str, str]:
    """The role of each variant against the base: the matched Euclidean, the base, and, among
    the points that differ from it in one coordinate, the extremes of each direction."""
    roles = {MATCHED_EUCLIDEAN: MATCHED_EUCLIDEAN} if MATCHED_EUCLIDEAN in labels else {}
    points = {label: parse_point(label) for label in labels if label != MATCHED_EUCLIDEAN}
    base_c, base_r = base
    along_c = [(c, label) for label, (c, r) in points.items() if r == base_r]
    along_r = [(r, label) for label, (c, r) in points.items() if c == base_c]
    picks = (
        (NEAR_FLAT, min, [item for item in along_c if item[0] < base_c]),
        (STRONG, max, [item for item in along_c if item[0] > base_c]),
        (SMALL_RADIUS, min, [item for item in along_r if item[0] < base_r]),
        (LARGE_RADIUS, max, [item for item in along_r if item[0] > base_r]),
    )
    for role, pick, candidates in picks:
        if candidates:
            roles[pick(candidates)[1]] = role
    for label, point in points.items():
        if point == (base_c, base_r):
            roles[label] = BASE
    return roles


def _map_rows(per_seed: pd.DataFrame) -> pd.DataFrame:
    """The mAP rows at the levels the control reports."""
    return per_seed[(per_seed["metric"] == "map") & per_seed["level"].isin(LEVELS_SHOWN)]


def variant_order(variants: list[str]) -> list[str]:
    """The matched Euclidean first, then the points by (c, r)."""
    points = sorted((v for v in variants if v != MATCHED_EUCLIDEAN), key=parse_point)
    return [v for v in (MATCHED_EUCLIDEAN,) if v in variants] + points


def _role_name(label: str, roles: dict[str, str]) -> str:
    """A variant's name in the tables: its role, or ``H_R`` for a point without one."""
    return ROLE_NAMES[roles[label]] if label in roles else "H_R"


def curvature_table(per_seed: pd.DataFrame, base: tuple[float, float]) -> pd.DataFrame:
    """The paper's Table-10 layout: a row per variant, mean ± SD over seeds per level."""
    rows = _map_rows(per_seed)
    variants = variant_order(sorted(set(rows["variant"])))
    roles = point_roles(variants, base)
    table = []
    for variant in variants:
        part = rows[rows["variant"] == variant]
        c, r = (
            ("", "") if variant == MATCHED_EUCLIDEAN else (f"{v:g}" for v in parse_point(variant))
        )
        entry = {"arm": _role_name(variant, roles), "curvature": c, "radius": r}
        for level in LEVELS_SHOWN:
            entry[level] = seeds_mean_sd(part[part["level"] == level]["value"])
        table.append(entry)
    return pd.DataFrame(table)


def curvature_contrasts(
    per_seed: pd.DataFrame,
    base: tuple[float, float],
    intervals: IntervalSettings = DEFAULT_INTERVALS,
    query: QueryContrasts | None = None,
) -> pd.DataFrame:
    """The paper's contrasts of mean hierarchy mAP (Base − Near-flat, Strong − Base, Small
    radius − Base, Large radius − Base, Near-flat − Matched Euclidean) and each point without
    a role against the base: per seed, mean ± SD, signs and the t interval (with the test
    images' share from ``query``'s per-query rows when given, else over seeds) with the
    sign-flip test, all within the control."""
    rows = _map_rows(per_seed)
    wide = rows[rows["level"] == MEAN_HIERARCHY].pivot(
        index="seed", columns="variant", values="value"
    )
    base_label = point_label(*base)
    if base_label not in wide.columns:
        raise CurvatureControlError(
            f"curvature contrasts need the base point {base_label} (the operating point)"
        )
    variants = variant_order(list(wide.columns))
    roles = point_roles(variants, base)
    by_role = {role: label for label, role in roles.items()}
    pairs = [(by_role[a], by_role[b]) for a, b in CONTRASTS if a in by_role and b in by_role]
    pairs += [(label, base_label) for label in variants if label not in roles]
    table = []
    for first, second in pairs:
        diff = (wide[first] - wide[second]).sort_index()
        name = f"{_role_name(first, roles)} − {_role_name(second, roles)}"
        if first not in roles:
            name = f"{first} − {_role_name(second, roles)}"
        table.append({"contrast": name, "minuend": first, "subtrahend": second})
        noise = query.checked(first, second, MEAN_HIERARCHY, diff) if query else None
        table[-1] |= paired_contrast(diff, intervals, noise)
    frame = pd.DataFrame(table)
    return frame.astype({"mean": np.float64, "sd": np.float64})
