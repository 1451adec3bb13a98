"""Cell bundles against cells trained one by one (paper sizes, the CPU).

Measured in the same run, paired and repeated (medians reported): the cell-updates per second
of a bundle of the CUB factorial's 12 cells (4 cells x 3 seeds, 2,048 x 768 features, batch
128) trained by ``hierbench.training.bundle.train_bundle``, against the same 12 cells trained
one by one by ``train_cell``; and against the pure-GEMM rate of a cell's update
(``training.matmul_rate``). Goals (issue #36): at least 3x the one-by-one rate, at least 0.5 of
the pure-GEMM rate.

Run: ``.venv/bin/python benchmarks/bundle.py [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import time
from statistics import median

import numpy as np
import torch
from benchrows import Row, row
from training import SEEDS, cub_like_data, matmul_rate, spec

from hierbench.training.bundle import train_bundle
from hierbench.training.trainer import train_cell

ROWS = 2048
SPEED_GOAL = 3.0  # bundle cell-updates/s against the cells one by one
GEMM_GOAL = 0.5  # bundle cell-updates/s against the pure GEMMs of a cell's update


def factorial_specs(epochs: int) -> list:
    """The factorial's 12 cells: E/H x R/S for each of the three seeds."""
    return [spec(g, loss, seed, epochs) for seed in SEEDS for g in "EH" for loss in "RS"]


def rates(features: np.ndarray, labels: np.ndarray, epochs: int) -> tuple[float, float]:
    """Cell-updates per second of the bundle, then of the same cells one by one (setup in)."""
    specs = factorial_specs(epochs)
    start = time.perf_counter()
    results = train_bundle(features, labels, specs)
    bundle = sum(r.updates for r in results) / (time.perf_counter() - start)
    start = time.perf_counter()
    updates = sum(train_cell(features, labels, s).updates for s in specs)
    return bundle, updates / (time.perf_counter() - start)


def rows(epochs: int = 2, repeats: int = 3, samples: int = ROWS) -> list[Row]:
    """The bundle's rate against the one-by-one rate and the pure-GEMM rate (paired medians)."""
    features, labels = cub_like_data(rows=samples)
    train_bundle(features, labels, factorial_specs(1)[:2])  # one-off costs out of the timing
    bundles, singles, pures = [], [], []
    for _ in range(repeats):
        pures.append(matmul_rate())
        bundle, single = rates(features, labels, epochs)
        bundles.append(bundle)
        singles.append(single)
    size = (
        f"{samples} x 768 features, batch 128, {torch.get_num_threads()} thread(s), "
        f"{epochs} epoch(s), median of {repeats}"
    )
    return [
        row(
            "bundle",
            "12-cell bundle cell-updates/s vs the same cells one by one",
            median(bundles),
            median(singles),
            "cell-updates/s",
            f">= {SPEED_GOAL:g}",
            ratio=median(b / s for b, s in zip(bundles, singles, strict=True)),
            note=f"CUB factorial (E/H x R/S x 3 seeds); {size}",
        ),
        row(
            "bundle",
            "12-cell bundle cell-updates/s vs the pure GEMMs of an update",
            median(bundles),
            median(pures),
            "cell-updates/s",
            f">= {GEMM_GOAL:g}",
            ratio=median(b / p for b, p in zip(bundles, pures, strict=True)),
            note=size,
        ),
    ]


def main() -> int:
    """Measure and print; exit 1 below a goal."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    measured = rows(args.epochs, args.repeats)
    for item in measured:
        print(
            f"{item['figure']}: {item['value']:.1f} vs {item['reference']:.1f}, ratio "
            f"{item['ratio']:.2f} (goal {item['goal']}: {'met' if item['met'] else 'NOT met'})"
        )
    return 0 if all(item["met"] for item in measured) else 1


if __name__ == "__main__":
    raise SystemExit(main())
