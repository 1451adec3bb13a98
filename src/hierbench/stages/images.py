"""Data stage, reader half: read any dataset folder, demo or real, into its image table."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from hierbench.artifacts import write_parquet
from hierbench.datasets import read_cub, read_nabirds
from hierbench.provenance import JobContext

log = logging.getLogger(__name__)

READERS = {"cub": read_cub, "nabirds": read_nabirds}


def build_image_table(
    dataset: str, root: str | Path, out_table: str | Path, job: JobContext
) -> pd.DataFrame:
    """Read a dataset folder (demo or real) and write its checked per-image table."""
    if dataset not in READERS:
        raise ValueError(f"no reader for dataset {dataset!r}; known: {sorted(READERS)}")
    images = READERS[dataset](root)
    facts = {
        "images": len(images),
        "classes": int(images["class_id"].nunique()),
        "official_train": int(images["is_train"].sum()),
    }
    # The reader returns rows in the dataset's canonical image-id order.
    write_parquet(images, out_table, job, sort_by=(), metadata={"dataset": dataset}, facts=facts)
    log.info("%s image table: %s", dataset, facts)
    return images
