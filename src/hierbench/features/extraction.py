"""Batched, deterministic feature extraction through a frozen backbone: timm's evaluation
transform, an image dataset that names a broken image, and the extraction loop.

Backbones and their weights live in :mod:`hierbench.features.backbones`; feature tables and their
parquet form in :mod:`hierbench.features.store` (no torch or timm import).
"""

from __future__ import annotations

import logging
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import timm
import timm.data
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm

from hierbench import jobcost
from hierbench.devices import use_deterministic_torch
from hierbench.features.backbones import architecture_name, weights_sha256
from hierbench.features.store import FeatureError

logger = logging.getLogger(__name__)

IMAGES_DIR = "images"
BBOX_COLUMNS = ("bbox_x", "bbox_y", "bbox_w", "bbox_h")

# ---------------------------------------------------------------------------------------------
# Preprocessing and the image dataset
# ---------------------------------------------------------------------------------------------


def make_transform(
    model: torch.nn.Module, *, image_size: int, crop_pct: float | None = None
) -> Callable[[Image.Image], torch.Tensor]:
    """timm's evaluation transform for ``model`` at ``image_size`` (same for every image).

    Resize, centre crop (``crop_pct`` of the resized image; timm's value unless given),
    tensor conversion and the normalisation the weights were trained with.
    """
    config = timm.data.resolve_data_config({}, model=model)
    config["input_size"] = (3, image_size, image_size)
    if crop_pct is not None:
        config["crop_pct"] = crop_pct
    return timm.data.create_transform(**config, is_training=False)


def crop_to_box(image: Image.Image, box: tuple[float, float, float, float]) -> Image.Image:
    """The part of ``image`` inside ``(x, y, w, h)``, widened to whole pixels, clipped to it."""
    x, y, w, h = box
    if not all(math.isfinite(v) for v in box) or w <= 0 or h <= 0:
        raise ValueError(f"bounding box {box} is not a finite box with positive size")
    left, top = max(0, math.floor(x)), max(0, math.floor(y))
    right, bottom = min(image.width, math.ceil(x + w)), min(image.height, math.ceil(y + h))
    if right <= left or bottom <= top:
        raise ValueError(f"bounding box {box} lies outside the {image.width}x{image.height} image")
    return image.crop((left, top, right, bottom))


@dataclass(frozen=True)
class LoadFailure:
    """An image that could not be loaded, carried back from a worker as plain data."""

    message: str


class ImageDataset(Dataset):
    """Preprocessed images of an image table, in its row order (``<root>/images/<path>``).

    With ``capture_errors`` an unreadable image yields a :class:`LoadFailure` instead of
    raising, so the caller can raise a clean :class:`FeatureError` from any worker process.
    """

    def __init__(
        self,
        images: pd.DataFrame,
        root: str | os.PathLike[str],
        transform: Callable[[Image.Image], torch.Tensor],
        *,
        crop_to_bbox: bool = False,
        capture_errors: bool = False,
        images_dir: str = IMAGES_DIR,
    ) -> None:
        """Keep plain lists only, so worker processes receive a small, picklable object.

        Paths are relative to ``root / images_dir`` (``images/`` in the bird layouts; the
        folder itself, ``""``, for a table dataset)."""
        self.image_ids = images["image_id"].astype(str).tolist()
        folder = Path(root) / images_dir
        self.paths = [str(folder / p) for p in images["path"].astype(str)]
        self.boxes = images[list(BBOX_COLUMNS)].to_numpy(float).tolist() if crop_to_bbox else None
        self.transform = transform
        self.capture_errors = capture_errors

    def __len__(self) -> int:
        """Number of images."""
        return len(self.paths)

    def __getitem__(self, index: int) -> torch.Tensor | LoadFailure:
        """The preprocessed image at ``index`` (or its failure, when capturing errors); its CPU
        is loading, in a worker process or in this one."""
        try:
            with jobcost.charged(jobcost.LOADING):
                return self.load(index)
        except FeatureError as error:
            if self.capture_errors:
                return LoadFailure(str(error))
            raise

    def load(self, index: int) -> torch.Tensor:
        """Open, convert to RGB, optionally crop, and transform one image; errors name it."""
        image_id, path = self.image_ids[index], self.paths[index]
        try:
            with Image.open(path) as opened:
                image = opened.convert("RGB")
            if self.boxes is not None:
                image = crop_to_box(image, tuple(self.boxes[index]))
            return self.transform(image)
        except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as error:
            raise FeatureError(
                f"cannot read image {image_id!r} at {path}: {type(error).__name__}: {error}"
            ) from error


def collate_images(
    items: list[torch.Tensor | LoadFailure],
) -> torch.Tensor | list[LoadFailure]:
    """Stack a batch of images; a batch holding failed images becomes the list of them."""
    failures = [item for item in items if isinstance(item, LoadFailure)]
    return failures if failures else torch.stack(items)


LISTED_FAILURES = 20  # unreadable images a failed pass names before "and N more"


