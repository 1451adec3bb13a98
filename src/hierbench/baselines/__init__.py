"""The context baselines read beside the factorial: PCA of the frozen features (``pca``) and a
HIER-style model (``hier``); the frozen features themselves need no code of their own."""

from __future__ import annotations

from typing import Any


def baselines_enabled(config: dict[str, Any], dataset: str) -> bool:
    """Whether a dataset runs the PCA and HIER-style baselines."""
    block = config["datasets"][dataset].get("controls", {}).get("baselines", {})
    return bool(block.get("enabled", False))


def pca_dimensions(config: dict[str, Any], dataset: str) -> int:
    """The PCA baseline's output dimensions for a dataset."""
    return int(config["datasets"][dataset]["controls"]["baselines"]["pca_dimensions"])
