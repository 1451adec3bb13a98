"""The portable numeric mode's price: the CPU seconds of the demo's kinds of work (a backbone
pass over JPEGs, factorial cells' training, a sealed evaluation's metrics) in the portable mode
(x86-64-v3 kernels, one thread) against the native one (this CPU's own kernels, every core),
measured in the same run on this machine. Goal: at most 1.10.

Each mode runs the same workload in a fresh process started with that mode's environment
(:func:`hierbench.provenance.numerics.kernel_settings`, read when torch and numpy load), the
modes alternating; the processes' CPU seconds (user and system, every thread) are summed by
the kernel. Medians of ``repeats`` pairs are reported, the wall seconds beside them.

Run: ``.venv/bin/python benchmarks/numerics.py [--repeats 3]``; exits 1 above the goal.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

from benchrows import Row, row

from hierbench.provenance.numerics import NATIVE, PORTABLE, compute_threads, kernel_settings

GOAL = 1.10
HERE = Path(__file__).resolve().parent


def mode_environment(mode: str) -> dict[str, str]:
    """This process's environment with ``mode``'s settings only (the other mode's removed)."""
    env = {k: v for k, v in os.environ.items() if k not in kernel_settings(PORTABLE)}
    return {**env, **kernel_settings(mode)}


def workload(images: int, samples: int, epochs: int, threads: int) -> None:
    """The demo's kinds of work, on ``threads`` torch threads."""
    import numpy as np
    import torch
    from features import DEMO_SIZE, WEIGHTS, write_images
    from training import cub_like_data, spec

    from hierbench.features.backbones import DEMO_BACKBONE, create_backbone
    from hierbench.features.extraction import extract_features
    from hierbench.metrics import evaluate
    from hierbench.training.trainer import train_cell

    torch.set_num_threads(threads)
    model = create_backbone(DEMO_BACKBONE, WEIGHTS, image_size=DEMO_SIZE)
    with tempfile.TemporaryDirectory() as tmp:
        table = write_images(Path(tmp), images, 128)
        extract_features(model, table, tmp, image_size=DEMO_SIZE, batch_size=32, num_workers=0)
    features, labels = cub_like_data(rows=samples)
    for geometry, loss in (("E", "S"), ("H", "S"), ("E", "R"), ("H", "R")):
        train_cell(features, labels, spec(geometry, loss, 42, epochs))
    queries = np.random.default_rng(0).normal(size=(samples // 2, 32))
    evaluate(queries, queries, labels[: samples // 2], labels[: samples // 2], ks=(1, 5))


def run_once(mode: str, images: int, samples: int, epochs: int) -> tuple[float, float]:
    """CPU and wall seconds of one workload process in ``mode``."""
    threads = compute_threads(mode, os.cpu_count() or 1)
    command = [sys.executable, str(Path(__file__).resolve()), "--workload"]
    command += ["--images", str(images), "--samples", str(samples), "--epochs", str(epochs)]
    command += ["--threads", str(threads)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, env=mode_environment(mode), check=True, cwd=HERE)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def rows(images: int = 256, samples: int = 4096, epochs: int = 2, repeats: int = 3) -> list[Row]:
    """The portable mode's CPU and wall seconds against the native mode's (medians)."""
    measured: dict[str, list[tuple[float, float]]] = {PORTABLE: [], NATIVE: []}
    for _ in range(repeats):
        for mode in (NATIVE, PORTABLE):
            measured[mode].append(run_once(mode, images, samples, epochs))
    cpu = {mode: median(c for c, _ in found) for mode, found in measured.items()}
    wall = {mode: median(w for _, w in found) for mode, found in measured.items()}
    note = (
        f"{images} JPEGs through the demo backbone, 4 factorial cells x {epochs} epochs on "
        f"{samples} x 768 features, metrics of {samples // 2} queries; median of {repeats} "
        f"pairs; native on {os.cpu_count()} thread(s), portable on 1"
    )
    return [
        row(
            "numerics",
            "portable mode's CPU seconds vs native",
            cpu[PORTABLE],
            cpu[NATIVE],
            "CPU s",
            f"<= {GOAL}",
            note=note,
        ),
        row(
            "numerics",
            "portable mode's wall seconds vs native",
            wall[PORTABLE],
            wall[NATIVE],
            "s",
            None,
            note=note,
        ),
    ]


def main() -> int:
    """Print the rows (or, with --workload, run the workload in this process)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--images", type=int, default=256)
    parser.add_argument("--samples", type=int, default=4096)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.workload:
        workload(args.images, args.samples, args.epochs, args.threads)
        return 0
    found = rows(args.images, args.samples, args.epochs, args.repeats)
    for item in found:
        print(
            f"{item['figure']}: {item['value']:.1f} vs {item['reference']:.1f} "
            f"({item['ratio']:.3f}; goal {item['goal']})"
        )
    return 0 if all(item["met"] is not False for item in found) else 1


if __name__ == "__main__":
    sys.exit(main())
