"""Feature stage: frozen-backbone features, once per image, dev and sealed test apart.

The development artifact holds every image of the development splits; the sealed artifact
holds exactly the sealed test images (``final/test``), so no training rule can take it in.
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
from hierbench.features.store import feature_table, write_feature_parquet
from hierbench.provenance.records import JobContext
from hierbench.splits.construction import role_ids, with_labels

log = logging.getLogger(__name__)


def _build(
    dataset: str,
    image_ids: list[str],
    images: str | Path,
    taxonomy: str | Path,
    root: str | Path,
    backbone: dict[str, Any],
    out_table: str | Path,
    job: JobContext,
    partition: str,
    *,
    images_dir: str,
    device: str,
) -> pd.DataFrame:
    """Extract and write the features of ``image_ids`` (one partition of a dataset)."""
    labelled = with_labels(pd.read_parquet(images), pd.read_parquet(taxonomy))
    chosen = labelled.set_index("image_id").loc[image_ids].reset_index()
    model = create_backbone(
        backbone["name"], backbone["weights"], image_size=backbone["image_size"]
    )
    matrix = extract_features(
        model,
        chosen,
        root,
        image_size=backbone["image_size"],
        batch_size=backbone["batch_size"],
        num_workers=backbone["num_workers"],
        crop_to_bbox=backbone["crop_to_bbox"],
        images_dir=images_dir,
        device=resolve_device(device),
    )
    table = feature_table(chosen, matrix)
    metadata = {
        "dataset": dataset,
        "partition": partition,
        **feature_metadata(
            backbone["name"], backbone["weights"], backbone["image_size"], matrix.shape[1]
        ),
    }
    write_feature_parquet(table, out_table, job, metadata)
    log.info("%s %s features: %d images x %d", dataset, partition, *matrix.shape)
    return table


def _development_ids(dev_splits: str | Path) -> list[str]:
    """Every image id of the development splits, sorted."""
    return sorted(pd.read_parquet(dev_splits)["image_id"].astype(str).unique())


def _sealed_test_ids(sealed_splits: str | Path) -> list[str]:
    """Exactly the sealed test images (``final/test``)."""
    return role_ids(pd.read_parquet(sealed_splits), "final", "test")


# Each feature partition: which images it holds (from its split table) and whether it crops
# them to the bird's box. Development images, their crops (the companion method's entailment
# pairs, cached apart) and the sealed test images (an artifact of their own).
PARTITIONS: dict[str, tuple[Callable[[str | Path], list[str]], bool]] = {
    "dev": (_development_ids, False),
    "dev_crops": (_development_ids, True),
    "sealed_test": (_sealed_test_ids, False),
}


def build_features(
    partition: str,
    dataset: str,
    splits: str | Path,
    images: str | Path,
    taxonomy: str | Path,
    root: str | Path,
    backbone: dict[str, Any],
    out_table: str | Path,
    job: JobContext,
    *,
    images_dir: str = IMAGES_DIR,
    device: str = "cpu",
) -> pd.DataFrame:
    """Features of one partition of a dataset (``PARTITIONS``): the development images never
    include a sealed test image, and the sealed test images go into an artifact of their own."""
    if partition not in PARTITIONS:
        raise ValueError(f"no feature partition {partition!r}; partitions: {sorted(PARTITIONS)}")
    select, crop = PARTITIONS[partition]
    if crop:
        backbone = {**backbone, "crop_to_bbox": True}
    return _build(
        dataset,
        select(splits),
        images,
        taxonomy,
        root,
        backbone,
        out_table,
        job,
        partition,
        images_dir=images_dir,
        device=device,
    )
