"""Speed check of the demo renderer: 7,000 NABirds-layout images at 128 px must take < 120 s.

Run: ``.venv/bin/python benchmarks/render_demo.py [--workers N] [--classes 500]``. It renders
``--classes`` leaf classes x 14 images (default 500: 7,000 images) into a temporary folder
(deleted afterwards), prints images per second and the total seconds, and exits 1 when the
rate is below the goal's (7,000 images in 120 s; with fewer classes the rate still compares).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from benchrows import Row, row

from hierbench.demo import write_nabirds_demo
from hierbench.taxonomy import nabirds_taxonomy

RESOURCES = Path(__file__).resolve().parents[1] / "resources"
CLASSES, PER_CLASS, LIMIT_S = 500, 14, 120.0
GOAL_RATE = CLASSES * PER_CLASS / LIMIT_S  # images/s


def render_seconds(classes: int, size: int, workers: int) -> float:
    """Seconds to render ``classes`` NABirds leaves x 14 images into a temporary folder."""
    classes_file = RESOURCES / "nabirds_classes.txt"
    hierarchy_file = RESOURCES / "nabirds_hierarchy.txt"
    taxonomy = nabirds_taxonomy(classes_file, hierarchy_file)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        write_nabirds_demo(
            Path(tmp) / "nabirds",
            taxonomy,
            images_per_class=PER_CLASS,
            image_size=size,
            classes=classes,
            classes_file=classes_file,
            hierarchy_file=hierarchy_file,
            workers=workers,
        )
        return time.perf_counter() - start


def rows(classes: int = CLASSES, size: int = 128, workers: int | None = None) -> list[Row]:
    """The renderer's rate against the goal's rate (7,000 images in 120 s)."""
    workers = workers or os.cpu_count() or 1
    images = classes * PER_CLASS
    seconds = render_seconds(classes, size, workers)
    return [
        row(
            "render",
            "demo renderer images/s vs the goal rate (7,000 images in 120 s)",
            images / seconds,
            GOAL_RATE,
            "images/s",
            ">= 1",
            note=f"{images} images of {size} px, {workers} worker(s), {seconds:.1f} s; "
            "the reference is the goal's rate, a constant",
        )
    ]


def main() -> int:
    """Render the benchmark set once and report the throughput."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--classes", type=int, default=CLASSES)
    args = parser.parse_args()
    seconds = render_seconds(args.classes, args.size, args.workers)
    images = args.classes * PER_CLASS
    print(
        f"rendered {images} images of {args.size} px with {args.workers} worker(s): "
        f"{seconds:.1f} s, {images / seconds:.0f} images/s (goal {GOAL_RATE:.0f} images/s: "
        f"{CLASSES * PER_CLASS} in {LIMIT_S:.0f} s)"
    )
    return 0 if images / seconds >= GOAL_RATE else 1


if __name__ == "__main__":
    sys.exit(main())
