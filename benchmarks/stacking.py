"""What stacking could save for the cells that train alone: the HIER-style cells and the
companion cells (E_A, L_A with every pair source).

A bundle saves a cell's per-update fixed cost (operator dispatch, autograd bookkeeping, Python),
shared by the K cells of a stack, not its arithmetic, which K cells still do K times. For each of
these cells the same update code runs at full size and at a minimal size (a few rows, a few
dimensions), where the arithmetic is next to nothing and the time left is that fixed cost; its
share of the full update is the most a bundle of any size could remove. The HIER-style rows time
the objective's forward and backward (the head left out, as ``benchmarks/hier.py``); the
companion rows time whole cells (``train_cell``, one epoch, setup included) as
``benchmarks/training.py`` does, beside E_S, a factorial cell, for contrast. One thread.
Run: ``.venv/bin/python benchmarks/stacking.py [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import time
from statistics import median

import numpy as np
import torch
from benchrows import Row, row
from training import CELLS, cub_like_data, spec

from hierbench.cells.spec import CellSpec
from hierbench.losses.entailment_objective import companion_objective
from hierbench.losses.hier import HierObjective, HierSettings
from hierbench.training.trainer import train_cell

HIER_FULL = {"leaves": 555, "batch": 128, "dim": 32, "proxies": 512, "triplets": 50}  # NABirds
HIER_MINIMAL = {"leaves": 4, "batch": 8, "dim": 4, "proxies": 4, "triplets": 2}
# the full epoch's 16 updates (2,048 rows, batch 128), on a 4-unit head
MINIMAL_ROWS, MINIMAL_WIDTH, MINIMAL_BATCH = 128, 4, 8
# the companion cells, and E_S for contrast (a factorial cell, which bundles do stack)
STACKED_CELLS = {"EA": "E_A (every pair source)", "LA": "L_A (every pair source)", "ES": "E_S"}


def hier_update_seconds(sizes: dict[str, int], repeats: int) -> float:
    """Median seconds of one HIER-style objective forward and backward at these sizes."""
    settings = HierSettings(
        proxies=sizes["proxies"],
        topk=min(HierSettings.topk, sizes["batch"] // 2),
        triplets_per_anchor=sizes["triplets"],
    )
    objective = HierObjective(list(range(sizes["leaves"])), sizes["dim"], 1.0, settings, seed=42)
    generator = torch.Generator().manual_seed(0)
    points = torch.randn(sizes["batch"], sizes["dim"], generator=generator) * 0.3
    points = points / sizes["dim"] ** 0.5
    leaf = torch.randint(0, sizes["leaves"], (sizes["batch"],), generator=generator)
    labels = torch.stack([leaf, leaf, leaf], dim=1)
    times = []
    for _ in range(repeats + 1):  # the first call's one-off costs left out
        embeddings = points.clone().requires_grad_()
        start = time.perf_counter()
        loss, _ = objective(embeddings, labels)
        loss.backward()
        times.append(time.perf_counter() - start)
    return median(times[1:])


def _minimal_spec(full: CellSpec) -> CellSpec:
    """The same cell with a few-unit head and batch (the same code path)."""
    return CellSpec(
        **{
            **full.as_dict(),
            "batch_size": MINIMAL_BATCH,
            "hidden_dim": MINIMAL_WIDTH,
            "embedding_dim": MINIMAL_WIDTH,
        }
    )


def cell_update_seconds(cell: str, minimal: bool, repeats: int) -> float:
    """Median seconds per update of a cell of ``benchmarks/training.py`` over one epoch."""
    geometry, loss, pairs = CELLS[cell]
    features, labels = cub_like_data()
    settings = spec(geometry, loss, 42, 1)
    if minimal:
        leaf = np.arange(MINIMAL_ROWS) % 4  # a batch of 8 holds positives at every level
        labels = np.stack([leaf, leaf // 2, np.zeros_like(leaf)], axis=1)
        features = features[:MINIMAL_ROWS, :MINIMAL_WIDTH].copy()
        settings = _minimal_spec(settings)
    noise = np.random.default_rng(1).normal(0, 0.1, features.shape).astype(np.float32)
    config = {"companion": {"temperature": 0.07, "init_seed": 20251019, "pairs": pairs}}
    times = []
    for _ in range(repeats + 1):  # the first run's one-off costs left out
        start = time.perf_counter()
        objective = None
        if pairs is not None:
            objective = companion_objective(settings, config, labels, features + noise)
        result = train_cell(features, labels, settings, objective=objective)
        times.append((time.perf_counter() - start) / result.updates)
    return median(times[1:])


def rows(repeats: int = 3) -> list[Row]:
    """Each cell's per-update fixed cost against its full update (one thread)."""
    torch.set_num_threads(1)
    found = []
    fixed = hier_update_seconds(HIER_MINIMAL, repeats)
    full = hier_update_seconds(HIER_FULL, repeats)
    found.append(
        row(
            "stacking",
            "HIER-style update: its fixed cost (minimal sizes) vs the full update",
            fixed * 1000,
            full * 1000,
            "ms/update",
            None,
            note=(
                "context, no goal: the share a bundle could remove; NABirds' size (555 leaves, "
                f"batch 128, 512 proxies) vs {HIER_MINIMAL}; 1 thread, median of {repeats}"
            ),
        )
    )
    for cell, name in STACKED_CELLS.items():
        fixed = cell_update_seconds(cell, True, repeats)
        full = cell_update_seconds(cell, False, repeats)
        found.append(
            row(
                "stacking",
                f"{name} update: its fixed cost vs the full update",
                fixed * 1000,
                full * 1000,
                "ms/update",
                None,
                note=(
                    "context, no goal: the share a bundle could remove; 2048 x 768 features, "
                    f"batch 128 vs {MINIMAL_ROWS} x {MINIMAL_WIDTH}, batch {MINIMAL_BATCH}, "
                    f"a {MINIMAL_WIDTH}-unit head; one epoch, setup included; 1 thread, "
                    f"median of {repeats}"
                ),
            )
        )
    return found


def main() -> int:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    for item in rows(parser.parse_args().repeats):
        print(
            f"{item['figure']}: {item['value']:.2f} vs {item['reference']:.2f} {item['unit']} "
            f"({item['ratio']:.3f}); {item['note']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
