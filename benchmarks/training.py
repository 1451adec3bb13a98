"""Speed check of the trainer at paper size (5,994 x 768 features, batch 128) on the CPU.

Measured in the same run, paired and repeated (medians reported): (1) updates per second of
one cell (each geometry x loss); (2) the rate of the pure matrix multiplies of one update (the
head's two forward GEMMs and three backward GEMMs on the same shapes; the features need no
gradient). Goal: each cell reaches at least one third of the pure rate. (3) For reference, the
bare head's update (no distances, no objective) shows the ceiling of eager PyTorch here.
(4) The companion cells E_A and L_A beside E_S and H_S, with every pair source (the configs'
default) and with the method's own box pairs alone: goal at most 2x their time per update
(reported, not part of the exit status). ``--full`` also trains the whole CUB factorial (12
cells x 100 epochs) and reports its wall time (goal: under 10 minutes on 2 cores); without it,
the wall time is extrapolated from the measured rates and labelled as such. For ``make bench``,
:func:`rows` sets each factorial cell against the bare head measured in the same run (goal:
at least 0.7 of its rate) and records the companion cells' ratios with their goal.

Run: ``.venv/bin/python benchmarks/training.py [--repeats 5] [--full]``; exits 1 below a goal.
"""

from __future__ import annotations

import argparse
import sys
import time
from statistics import median

import numpy as np
import torch
from benchrows import Row, row

from hierbench.cells.spec import CellSpec
from hierbench.devices import use_deterministic_torch
from hierbench.geometry import Projector
from hierbench.losses.entailment_objective import companion_objective
from hierbench.training.trainer import train_cell

N, DIM, BATCH, HIDDEN, OUT = 5994, 768, 128, 256, 32
SEEDS = (42, 2024, 3407)
CELL_GOAL = 0.7  # each factorial cell's rate against the bare head's, paired per repeat
COMPANION_GOAL = 2.0  # an A cell's time per update against its S cell's


def cub_like_data(seed: int = 0, rows: int = N) -> tuple[np.ndarray, np.ndarray]:
    """Random 768-D features with a CUB-sized tree: 200 leaves, 124 middles, 37 highs."""
    rng = np.random.default_rng(seed)
    leaf = rng.integers(0, 200, rows)
    middle = (leaf * 124) // 200
    high = (middle * 37) // 124
    return rng.normal(size=(rows, DIM)).astype(np.float32), np.stack([leaf, middle, high], axis=1)


def spec(geometry: str, loss: str, seed: int, epochs: int) -> CellSpec:
    """The paper's hyperparameters for one cell (E_A's head unnormalised, as in the pipeline)."""
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
        curvature=2.0 if geometry in ("H", "L") else None,
        radius=0.4 if geometry == "H" else None,
        tau=0.2 if loss == "S" else None,
        normalise=not (geometry == "E" and loss == "A"),
    )


# The companion cells' pair sources: every source (the demo and paper configs' default), and the
# method's own pairs alone (image -> its bird crop).
ALL_PAIRS = {"boxes": True, "cross_image": 2, "taxonomy": True}
BOX_PAIRS = {"boxes": True, "cross_image": 0, "taxonomy": False}
# Every timed cell: its geometry, loss and (A cells) pair sources.
CELLS: dict[str, tuple[str, str, dict | None]] = {
    **{g + o: (g, o, None) for g in "EH" for o in "RS"},
    "EA": ("E", "A", ALL_PAIRS),
    "LA": ("L", "A", ALL_PAIRS),
    "EA boxes": ("E", "A", BOX_PAIRS),
    "LA boxes": ("L", "A", BOX_PAIRS),
}
COMPANION_PAIRS = (("EA", "ES"), ("LA", "HS"), ("EA boxes", "ES"), ("LA boxes", "HS"))


def cell_rate(features: np.ndarray, labels: np.ndarray, cell: str, epochs: int) -> float:
    """Updates per second of one cell trained for ``epochs`` epochs (setup included); an A cell
    trains on crop features (here: the features plus noise) and its pair sources."""
    geometry, loss, pairs = CELLS[cell]
    start = time.perf_counter()
    settings = spec(geometry, loss, 42, epochs)
    objective = None
    if pairs is not None:
        crops = features + np.random.default_rng(1).normal(0, 0.1, features.shape).astype(
            np.float32
        )
        config = {"companion": {"temperature": 0.07, "init_seed": 20251019, "pairs": pairs}}
        objective = companion_objective(settings, config, labels, crops)
    result = train_cell(features, labels, settings, objective=objective)
    return result.updates / (time.perf_counter() - start)


def head_only_rate(features: np.ndarray, updates: int = 300) -> float:
    """Updates per second of the bare head: no distances, no objective (the loss is a sum).

    Same gathering, projector forward and backward, gradient clip and fused AdamW step as a
    cell, so it is the ceiling any objective can reach in eager PyTorch on this machine.
    """
    use_deterministic_torch()
    torch.manual_seed(0)
    x = torch.as_tensor(features)
    head = Projector(DIM, HIDDEN, OUT, 0.1).train()
    optimizer = torch.optim.AdamW(head.parameters(), lr=5e-5, weight_decay=1e-4, fused=True)
    order = torch.randint(0, len(x), (updates, BATCH), generator=torch.Generator().manual_seed(0))
    start = time.perf_counter()
    for batch in order:
        output = head(x.index_select(0, batch))
        optimizer.zero_grad(set_to_none=True)
        output.sum().backward()
        torch.nn.utils.clip_grad_norm_(head.parameters(), 1.0, foreach=True)
        optimizer.step()
    return updates / (time.perf_counter() - start)


