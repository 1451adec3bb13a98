"""Feature stage: one frozen-backbone pass over a dataset's images, then the labelled slices
that training, tuning and the sealed evaluation read.

The pass depends on the images and the backbone only (never on the taxonomy or the splits), so
a taxonomy edit reruns the slices, which join the labels, and never the backbone. The pass sees
every image of the study's pool, test images included, before any split exists: it is frozen,
unlabelled and per image, so it carries nothing of the test side into training. Only the slice
rules read it. The development slice holds the development images; the sealed slice exactly
the sealed test images (``final/test``), in an artifact of its own that no training rule takes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from hierbench.devices import resolve_device
from hierbench.features.backbones import create_backbone
from hierbench.features.extraction import IMAGES_DIR, extract_features, feature_metadata
from hierbench.features.store import feature_table, read_feature_matrix, write_feature_parquet
from hierbench.provenance.artifacts import read_parquet_metadata
from hierbench.provenance.records import JobContext
from hierbench.splits.construction import (
    SplitPolicy,
    development_candidates,
    role_ids,
    rows_for_ids,
    study_pool,
    with_labels,
)

log = logging.getLogger(__name__)

# Each backbone pass: which images it holds, chosen from the image table alone, and whether it
# crops them to the bird's box. The whole images of the study's pool; the crops (the companion
# method's entailment pairs, development only) of the images that may be development images.
Selection = Callable[[SplitPolicy, pd.DataFrame, dict[str, Any]], pd.DataFrame]
PASSES: dict[str, tuple[Selection, bool]] = {
    "images": (study_pool, False),
    "crops": (development_candidates, True),
}


def build_backbone_pass(
    name: str,
    dataset: str,
    images: str | Path,
    root: str | Path,
    backbone: dict[str, Any],
    out_table: str | Path,
    job: JobContext,
    *,
    kind: SplitPolicy,
    pool: dict[str, Any],
    images_dir: str = IMAGES_DIR,
    device: str = "cpu",
) -> pd.DataFrame:
    """Extract and write the unlabelled features of one pass (``PASSES``) of a dataset, rows
    sorted by image id; ``pool`` holds the dataset's ``image_pool`` and ``splits`` blocks."""
    if name not in PASSES:
        raise ValueError(f"no backbone pass {name!r}; passes: {sorted(PASSES)}")
    select, crop = PASSES[name]
    chosen = select(kind, pd.read_parquet(images), pool).sort_values("image_id")
    model = create_backbone(
        backbone["name"], backbone["weights"], image_size=backbone["image_size"]
    )
    matrix = extract_features(
        model,
        chosen.reset_index(drop=True),
        root,
        image_size=backbone["image_size"],
        batch_size=backbone["batch_size"],
        num_workers=backbone["num_workers"],
        crop_to_bbox=crop or backbone["crop_to_bbox"],
        images_dir=images_dir,
        device=resolve_device(device),
    )
    table = feature_table(chosen, matrix, labelled=False)
    metadata = {
        "dataset": dataset,
        "pass": name,
        **feature_metadata(
            backbone["name"], backbone["weights"], backbone["image_size"], matrix.shape[1]
        ),
    }
    write_feature_parquet(table, out_table, job, metadata)
    log.info("%s backbone pass %s: %d images x %d", dataset, name, *matrix.shape)
    return table


def _development_ids(dev_splits: str | Path) -> list[str]:
    """Every image id of the development splits, sorted."""
    return sorted(pd.read_parquet(dev_splits)["image_id"].astype(str).unique())


def _sealed_test_ids(sealed_splits: str | Path) -> list[str]:
    """Exactly the sealed test images (``final/test``)."""
    return role_ids(pd.read_parquet(sealed_splits), "final", "test")


# Each slice: which images it holds (from its split table). Development images, their crops
# (cached apart) and the sealed test images (an artifact of their own).
SLICES: dict[str, Callable[[str | Path], list[str]]] = {
    "dev": _development_ids,
    "dev_crops": _development_ids,
    "sealed_test": _sealed_test_ids,
}


def build_feature_slice(
    partition: str,
    dataset: str,
    backbone_features: str | Path,
    splits: str | Path,
    images: str | Path,
    taxonomy: str | Path,
    out_table: str | Path,
    job: JobContext,
) -> pd.DataFrame:
    """The features of one partition (``SLICES``) cut from a backbone pass, each row joined to
    its image's leaf, middle and high codes."""
    if partition not in SLICES:
        raise ValueError(f"no feature partition {partition!r}; partitions: {sorted(SLICES)}")
    image_ids = SLICES[partition](splits)
    frame, matrix = read_feature_matrix(backbone_features)
    rows = rows_for_ids(frame["image_id"], image_ids, f"{backbone_features} ({partition})")
    labelled = with_labels(pd.read_parquet(images), pd.read_parquet(taxonomy))
    chosen = labelled.set_index("image_id").loc[image_ids].reset_index()
    table = feature_table(chosen, matrix[rows])
    made_by = read_parquet_metadata(backbone_features)
    metadata = {**made_by, "dataset": dataset, "partition": partition}
    metadata.pop("pass", None)
    write_feature_parquet(table, out_table, job, metadata)
    log.info("%s %s features: %d images x %d", dataset, partition, len(rows), matrix.shape[1])
    return table
