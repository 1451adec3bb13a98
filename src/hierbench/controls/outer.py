"""The outer hierarchy-disjoint splits (the paper's section 5.5): which splits and arms a dataset
trains for them.

Each outer split holds out whole middle groups (CUB genera, NABirds parents) of the development
data as its test side, and another share of its train side's groups as its validation side.
The arms are the paper's: the frozen features, the matched Euclidean and matched Hyperbolic
controls (which we read as the regression cells E_R, H_R; the paper does not say) and
Taxonomy-SupCon; the paper: "These earlier experiments use validation-frozen configurations
rather than the new fixed-100-epoch factorial" (its § 5.5). Ours: the factorial's head, recipe
and temperatures, for the epochs chosen on the split's own validation side (the best
validation mean hierarchy mAP, group-macro, as the semantic control chooses), then trained on
the split's whole train side. The paper does not say which geometry its SupCon arm used; ours
is a config key (``controls.outer.supcon_geometry``, default H: SupCon − matched H is then the
objective's effect at a matched geometry). The splits lie inside the development data, so no seal is
involved. The tables over the splits are :mod:`hierbench.controls.outer_tables` (apart, so that
editing them retrains and rescores nothing).
"""

from __future__ import annotations

from typing import Any

from hierbench.protocol import EUCLIDEAN, POINCARE, REGRESSION, SUPCON, cell_name

# The outer splits' endpoint: mean hierarchy mAP, group-macro on both datasets (the paper's 5.5
# names group-macro for CUB; NABirds' registered aggregation is group-macro too).
OUTER_AGGREGATION = "group_macro"
MATCHED_E, MATCHED_H = f"{EUCLIDEAN}_{REGRESSION}", f"{POINCARE}_{REGRESSION}"


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


def outer_block(config: dict[str, Any], dataset: str) -> dict[str, Any]:
    """The dataset's ``controls.outer`` block."""
    return config["datasets"][dataset].get("controls", {}).get("outer", {})


def supcon_arm(config: dict[str, Any], dataset: str) -> str:
    """The outer splits' Taxonomy-SupCon arm (``H_S`` or ``E_S``)."""
    geometry = outer_block(config, dataset).get("supcon_geometry", POINCARE)
    return f"{geometry}_{SUPCON}"


def outer_arms(config: dict[str, Any], dataset: str) -> list[tuple[str, str]]:
    """The trained arms of every outer split, as (geometry, loss): matched E, matched H, SupCon."""
    arms = [MATCHED_E, MATCHED_H, supcon_arm(config, dataset)]
    return [(arm.split("_")[0], arm.split("_")[1]) for arm in arms]


def outer_cells(config: dict[str, Any], dataset: str) -> list[str]:
    """The cell names each outer split trains (every arm at the outer seeds)."""
    seeds = outer_seeds(config, dataset)
    return [cell_name(g, loss, seed) for g, loss in outer_arms(config, dataset) for seed in seeds]
