"""The semantic-alignment control: does the identity of the taxonomy matter, or only its shape?

Euclidean Taxonomy-SupCon heads are trained with different supervision weights (leaf only,
leaf + middle, full) and, in the shuffle arm, with the full weights on the structure-preserving
shuffled taxonomy. Each arm's duration is chosen on development data only (the best epoch of
validation mean hierarchy mAP, ties to the earlier), and every arm is scored with the TRUE
taxonomy: the shuffle arm trains on shuffled labels and is judged by the real ones.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from hierbench.cells.spec import CellSpec, cell_spec
from hierbench.protocol import EUCLIDEAN, SUPCON

ARM_NAMES = {
    "leaf": "Leaf-only",
    "leaf_parent": "Leaf+Parent",
    "full": "Full",
    "shuffle": "Shuffle",
}


class SemanticControlError(ValueError):
    """The control's configuration or inputs are unusable; the message names the key."""


@dataclass(frozen=True)
class SemanticArm:
    """One arm: its SupCon level weights, whether it trains on the shuffled taxonomy, and
    which shuffle (its fixed-point setting, :func:`shuffle_setting`)."""

    name: str
    weights: tuple[float, float, float]
    shuffled: bool
    fixed_points: str = "minimum"


def shuffle_setting(config: dict[str, Any], dataset: str, arm: str | None = None) -> str:
    """The fixed-point setting of a dataset's shuffled taxonomy as its file names it (``paper``,
    ``minimum`` or a number): the arm's own when it sets one, else the dataset's."""
    default = config["datasets"][dataset].get("taxonomy", {}).get("shuffle_fixed_points")
    entry = _block(config, dataset).get("arms", {}).get(arm, {}) if arm else {}
    own = entry.get("fixed_points")
    return str(own if own is not None else default if default is not None else "minimum")


def shuffle_settings(config: dict[str, Any], dataset: str) -> list[str]:
    """Every shuffled taxonomy a dataset's run needs: the dataset's own setting and any
    shuffled arm's, sorted."""
    arms = semantic_arms(config, dataset).values()
    own = {arm.fixed_points for arm in arms if arm.shuffled}
    return sorted({shuffle_setting(config, dataset), *own})


def fixed_points_value(setting: str) -> str | int:
    """A setting as :func:`hierbench.taxonomy.shuffle_taxonomy` takes it (a number as int)."""
    return int(setting) if setting.isdigit() else setting


def _block(config: dict[str, Any], dataset: str) -> dict[str, Any]:
    return config["datasets"][dataset].get("controls", {}).get("semantic", {})


def semantic_arms(config: dict[str, Any], dataset: str) -> dict[str, SemanticArm]:
    """The control's arms for a dataset (none when it is switched off), each checked."""
    block = _block(config, dataset)
    if not block.get("enabled", False):
        return {}
    return {name: semantic_arm(config, dataset, name) for name in sorted(block["arms"])}


def semantic_arm(config: dict[str, Any], dataset: str, name: str) -> SemanticArm:
    """One arm by name; an unknown name or unusable weights name the config key."""
    key = f"datasets.{dataset}.controls.semantic.arms"
    arms = _block(config, dataset).get("arms", {})
    if name not in arms:
        raise SemanticControlError(f"{key} has no arm {name!r}; configured arms: {sorted(arms)}")
    entry = arms[name]
    weights = tuple(float(w) for w in entry.get("weights", ()))
    if len(weights) != 3 or not all(math.isfinite(w) and w >= 0 for w in weights):
        raise SemanticControlError(
            f"{key}.{name}.weights must be three numbers >= 0, got {weights}"
        )
    if sum(weights) <= 0:
        raise SemanticControlError(f"{key}.{name}.weights are all zero: nothing to train on")
    shuffled = entry.get("taxonomy", "true") == "shuffled"
    return SemanticArm(name, weights, shuffled, shuffle_setting(config, dataset, name))


def semantic_spec(
    config: dict[str, Any], dataset: str, arm: SemanticArm, seed: int, epochs: int
) -> CellSpec:
    """The arm's cell: the factorial's Euclidean SupCon head with the control's τ, lr, weight
    decay and level weights, for ``epochs`` epochs."""
    block = _block(config, dataset)
    base = cell_spec(dataset, EUCLIDEAN, SUPCON, seed, config, tau=block["tau"], epochs=epochs)
    return dataclasses.replace(
        base, lr=block["lr"], weight_decay=block["weight_decay"], supcon_weights=arm.weights
    )


def training_labels(
    labels: np.ndarray, arm: SemanticArm, taxonomy: pd.DataFrame, shuffled: pd.DataFrame
) -> np.ndarray:
    """The (n, 3) codes an arm trains on: the true ones, or the shuffled taxonomy's middle and
    high codes of each item's leaf (the leaf codes stay: the shuffle keeps every leaf)."""
    if not arm.shuffled:
        return labels
    leaf_of_code = dict(zip(taxonomy["leaf_code"], taxonomy["leaf"], strict=True))
    by_leaf = shuffled.set_index("leaf")[["middle_code", "high_code"]]
    leaves = [leaf_of_code[int(code)] for code in labels[:, 0]]
    unknown = sorted(set(leaves) - set(by_leaf.index))
    if unknown:
        raise SemanticControlError(f"the shuffled taxonomy lacks leaves {unknown[:5]}")
    codes = by_leaf.loc[leaves].to_numpy(np.int64)
    return np.column_stack([labels[:, 0], codes])


def best_epoch(scores: list[float]) -> int:
    """The 1-based epoch with the highest validation score; ties go to the earlier epoch."""
    values = np.asarray(scores, dtype=np.float64)
    if not len(values) or np.isnan(values).all():
        raise SemanticControlError("no epoch has a validation score (no valid validation query)")
    return int(np.nanargmax(values)) + 1
