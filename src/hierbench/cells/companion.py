"""The companion method's cells (E_A, L_A) as the config defines them: whether they run, their
names, their pair sources and their spec.

Every decision the rules need about the companion method is here, tested, and free of torch (the
workflow imports it when it plans the run); the objective a cell trains is built by
``hierbench.losses.entailment_objective.companion_objective``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from hierbench.cells.spec import CellSpec, cell_spec
from hierbench.protocol import COMPANION_CELLS, COMPANION_LOSS, EUCLIDEAN, LORENTZ, cell_name


@dataclass(frozen=True)
class PairSources:
    """Which pairs a cell trains on."""

    boxes: bool
    cross_image: int
    taxonomy: bool

    @property
    def needs_crops(self) -> bool:
        """Whether any source needs crop features."""
        return self.boxes or self.cross_image > 0


class CompanionError(ValueError):
    """The companion method cannot run as configured; the message names the key."""


def companion_enabled(config: dict[str, Any]) -> bool:
    """Whether the E_A and L_A cells run."""
    return bool(config.get("companion", {}).get("enabled", False))


def companion_cells(config: dict[str, Any]) -> list[str]:
    """The companion cells' names (``EA-42``, ``LA-42``, ...), none when switched off."""
    if not companion_enabled(config):
        return []
    seeds = config["training"]["seeds"]
    return [cell_name(g, loss, seed) for g, loss in COMPANION_CELLS for seed in seeds]


def pair_sources(config: dict[str, Any]) -> PairSources:
    """The configured pair sources; none at all is an error naming the key."""
    pairs = config["companion"]["pairs"]
    sources = PairSources(
        boxes=bool(pairs["boxes"]),
        cross_image=int(pairs["cross_image"]),
        taxonomy=bool(pairs["taxonomy"]),
    )
    if not (sources.needs_crops or sources.taxonomy):
        raise CompanionError(
            "companion.pairs: boxes, cross_image and taxonomy are all off: no entailment pair"
        )
    return sources


def companion_spec(dataset: str, geometry: str, seed: int, config: dict[str, Any]) -> CellSpec:
    """A companion cell's spec: the factorial's recipe with loss A; the L head starts at the
    dataset's curvature (then learns it) and has no tangent radius; the E head is unnormalised
    (on the unit sphere the Euclidean exterior angle is symmetric and loss A degenerates:
    ``cellspec.SPHERE_SYMMETRY``)."""
    if geometry not in (g for g, _ in COMPANION_CELLS):
        raise CompanionError(f"companion cells run on heads {[g for g, _ in COMPANION_CELLS]}")
    base = cell_spec(dataset, EUCLIDEAN, COMPANION_LOSS, seed, config)
    if geometry == LORENTZ:
        curvature = float(config["datasets"][dataset]["hyperbolic"]["curvature"])
        return replace(base, geometry=LORENTZ, curvature=curvature, radius=None)
    return replace(base, normalise=False)
