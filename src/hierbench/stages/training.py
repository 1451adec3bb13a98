"""Training stage: the final factorial cells (and the curvature control's and outer splits'
cells, which are factorial cells at another operating point or split), on development data.

Nothing here reads a sealed artifact: features and splits come from the development side.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hierbench.cell_publishing import train_and_publish
from hierbench.cellspec import cell_spec
from hierbench.featurestore import role_data
from hierbench.protocol import SUPCON
from hierbench.provenance import JobContext
from hierbench.tuning import selected_tau


def train_final_cell(
    dataset: str,
    geometry: str,
    loss: str,
    seed: int,
    features: str | Path,
    splits: str | Path,
    config: dict[str, Any],
    outputs: dict[str, str | Path],
    job: JobContext,
    *,
    selection: str | Path | None = None,
    hyperbolic: dict[str, float] | None = None,
    label: str | None = None,
    split: str = "final",
) -> dict[str, Any]:
    """Train one final cell on ``final/train`` and write checkpoint, log and record.

    ``hyperbolic`` trains at another Poincaré operating point (the curvature control);
    ``label`` then names the cell in its record and in the fairness audit. ``split`` trains on
    another split's train side instead (an outer split, ``outer-1``).
    """
    tau = selected_tau(dataset, geometry, config, selection) if loss == SUPCON else None
    spec = cell_spec(dataset, geometry, loss, seed, config, tau=tau, hyperbolic=hyperbolic)
    x, y = role_data(features, splits, split, "train")
    extra = {"train_split": split} if split != "final" else None  # final records unchanged
    return train_and_publish(
        dataset, spec, x, y, outputs, job, label=label, config=config, extra=extra
    )
