"""Training stage: the factorial recipe's cells, in bundles: a dataset's final cells, each outer
split's cells of a seed, and each curvature-control point's cells of every seed (factorial
cells at another operating point and budget); on development data.

Nothing here reads a sealed artifact: features and splits come from the development side.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hierbench.cells.spec import CellSpec, cell_spec
from hierbench.controls.curvature_points import cell_label, point_geometry, point_hyperbolic
from hierbench.features.store import role_data
from hierbench.protocol import CURVATURE_CONTROL, REGRESSION, cell_name
from hierbench.provenance.records import JobContext
from hierbench.training.publishing import train_bundle_and_publish
from hierbench.training.tuning import final_spec


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
    epochs: int | None = None,
) -> list[dict[str, Any]]:
    """Train one bundle of factorial-recipe cells and write each cell's checkpoint, log and
    record, then the bundle's manifest. ``cells`` holds their wildcard values by output key,
    the job's ``wildcards`` the rest: a curvature ``point`` (trained for the control's
    ``epochs``), an ``outer`` split (trained on its train side), else final factorial cells.
    Every cell's record is the one it gets trained alone (see ``bundle_member``); a bundle's
    cells share their extra record keys (one point or outer split per bundle)."""
    members, extras = [], []
    for key, values in cells.items():
        spec, label, extra = bundle_member(
            dataset, {**wildcards, **values}, config, selection, epochs
        )
        members.append((key, spec, label))
        extras.append(extra)
    x, y = role_data(features, splits, wildcards.get("outer", "final"), "train")
    return train_bundle_and_publish(
        dataset, kind, members, x, y, outputs, job, config=config, extra=extras[0]
    )


def bundle_member(
    dataset: str,
    cell: Mapping[str, Any],
    config: dict[str, Any],
    selection: str | Path | None,
    epochs: int | None,
) -> tuple[CellSpec, str, dict[str, Any]]:
    """A bundled cell's spec, label and record keys beyond the common ones: a curvature-control
    cell (its ``point``; H_R at it, or the matched E_R, for ``epochs``), an outer split's cell
    (its ``outer`` split), or a final factorial cell (its τ from ``selection`` when tuned)."""
    geometry, seed = cell["geometry"], int(cell["seed"])
    if "point" in cell:
        options = curvature_options(dataset, cell["point"], geometry, seed, epochs)
        spec = cell_spec(
            dataset,
            geometry,
            REGRESSION,
            seed,
            config,
            hyperbolic=options["hyperbolic"],
            epochs=options["epochs"],
        )
        return spec, options["label"], options["extra"]
    spec = final_spec(dataset, geometry, cell["loss"], seed, config, selection)
    name = cell_name(geometry, cell["loss"], seed)
    if "outer" in cell:  # final records unchanged; an outer split's name it
        return spec, f"{name}@{cell['outer']}", {"train_split": cell["outer"]}
    return spec, name, {}


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