def paired_ratios(
    features: np.ndarray, labels: np.ndarray, epochs: int, repeats: int, head_updates: int = 300
) -> tuple[list[float], dict[str, list[float]], dict[str, list[float]]]:
    """Per repeat: the pure GEMM rate, then every cell's rate and its ratio to that pure rate.

    Pairing each cell with a pure-rate measurement taken moments before, and reporting
    medians, keeps the ratio meaningful on a machine whose speed drifts (shared hosts).
    A one-epoch warm-up per cell first absorbs one-off costs (``torch.use_deterministic_
    algorithms`` imports ``torch._inductor``, about 1.6 s once per process).
    """
    cells = ["head only", *CELLS]
    for cell in cells[1:]:
        cell_rate(features, labels, cell, 1)
    pures, rates = [], {cell: [] for cell in cells}
    ratios: dict[str, list[float]] = {cell: [] for cell in cells}
    for _ in range(repeats):
        pure = matmul_rate()
        pures.append(pure)
        rates["head only"].append(head_only_rate(features, head_updates))
        ratios["head only"].append(rates["head only"][-1] / pure)
        for cell in cells[1:]:
            rates[cell].append(cell_rate(features, labels, cell, epochs))
            ratios[cell].append(rates[cell][-1] / pure)
    return pures, rates, ratios


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


def rows(epochs: int = 2, repeats: int = 5, samples: int = N, head_updates: int = 300) -> list[Row]:
    """Each factorial cell against the bare head, the head against the pure GEMMs, and the
    companion cells' time per update against E_S / H_S; ratios are medians of paired ones.

    ``samples`` below CUB's 5,994 shortens every epoch (quick runs; same batch and shapes).
    """
    features, labels = cub_like_data(rows=samples)
    pures, rates, _ = paired_ratios(features, labels, epochs, repeats, head_updates)
    head = rates["head only"]
    threads = torch.get_num_threads()
    size = f"{samples} x {DIM} features, batch {BATCH}, {threads} thread(s), median of {repeats}"
    result = [
        row(
            "training",
            "bare head updates/s vs the pure GEMMs of an update",
            median(head),
            median(pures),
            "updates/s",
            None,
            ratio=median(h / p for h, p in zip(head, pures, strict=True)),
            note=f"context, no goal: the ceiling of eager PyTorch here; {size}",
        )
    ]
    for cell in ("ER", "ES", "HR", "HS"):
        result.append(
            row(
                "training",
                f"{cell[0]}_{cell[1]} updates/s vs the bare head",
                median(rates[cell]),
                median(head),
                "updates/s",
                f">= {CELL_GOAL}",
                ratio=median(c / h for c, h in zip(rates[cell], head, strict=True)),
                note=f"{epochs} epoch(s) per run, setup included; {size} paired ratios",
            )
        )
    for companion, reference in COMPANION_PAIRS:
        geometry, _, pairs = CELLS[companion]
        sources = "box pairs only" if pairs == BOX_PAIRS else "every pair source"
        result.append(
            row(
                "training",
                f"{geometry}_A ({sources}) time per update vs {reference[0]}_{reference[1]}",
                1000 / median(rates[companion]),
                1000 / median(rates[reference]),
                "ms/update",
                f"<= {COMPANION_GOAL:g}",
                ratio=median(
                    s / a for a, s in zip(rates[companion], rates[reference], strict=True)
                ),
                note=f"{epochs} epoch(s) per run; {size} paired ratios",
            )
        )
    return result


def main() -> int:
    """Measure, print and check against the goals."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2, help="epochs per timed cell run")
    parser.add_argument("--repeats", type=int, default=5, help="paired measurements per cell")
    parser.add_argument("--full", action="store_true", help="train the whole CUB factorial")
    args = parser.parse_args()
    features, labels = cub_like_data()
    pures, rates, ratios = paired_ratios(features, labels, args.epochs, args.repeats)
    threads = torch.get_num_threads()
    print(f"pure GEMM rate: median {median(pures):.0f} updates/s (threads {threads})")
    for cell in rates:
        print(
            f"{cell}: median {median(rates[cell]):.1f} updates/s, median ratio "
            f"{median(ratios[cell]):.3f} of the pure rate "
            f"(range {min(ratios[cell]):.3f}-{max(ratios[cell]):.3f})"
        )
    for companion, reference in COMPANION_PAIRS:
        slowdown = median(s / a for a, s in zip(rates[companion], rates[reference], strict=True))
        verdict = "met" if slowdown <= 2 else "NOT met"
        print(
            f"{companion} vs {reference}: median {slowdown:.2f}x the time per update "
            f"(goal <= 2x: {verdict})"
        )
    updates = 100 * (N // BATCH) * len(SEEDS)
    factorial = [cell for cell in rates if CELLS.get(cell, ("", "A"))[1] in ("R", "S")]
    estimate = sum(updates / median(rates[cell]) for cell in factorial)
    print(f"CUB factorial, 12 cells x 100 epochs: {estimate / 60:.1f} min (extrapolated)")
    failed = min(median(ratios[cell]) for cell in factorial) < 1 / 3
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
