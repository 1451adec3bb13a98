"""Data stage, demo half: render a demo dataset into its real on-disk layout, recorded."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from hierbench.data.layouts import read_classes
from hierbench.data.table_reader import read_taxonomy_csv
from hierbench.demo import write_cub_demo, write_nabirds_demo, write_table_demo
from hierbench.provenance.artifacts import record_folder
from hierbench.provenance.records import JobContext

log = logging.getLogger(__name__)

# The demo renderer of each release layout, by dataset kind (a collection's is build_table_demo).
LAYOUT_RENDERERS: dict[str, Callable[..., Path]] = {
    "cub": write_cub_demo,
    "nabirds": write_nabirds_demo,
}


def build_demo(
    kind: str,
    taxonomy: str | Path,
    out_folder: str | Path,
    job: JobContext,
    *,
    classes_file: str | Path,
    hierarchy_file: str | Path | None = None,
    images_per_class: int,
    image_size: int,
    seed: int,
    classes: int | None = None,
    workers: int | None = None,
) -> Path:
    """Render the demo of a dataset ``kind`` (cub, nabirds) into ``out_folder`` in its real
    on-disk layout, recorded. ``taxonomy`` is the tree the birds are drawn from: NABirds' own
    (a taxonomy parquet), or for CUB the shipped demo tree (``class,middle,high`` CSV), never
    the run's matched taxonomy, so that a taxonomy setting does not change the images."""
    table = _render_tree(taxonomy, classes_file)
    options = {
        "images_per_class": images_per_class,
        "image_size": image_size,
        "seed": seed,
        "classes": classes,
        "classes_file": classes_file,
        "workers": workers,
    }
    if kind not in LAYOUT_RENDERERS:
        raise ValueError(
            f"no demo renderer for dataset kind {kind!r}; known: {sorted(LAYOUT_RENDERERS)}"
        )
    if hierarchy_file is not None:
        options["hierarchy_file"] = hierarchy_file
    LAYOUT_RENDERERS[kind](out_folder, table, **options)
    log.info("rendered the %s demo into %s", kind, out_folder)
    return record_folder(out_folder, job)


def _render_tree(taxonomy: str | Path, classes_file: str | Path) -> pd.DataFrame:
    """A taxonomy table to render from: a parquet as it is, or a ``class,middle,high`` CSV
    keyed by the class ids of ``classes_file`` (every class of it must be in the CSV)."""
    if Path(taxonomy).suffix != ".csv":
        return pd.read_parquet(taxonomy)
    tree = read_taxonomy_csv(taxonomy)
    ids = {name: class_id for class_id, name in read_classes(classes_file).items()}
    unknown = sorted(set(tree["class_name"]) - set(ids))
    missing = sorted(set(ids) - set(tree["class_name"]))
    if unknown or missing:
        raise ValueError(
            f"{taxonomy} and {classes_file} disagree: classes only in the tree {unknown[:3]}, "
            f"only in the class list {missing[:3]}"
        )
    return tree.assign(class_id=tree["class_name"].map(ids)).sort_values("class_id")


def build_table_demo(
    taxonomy_csv: str | Path,
    out_folder: str | Path,
    job: JobContext,
    *,
    images_per_class: int,
    image_size: int,
    seed: int,
    classes: int | None = None,
    workers: int | None = None,
) -> Path:
    """Render the example collection of ``taxonomy_csv`` (class, middle, high) into
    ``out_folder`` in the table layout (images.csv, taxonomy.csv, photos/), recorded."""
    table = read_taxonomy_csv(taxonomy_csv)
    write_table_demo(
        out_folder,
        table,
        images_per_class=images_per_class,
        image_size=image_size,
        seed=seed,
        classes=classes,
        workers=workers,
    )
    log.info("rendered the example collection into %s", out_folder)
    return record_folder(out_folder, job)
