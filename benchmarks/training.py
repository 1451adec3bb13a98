"""Speed check of the trainer at paper size (5,994 x 768 features, batch 128) on the CPU.

Measured in the same run: (1) updates per second of one cell (each geometry x loss), and
(2) the rate of the pure matrix multiplies of one update (the head's two forward GEMMs and
three backward GEMMs on the same shapes; the features need no gradient). Goal: the cell
reaches at least one third of the pure rate. ``--full`` also trains the whole CUB factorial
(12 cells x 100 epochs) and reports its wall time (goal: under 10 minutes on 2 cores);
without it, the wall time is extrapolated from the measured rates and labelled as such.

Run: ``.venv/bin/python benchmarks/training.py [--epochs 3] [--full]``; exits 1 below a goal.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch

from hierbench.training import CellSpec, train_cell

N, DIM, BATCH, HIDDEN, OUT = 5994, 768, 128, 256, 32
SEEDS = (42, 2024, 3407)


def cub_like_data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random 768-D features with a CUB-sized tree: 200 leaves, 124 middles, 37 highs."""
    rng = np.random.default_rng(seed)
    leaf = rng.integers(0, 200, N)
    middle = (leaf * 124) // 200
    high = (middle * 37) // 124
    return rng.normal(size=(N, DIM)).astype(np.float32), np.stack([leaf, middle, high], axis=1)


def spec(geometry: str, loss: str, seed: int, epochs: int) -> CellSpec:
    """The paper's hyperparameters for one cell."""
    return CellSpec(
        dataset="benchmark",
        geometry=geometry,
        loss=loss,
        seed=seed,
        epochs=epochs,
        batch_size=BATCH,
        lr=5e-5,
        weight_decay=1e-4,
        grad_clip=1.0,
        hidden_dim=HIDDEN,
        embedding_dim=OUT,
        dropout=0.1,
        curvature=2.0 if geometry == "H" else None,
        radius=0.4 if geometry == "H" else None,
        tau=0.2 if loss == "S" else None,
    )


def cell_rate(
    features: np.ndarray, labels: np.ndarray, geometry: str, loss: str, epochs: int
) -> float:
    """Updates per second of one cell trained for ``epochs`` epochs, after a warm-up epoch.

    The warm-up absorbs one-off costs (``torch.use_deterministic_algorithms`` imports
    ``torch._inductor``, about 1.6 s once per process); ``--full`` measures them as they come.
    """
    train_cell(features, labels, spec(geometry, loss, 42, 1))
    start = time.perf_counter()
    result = train_cell(features, labels, spec(geometry, loss, 42, epochs))
    return result.updates / (time.perf_counter() - start)


def matmul_rate(repeats: int = 300) -> float:
    """Updates per second if an update were only its five GEMMs (forward and backward).

    The features need no gradient, so the first layer's backward is its weight gradient only.
    """
    x = torch.randn(BATCH, DIM)
    w1, w2 = torch.randn(DIM, HIDDEN), torch.randn(HIDDEN, OUT)
    h, g2 = torch.randn(BATCH, HIDDEN), torch.randn(BATCH, OUT)
    for _ in range(20):
        x @ w1
    start = time.perf_counter()
    for _ in range(repeats):
        x @ w1, h @ w2  # forward
        g2 @ w2.T, h.T @ g2  # backward through the second layer: input and weight gradients
        x.T @ h  # backward through the first layer: weight gradient (D x HIDDEN)
    return repeats / (time.perf_counter() - start)


def main() -> int:
    """Measure, print and check against the goals."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--full", action="store_true", help="train the whole CUB factorial")
    args = parser.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    features, labels = cub_like_data()
    pure = matmul_rate()
    rates = {g + o: cell_rate(features, labels, g, o, args.epochs) for g in "EH" for o in "RS"}
    print(f"pure GEMM rate: {pure:.0f} updates/s (threads {torch.get_num_threads()})")
    for cell, rate in rates.items():
        print(f"cell {cell}: {rate:.1f} updates/s = {rate / pure:.2f} of the pure rate")
    updates = 100 * (N // BATCH) * len(SEEDS)
    estimate = sum(updates / rate for rate in rates.values())
    print(f"CUB factorial, 12 cells x 100 epochs: {estimate / 60:.1f} min (extrapolated)")
    failed = min(rates.values()) < pure / 3
    if args.full:
        start = time.perf_counter()
        for geometry in "EH":
            for loss in "RS":
                for seed in SEEDS:
                    train_cell(features, labels, spec(geometry, loss, seed, 100))
        wall = time.perf_counter() - start
        print(f"CUB factorial, 12 cells x 100 epochs: {wall / 60:.1f} min (measured)")
        failed |= wall > 600
    print("goal met" if not failed else "goal NOT met")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
