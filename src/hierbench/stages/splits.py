"""Splits stage: the dev-side split table and manifest, and the sealed test-side ones."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pandas as pd

from hierbench.data.kinds import DatasetKind
from hierbench.provenance.artifacts import write_parquet
from hierbench.provenance.records import JobContext
from hierbench.splits.construction import make_split_table, split_manifest, with_labels

log = logging.getLogger(__name__)

SORT_TABLE = ["split", "role", "image_id"]
SORT_MANIFEST = ["split", "role"]


# The study's development and test images of a kind, beside which a partition's own are logged.
PAPER_IMAGES = {"nabirds": {"development": 19_021, "test": 5_017}}


def _partition_line(dataset: str, kind: DatasetKind, report: dict[str, Any]) -> str:
    """The partition in one log line, beside the paper's image counts for NABirds."""
    roles = ("train", "validation", "test")
    middles, leaves = ([report[r][what] for r in roles] for what in ("middles", "leaves"))
    development = report["train"]["images"] + report["validation"]["images"]
    line = (
        f"{dataset} partition: seed {report['seed']} (permutation {report['tries']} tried), "
        f"middle groups {' / '.join(map(str, middles))}, leaves {' / '.join(map(str, leaves))}, "
        f"{development} development and {report['test']['images']} test images"
    )
    if kind.name in PAPER_IMAGES:
        paper = PAPER_IMAGES[kind.name]
        line += f" (the paper: {paper['development']:,} and {paper['test']:,} on its real images)"
    return line


def build_splits_and_sealed_test(
    dataset: str,
    images: str | Path,
    taxonomy: str | Path,
    config: dict[str, Any],
    outputs: dict[str, str | Path],
    job: JobContext,
    *,
    kind: DatasetKind,
) -> pd.DataFrame:
    """Write the dev split table and manifest, and the sealed test-side table and manifest.

    ``outputs`` names ``dev``, ``manifest``, ``sealed`` and ``sealed_manifest`` paths. Rows of
    the sealed test set go only into the sealed pair.
    """
    labelled = with_labels(pd.read_parquet(images), pd.read_parquet(taxonomy))
    table, partition = make_split_table(kind, labelled, config)
    manifest = split_manifest(table, labelled)
    if partition is not None:
        log.info("%s", _partition_line(dataset, kind, partition))
    for sealed, table_key, manifest_key in (
        (False, "dev", "manifest"),
        (True, "sealed", "sealed_manifest"),
    ):
        part = table[table["sealed"] == sealed]
        rows = manifest[manifest["sealed"] == sealed]
        facts = {"splits": {f"{r.split}/{r.role}": r.sha256 for r in rows.itertuples()}}
        if partition is not None:
            facts["partition"] = partition
        write_parquet(
            part, outputs[table_key], job, sort_by=SORT_TABLE, metadata={"dataset": dataset}
        )
        write_parquet(rows, outputs[manifest_key], job, sort_by=SORT_MANIFEST, facts=facts)
    log.info("%s splits:\n%s", dataset, manifest.to_string(index=False))
    return manifest