def failure_report(failures: list[LoadFailure], total: int) -> str:
    """One error for every image of a pass that cannot be read: the first 20, and a count."""
    lines = [failure.message for failure in failures[:LISTED_FAILURES]]
    if len(failures) > LISTED_FAILURES:
        lines.append(f"... and {len(failures) - LISTED_FAILURES} more")
    return (
        f"{len(failures)} of {total} images cannot be read; replace or remove them (hierbench "
        "check-dataset --deep lists them without running) and rerun:\n  " + "\n  ".join(lines)
    )


# ---------------------------------------------------------------------------------------------
# Inference
# ---------------------------------------------------------------------------------------------


def _device(device: str | torch.device | None) -> torch.device:
    """The requested device, or CUDA when available and the CPU otherwise."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def _check_image_table(images: pd.DataFrame, crop_to_bbox: bool) -> None:
    """The image table needs ids and paths (and boxes when cropping), and at least one row."""
    needed = ["image_id", "path", *(BBOX_COLUMNS if crop_to_bbox else ())]
    missing = [column for column in needed if column not in images.columns]
    if missing:
        raise FeatureError(f"image table lacks column(s) {missing} needed for extraction")
    if images.empty:
        raise FeatureError("image table is empty; there is nothing to extract")
    if crop_to_bbox and images[list(BBOX_COLUMNS)].isna().any(axis=None):
        first = images.loc[images[list(BBOX_COLUMNS)].isna().any(axis=1), "image_id"].iloc[0]
        raise FeatureError(
            f"image {first!r} has no box to crop to (its dataset lists no x, y, w, h); add "
            "boxes to images.csv or switch off companion.pairs.boxes and cross_image"
        )


def _forward(model: torch.nn.Module, batch: torch.Tensor, device: torch.device) -> np.ndarray:
    """Pooled float32 features of one batch (float16 autocast on CUDA, float32 on the CPU)."""
    batch = batch.to(device, memory_format=torch.channels_last, non_blocking=True)
    if device.type == "cuda":
        with torch.autocast("cuda", dtype=torch.float16):
            output = model(batch)
    else:
        output = model(batch)
    if output.ndim != 2:
        raise FeatureError(f"backbone returned shape {tuple(output.shape)}, not (batch, dim)")
    return output.float().cpu().numpy()


def extract_features(
    model: torch.nn.Module,
    images: pd.DataFrame,
    root: str | os.PathLike[str],
    *,
    image_size: int,
    batch_size: int = 64,
    num_workers: int = 2,
    crop_to_bbox: bool = False,
    device: str | torch.device | None = None,
    images_dir: str = IMAGES_DIR,
) -> np.ndarray:
    """Features of every image of ``images`` (float32, shape (n, dim), rows in table order).

    Images are decoded in ``num_workers`` processes (0: in this one) and run through the
    model in batches; on the CPU two runs on the same thread count give bitwise-identical
    features (kernels round by thread count), on CUDA (float16
    autocast, deterministic kernels) two runs on the same GPU and software do. The model is moved
    to the device in channels-last memory format (faster convolutions on CPU and GPU); its
    values are unchanged. Progress goes to stderr; the throughput is logged.
    """
    _check_image_table(images, crop_to_bbox)
    target = _device(device)
    if target.type == "cuda":
        use_deterministic_torch(target)
    transform = make_transform(model, image_size=image_size)
    dataset = ImageDataset(
        images,
        root,
        transform,
        crop_to_bbox=crop_to_bbox,
        capture_errors=True,
        images_dir=images_dir,
    )
    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=False,
        num_workers=num_workers,
        collate_fn=collate_images,
        pin_memory=target.type == "cuda",
    )
    model = model.to(target, memory_format=torch.channels_last).eval()  # faster convolutions
    parts: list[np.ndarray] = []
    failures: list[LoadFailure] = []
    start = time.perf_counter()
    with (
        jobcost.charged(jobcost.LOADING, own=False),  # the decoding workers' CPU
        torch.inference_mode(),
        tqdm(
            total=len(dataset), file=sys.stderr, unit="img", desc="features", mininterval=5
        ) as bar,
    ):
        for batch in loader:  # past a failure, only read on: every unreadable image is named
            if isinstance(batch, list):
                failures += batch
            elif not failures:
                parts.append(_forward(model, batch, target))
            bar.update(len(batch))
    if failures:
        raise FeatureError(failure_report(failures, len(dataset)))
    seconds = time.perf_counter() - start
    features = np.concatenate(parts)
    logger.info(
        "extracted %d x %d features on %s in %.1f s (%.1f images/s)",
        *features.shape,
        target,
        seconds,
        len(features) / max(seconds, 1e-9),
    )
    return features


def feature_metadata(name: str, weights: str, image_size: int, dim: int) -> dict[str, Any]:
    """What made the features: backbone, architecture, weights and their SHA256, size, dim."""
    return {
        "backbone": name,
        "architecture": architecture_name(name, weights),
        "weights": weights,
        "weights_sha256": weights_sha256(weights),
        "image_size": image_size,
        "feature_dim": dim,
    }
