"""Feature stage: frozen-backbone features, once per image, dev and sealed test apart.

The development artifact holds every image of the development splits; the sealed artifact
holds exactly the sealed test images (``final/test``), so no training rule can take it in.
"""

from __future__ import annotations

import logging
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


def build_dev_features(
    dataset: str,
    dev_splits: str | Path,
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
    """Features of every image in the development splits (never a sealed test image)."""
    ids = _development_ids(dev_splits)
    return _build(
        dataset,
        ids,
        images,
        taxonomy,
        root,
        backbone,
        out_table,
        job,
        "dev",
        images_dir=images_dir,
        device=device,
    )


def build_dev_crop_features(
    dataset: str,
    dev_splits: str | Path,
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
    """Features of every development image's bird crop (its box), for the entailment pairs of
    the companion method: cached apart from the whole-image features."""
    cropped = {**backbone, "crop_to_bbox": True}
    ids = _development_ids(dev_splits)
    return _build(
        dataset,
        ids,
        images,
        taxonomy,
        root,
        cropped,
        out_table,
        job,
        "dev_crops",
        images_dir=images_dir,
        device=device,
    )


def build_sealed_test_features(
    dataset: str,
    sealed_splits: str | Path,
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
    """Features of exactly the sealed test images (``final/test``), in an artifact of their own."""
    ids = role_ids(pd.read_parquet(sealed_splits), "final", "test")
    return _build(
        dataset,
        ids,
        images,
        taxonomy,
        root,
        backbone,
        out_table,
        job,
        "sealed_test",
        images_dir=images_dir,
        device=device,
    )
