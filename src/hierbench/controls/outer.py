"""The outer hierarchy-disjoint splits: which splits and cells a dataset trains for them.

Each outer split holds out whole middle groups (CUB genera, NABirds parents) of the development
data. E_R, H_R, E_S and H_S are trained on its train side with the factorial's recipe and
temperatures, and scored with the frozen features on its test side's query/gallery draws. The
splits lie inside the development data, so no seal is involved. The tables over the splits are
:mod:`hierbench.controls.outer_tables` (apart, so that editing them retrains and rescores
nothing).
"""

from __future__ import annotations

from typing import Any

from hierbench.protocol import GEOMETRIES, LOSSES, cell_name


class OuterSplitError(ValueError):
    """The outer splits' configuration or inputs are unusable; the message names the key."""


def outer_enabled(config: dict[str, Any], dataset: str) -> bool:
    """Whether a dataset trains and scores its outer splits."""
    block = config["datasets"][dataset].get("controls", {}).get("outer", {})
    return bool(block.get("enabled", False))


def outer_splits(config: dict[str, Any], dataset: str) -> list[str]:
    """The outer split names of a dataset (``outer-1`` …), none when the control is off."""
    if not outer_enabled(config, dataset):
        return []
    count = config["datasets"][dataset]["splits"]["outer"]["count"]
    if count < 1:
        raise OuterSplitError(
            f"datasets.{dataset}.controls.outer is enabled but "
            f"datasets.{dataset}.splits.outer.count is {count}: there is no outer split to train"
        )
    return [f"outer-{k}" for k in range(1, count + 1)]


def outer_seeds(config: dict[str, Any], dataset: str) -> list[int]:
    """The training seeds of every outer split's cells."""
    return list(config["datasets"][dataset]["controls"]["outer"]["seeds"])


def outer_cells(config: dict[str, Any], dataset: str) -> list[str]:
    """The cell names each outer split trains (every factorial cell at the outer seeds)."""
    seeds = outer_seeds(config, dataset)
    return [cell_name(g, loss, seed) for g in GEOMETRIES for loss in LOSSES for seed in seeds]
