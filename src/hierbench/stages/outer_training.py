"""Outer-splits training (the paper's section 5.5): an arm's cell trained on an outer split's
whole train side for the epochs chosen on the split's validation side
(:func:`hierbench.stages.tuning.select_outer_durations`): the validation-frozen configuration.
Development data only: nothing here reads a sealed artifact.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from hierbench.controls.outer import OuterSplitError
from hierbench.features.store import role_data
from hierbench.protocol import OUTER_CONTROL, cell_name
from hierbench.provenance.records import JobContext
from hierbench.training.publishing import train_and_publish
from hierbench.training.tuning import final_spec

log = logging.getLogger(__name__)


def train_outer_cell(
    dataset: str,
    outer: str,
    geometry: str,
    loss: str,
    seed: int,
    features: str | Path,
    splits: str | Path,
    selection: str | Path | None,
    durations: str | Path,
    config: dict[str, Any],
    outputs: dict[str, str | Path],
    job: JobContext,
) -> dict[str, Any]:
    """Train one outer arm's cell on ``outer``'s whole train side for the epochs its validation
    side chose (``durations``); its record names the split and the epochs' origin."""
    chosen = json.loads(Path(durations).read_text(encoding="utf-8"))
    arm = f"{geometry}_{loss}"
    if chosen.get("outer") != outer or arm not in chosen.get("arms", {}):
        raise OuterSplitError(
            f"{durations} holds no epochs for arm {arm} of {outer}; choose them again"
        )
    epochs = int(chosen["arms"][arm]["epochs"])
    spec = final_spec(dataset, geometry, loss, seed, config, selection, epochs=epochs)
    x, y = role_data(features, splits, outer, "train")
    extra = {
        "train_split": outer,
        "control": OUTER_CONTROL,
        "epochs_chosen_on": chosen["validation"],
    }
    label = f"{cell_name(geometry, loss, seed)}@{outer}"
    return train_and_publish(
        dataset, spec, x, y, outputs, job, label=label, config=config, extra=extra
    )
