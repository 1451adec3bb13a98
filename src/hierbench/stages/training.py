"""Training stage: the final factorial cells (one bundle per dataset), and the curvature
control's and outer splits' cells, which are factorial cells at another operating point, budget
or split, on development data.

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
    epochs: int | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train one final cell on ``final/train`` and write checkpoint, log and record.

    ``hyperbolic`` trains at another Poincaré operating point and ``epochs`` for another budget
    (the curvature control); ``label`` then names the cell in its record and in the fairness
    audit, and ``extra`` adds record keys. ``split`` trains on another split's train side
    instead (an outer split, ``outer-1``).
    """
    spec = final_spec(
        dataset, geometry, loss, seed, config, selection, hyperbolic=hyperbolic, epochs=epochs
    )
    x, y = role_data(features, splits, split, "train")
    if split != "final":  # final records unchanged
        extra = {**(extra or {}), "train_split": split}
    return train_and_publish(
        dataset, spec, x, y, outputs, job, label=label, config=config, extra=extra
    )


def train_factorial_bundle(
    dataset: str,
    cells: Mapping[str, Mapping[str, Any]],
    features: str | Path,
    splits: str | Path,
    config: dict[str, Any],
    outputs: Mapping[str, str | Path],
    job: JobContext,
    *,
    selection: str | Path | None = None,
) -> list[dict[str, Any]]:
    """Train a dataset's factorial cells (``cells``: wildcard values by label) as one bundle on
    ``final/train`` and write each cell's checkpoint, log and record; ``outputs`` names each
    cell's files ``<file>_<label>`` and the bundle's ``manifest`` (its cells, in order;
    written last, so it exists only beside a complete bundle)."""
    files: dict[str, dict[str, str | Path]] = {label: {} for label in cells}
    for key, path in outputs.items():
        if key != "manifest":
            name, label = key.split("_", 1)
            files[label][name] = path
    specs = [
        final_spec(dataset, c["geometry"], c["loss"], int(c["seed"]), config, selection)
        for c in cells.values()
    ]
    x, y = role_data(features, splits, "final", "train")
    records = train_bundle_and_publish(
        dataset, specs, x, y, list(files.values()), job, config=config
    )
    manifest = {"dataset": dataset, "kind": "factorial", "cells": [r["cell"] for r in records]}
    write_json(manifest, outputs["manifest"], job)
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


def train_cell(
    dataset: str,
    wildcards: Mapping[str, str],
    features: str | Path,
    splits: str | Path,
    config: dict[str, Any],
    outputs: dict[str, str | Path],
    job: JobContext,
    *,
    selection: str | Path | None = None,
    epochs: int | None = None,
) -> dict[str, Any]:
    """Train the cell a ``train_cell`` job's wildcards name: a curvature-control cell when they
    name a ``point`` (for ``epochs``), an outer split's cell when they name an ``outer``
    split, else a final factorial cell (its τ from ``selection`` when tuned)."""
    geometry, seed = wildcards["geometry"], int(wildcards["seed"])
    loss = wildcards.get("loss", REGRESSION)  # a curvature-control cell is H_R or E_R
    options: dict[str, Any] = {"selection": selection}
    if "point" in wildcards:
        options = curvature_options(dataset, wildcards["point"], geometry, seed, epochs)
    elif "outer" in wildcards:
        label = f"{cell_name(geometry, loss, wildcards['seed'])}@{wildcards['outer']}"
        options |= {"label": label, "split": wildcards["outer"]}
    return train_final_cell(
        dataset, geometry, loss, seed, features, splits, config, outputs, job, **options
    )
