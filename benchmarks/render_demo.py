"""Speed check of the demo renderer: 7,000 NABirds-layout images at 128 px must take < 120 s.

Run: ``.venv/bin/python benchmarks/render_demo.py [--workers N]``. It renders 500 leaf classes
x 14 images into a temporary folder (deleted afterwards), prints images per second and the
total seconds, and exits 1 when the total is over the limit.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from hierbench.demo import write_nabirds_demo
from hierbench.taxonomy import nabirds_taxonomy

RESOURCES = Path(__file__).resolve().parents[1] / "resources"
CLASSES, PER_CLASS, LIMIT_S = 500, 14, 120.0


def main() -> int:
    """Render the benchmark set once and report the throughput."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--size", type=int, default=128)
    args = parser.parse_args()
    classes_file = RESOURCES / "nabirds_classes.txt"
    hierarchy_file = RESOURCES / "nabirds_hierarchy.txt"
    taxonomy = nabirds_taxonomy(classes_file, hierarchy_file)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        write_nabirds_demo(
            Path(tmp) / "nabirds",
            taxonomy,
            images_per_class=PER_CLASS,
            image_size=args.size,
            classes=CLASSES,
            classes_file=classes_file,
            hierarchy_file=hierarchy_file,
            workers=args.workers,
        )
        seconds = time.perf_counter() - start
    images = CLASSES * PER_CLASS
    print(
        f"rendered {images} images of {args.size} px with {args.workers} worker(s): "
        f"{seconds:.1f} s, {images / seconds:.0f} images/s (limit {LIMIT_S:.0f} s)"
    )
    return 0 if seconds <= LIMIT_S else 1


if __name__ == "__main__":
    sys.exit(main())
