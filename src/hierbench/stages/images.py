"""Data stage, reader half: read any dataset folder, demo or real, into its image table."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from hierbench.data.fingerprint import ABSENT, fingerprint
from hierbench.data.kinds import DatasetKind
from hierbench.provenance.artifacts import write_parquet
from hierbench.provenance.records import JobContext

log = logging.getLogger(__name__)


def build_image_table(
    dataset: str, root: str | Path, out_table: str | Path, job: JobContext, *, kind: DatasetKind
) -> pd.DataFrame:
    """Read a dataset folder (demo or real) of a kind and write its checked per-image table."""
    images = kind.read_images(Path(root))
    facts = {
        "images": len(images),
        "classes": int(images["class_id"].nunique()),
        "official_train": int(images["is_train"].sum()),
    }
    # The reader returns rows in the dataset's canonical image-id order.
    write_parquet(images, out_table, job, sort_by=(), metadata={"dataset": dataset}, facts=facts)
    log.info("%s image table: %s", dataset, facts)
    return images


def build_fingerprint(
    dataset: str,
    root: str | Path,
    out_table: str | Path,
    job: JobContext,
    *,
    kind: DatasetKind,
    part: str,
    cache_file: str | Path | None,
) -> pd.DataFrame:
    """Write one part of a dataset's content identity (its layout's tables, or the images they
    list): every file with its size and SHA256, hashes cached by path, size and time."""
    table = fingerprint(root, kind, part, cache_file)
    absent = int((table["sha256"] == ABSENT).sum())
    facts = {
        "files": len(table),
        "bytes": int(table["bytes"].clip(lower=0).sum()),
        "absent": absent,
    }
    write_parquet(
        table,
        out_table,
        job,
        sort_by=["path"],
        metadata={"dataset": dataset, "part": part},
        facts=facts,
    )
    log.info("%s %s files: %s", dataset, part, facts)
    return table
