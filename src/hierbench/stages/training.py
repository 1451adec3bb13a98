"""Training stage: the factorial's cells, in bundles (a dataset's final cells; each outer split's
cells of a seed), and the curvature control's, which are factorial cells at another operating
point and budget, one per job; on development data.

Nothing here reads a sealed artifact: features and splits come from the development side.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hierbench.cells.spec import CellSpec, cell_spec
from hierbench.controls.curvature import cell_label, point_geometry, point_hyperbolic
from hierbench.features.store import role_data
from hierbench.protocol import CURVATURE_CONTROL, REGRESSION, SUPCON, cell_name
from hierbench.provenance.artifacts import write_json
from hierbench.provenance.records import JobContext
from hierbench.training.publishing import train_and_publish, train_bundle_and_publish
from hierbench.training.tuning import selected_tau


def final_spec(
    dataset: str,
    geometry: str,
    loss: str,
    seed: int,
    config: dict[str, Any],
    selection: str | Path | None,
    **options: Any,
) -> CellSpec:
    """A factorial-recipe cell's spec, its τ (an S cell's) from the config or ``selection``;
    ``options`` as :func:`hierbench.cells.spec.cell_spec` takes them."""
    tau = selected_tau(dataset, geometry, config, selection) if loss == SUPCON else None
    return cell_spec(dataset, geometry, loss, seed, config, tau=tau, **options)


def train_cell_bundle(
    dataset: str,
    kind: str,
    wildcards: Mapping[str, str],
    cells: Mapping[str, Mapping[str, Any]],
    features: str | Path,
    splits: str | Path,
    config: dict[str, Any],
    outputs: Mapping[str, str | Path],
    job: JobContext,
    *,
    selection: str | Path | None = None,
) -> list[dict[str, Any]]:
    """Train one bundle of factorial-recipe cells and write each cell's checkpoint, log and
    record: ``cells`` holds their wildcard values by label, the job's ``wildcards`` the rest
    (an ``outer`` split and ``seed``: trained on that split's train side, each record naming
    it, as a cell alone; else ``final/train``). ``outputs`` names each cell's files
    ``<file>_<label>`` and the bundle's ``manifest`` (its cells, in order; written last, so it
    exists only beside a complete bundle)."""
    files: dict[str, dict[str, str | Path]] = {label: {} for label in cells}
    for key, path in outputs.items():
        if key != "manifest":
            name, label = key.split("_", 1)
            files[label][name] = path
    split = wildcards.get("outer", "final")
    specs, labels = [], []
    for values in cells.values():
        cell = {**wildcards, **values}
        geometry, loss, seed = cell["geometry"], cell["loss"], int(cell["seed"])
        specs.append(final_spec(dataset, geometry, loss, seed, config, selection))
        name = cell_name(geometry, loss, seed)
        labels.append(name if split == "final" else f"{name}@{split}")
    x, y = role_data(features, splits, split, "train")
    extra = {} if split == "final" else {"train_split": split}  # final records unchanged
    records = train_bundle_and_publish(
        dataset, specs, x, y, list(files.values()), job, config=config, labels=labels, extra=extra
    )
    write_json({"dataset": dataset, "kind": kind, "cells": labels}, outputs["manifest"], job)
    return records


def curvature_options(
    dataset: str, point: str, geometry: str, seed: int, epochs: int | None
) -> dict[str, Any]:
    """How a curvature-control cell trains: H_R at the point its label names, or the matched
    E_R, for the control's own epoch budget; its record names the control (the fairness audit
    holds the control's cells to that budget)."""
    if geometry != point_geometry(point):
        raise ValueError(
            f"{dataset} curvature control: variant {point!r} trains geometry "
            f"{point_geometry(point)!r}, not {geometry!r}"
        )
    if epochs is None:
        raise ValueError(f"{dataset} curvature control: {point} needs the control's epochs")
    return {
        "hyperbolic": point_hyperbolic(point),
        "label": cell_label(point, seed),
        "epochs": epochs,
        "extra": {"control": CURVATURE_CONTROL},
    }


def train_curvature_cell(
    dataset: str,
    wildcards: Mapping[str, str],
    features: str | Path,
    splits: str | Path,
    config: dict[str, Any],
    outputs: dict[str, str | Path],
    job: JobContext,
    *,
    epochs: int | None = None,
) -> dict[str, Any]:
    """Train the curvature-control cell a job's wildcards name (its ``point``, geometry and
    seed) on ``final/train`` for the control's ``epochs``: H_R at the point, or the matched
    E_R; its record names the cell by the point's label and the control."""
    geometry, seed = wildcards["geometry"], int(wildcards["seed"])
    options = curvature_options(dataset, wildcards["point"], geometry, seed, epochs)
    spec = cell_spec(
        dataset,
        geometry,
        REGRESSION,
        seed,
        config,
        hyperbolic=options["hyperbolic"],
        epochs=options["epochs"],
    )
    x, y = role_data(features, splits, "final", "train")
    return train_and_publish(
        dataset,
        spec,
        x,
        y,
        outputs,
        job,
        label=options["label"],
        config=config,
        extra=options["extra"],
    )
