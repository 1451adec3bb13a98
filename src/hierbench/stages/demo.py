"""Data stage, demo half: render a demo dataset into its real on-disk layout, recorded."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from hierbench.artifacts import record_folder
from hierbench.demo import write_cub_demo, write_nabirds_demo
from hierbench.provenance import JobContext

log = logging.getLogger(__name__)


def build_demo(
    dataset: str,
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
    """Render the demo ``dataset`` into ``out_folder`` in its real on-disk layout, recorded."""
    table = pd.read_parquet(taxonomy)
    options = {
        "images_per_class": images_per_class,
        "image_size": image_size,
        "seed": seed,
        "classes": classes,
        "classes_file": classes_file,
        "workers": workers,
    }
    if dataset == "cub":
        write_cub_demo(out_folder, table, **options)
    elif dataset == "nabirds":
        write_nabirds_demo(out_folder, table, hierarchy_file=hierarchy_file, **options)
    else:
        raise ValueError(f"no demo renderer for dataset {dataset!r}; known: cub, nabirds")
    log.info("rendered the %s demo into %s", dataset, out_folder)
    return record_folder(out_folder, job)
