"""Outer-splits training (the paper's section 5.5): each arm's epochs chosen on an outer split's
validation side, then the arm's cell trained on the split's whole train side for those epochs
(the validation-frozen configuration). Development data only: nothing here reads a sealed
artifact.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

from hierbench.controls.outer import OuterSplitError, outer_arms, outer_block
from hierbench.controls.semantic import best_epoch
from hierbench.devices import config_device
from hierbench.features.store import role_arrays, role_data
from hierbench.protocol import OUTER_CONTROL, cell_name
from hierbench.provenance.artifacts import write_json
from hierbench.provenance.records import JobContext
from hierbench.splits.construction import TUNING_SUFFIX
from hierbench.stages.training import final_spec
from hierbench.stages.tuning import validation_score
from hierbench.training.publishing import train_and_publish
from hierbench.training.trainer import train_cell

log = logging.getLogger(__name__)


def select_outer_durations(
    dataset: str,
    outer: str,
    features: str | Path,
    splits: str | Path,
    selection: str | Path | None,
    config: dict[str, Any],
    out_json: str | Path,
    job: JobContext,
    *,
    aggregation: str,
) -> dict[str, Any]:
    """Choose every outer arm's epochs on ``outer``'s validation side: each arm (the tuning
    seed, the factorial's recipe and τ) trains on ``<outer>-tuning/train`` up to
    ``controls.outer.max_epochs`` and is scored after every epoch on its query/gallery (mean
    hierarchy mAP under ``aggregation``, in the arm's own geometry); the best epoch wins, ties
    to the earlier."""
    tuning = f"{outer}-{TUNING_SUFFIX}"
    (x, y), query, gallery = role_arrays(
        features, splits, [(tuning, "train"), (tuning, "query"), (tuning, "gallery")]
    )
    max_epochs = int(outer_block(config, dataset)["max_epochs"])
    seed, ks = int(config["tuning"]["seed"]), config["evaluation"]["recall_ks"]
    arms = {}
    for geometry, loss in outer_arms(config, dataset):
        spec = final_spec(dataset, geometry, loss, seed, config, selection, epochs=max_epochs)
        scores: list[float] = []

        def score(epoch: int, model: Any, spec: Any = spec, scores: list = scores) -> dict:
            scores.append(validation_score(model, spec, query, gallery, ks, aggregation)["score"])
            return {"validation_score": scores[-1]}

        train_cell(x, y, spec, on_epoch=score, device=config_device(config))
        arm = f"{geometry}_{loss}"
        arms[arm] = {
            "epochs": best_epoch(scores),
            "scores": [value if math.isfinite(value) else None for value in scores],
        }
        log.info(
            "%s %s %s: best epoch %d of %d", dataset, outer, arm, arms[arm]["epochs"], max_epochs
        )
    record = {
        "dataset": dataset,
        "outer": outer,
        "validation": tuning,
        "aggregation": aggregation,
        "seed": seed,
        "arms": arms,
    }
    write_json(record, out_json, job)
    return record


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
