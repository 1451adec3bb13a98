"""GPU figures for the guide (docs/cluster-gpu.md, #21), measured in one process on a CUDA machine.

1. Features: DINOv2 ViT-B/14 (timm ``vit_base_patch14_dinov2``, random weights: the speed is
   the architecture's) at 224 px, through the features stage's own batch step (float16
   autocast, channels-last, copy back to the host), in images/s; the reference is the bare
   model call on the same device-resident batch (ratio goal >= 0.8).
2. Training: one H_S cell at the paper's size (5,994 x 768 CUB-like features, the paper
   config's head, batch 128), updates/s on the GPU and on this machine's CPU (the ratio is
   the GPU's speed-up).
3. Bundles: the CUB factorial's 12 cells for one epoch trained as one bundle (as the
   pipeline trains them) against the same cells one by one, cell-updates/s on the device.
4. The CUB factorial from cached features on the GPU, wall time: the temperature search
   (2 geometries x 6 taus x 50 epochs on the tuning split, one bundle), the 12 final cells
   (2 geometries x 2 losses x 3 seeds x 100 epochs, one bundle) and their sealed scoring
   (870 queries x 4,924 gallery, 3 draws each, on the CPU as the pipeline does).

Run: ``.venv/bin/python benchmarks/gpu.py [--out FILE.json]``. Without CUDA it prints one line
and exits 2 (the guide's GPU figures then stay "to be measured"). ``--smoke`` runs every step
at toy sizes on whatever device there is (the test suite's check that the script works).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import timm
import torch
from benchrows import Row, row, skipped_row

from hierbench.cells.checkpoints import embed
from hierbench.cells.spec import cell_spec
from hierbench.config import load_config, training_config
from hierbench.devices import use_deterministic_torch
from hierbench.features.extraction import _forward
from hierbench.metrics.engine import evaluate
from hierbench.protocol import GEOMETRY_NAMES
from hierbench.training.bundle import train_bundle
from hierbench.training.trainer import train_cell

REPO = Path(__file__).resolve().parents[1]
FEATURE_GOAL = 0.8


@dataclass(frozen=True)
class Sizes:
    """What one benchmark run measures on: the paper's sizes or toy ones."""

    image_size: int
    feature_batch: int
    feature_batches: int
    train_rows: int
    tuning_rows: int
    query: int
    gallery: int
    epochs: int
    tuning_epochs: int
    seeds: tuple[int, ...]
    taus: tuple[float, ...]
    draws: int


PAPER = Sizes(
    image_size=224,
    feature_batch=128,
    feature_batches=20,
    train_rows=5994,  # CUB's official train split
    tuning_rows=4795,  # its tuning/train part (80 %)
    query=870,
    gallery=4924,
    epochs=100,
    tuning_epochs=50,
    seeds=(42, 2024, 3407),
    taus=(0.07, 0.1, 0.2, 0.3, 0.5, 1.0),
    draws=3,
)
SMOKE = Sizes(56, 2, 2, 300, 256, 20, 60, 1, 1, (42,), (0.1,), 1)


def cub_like(rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random 768-D features with a CUB-sized tree: 200 leaves, 124 middles, 37 highs."""
    rng = np.random.default_rng(seed)
    leaf = rng.integers(0, 200, rows)
    middle = (leaf * 124) // 200
    labels = np.stack([leaf, middle, (middle * 37) // 124], axis=1)
    return rng.normal(size=(rows, 768)).astype(np.float32), labels


def timed(step, repeats: int) -> float:
    """Seconds of the fastest of ``repeats`` calls (after one warm-up call)."""
    step()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        best = min(best, time.perf_counter() - start)
    return best


def sync(device: torch.device) -> None:
    """Wait for the device's queued work (a no-op on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize()


def feature_rates(sizes: Sizes, device: torch.device) -> dict[str, float]:
    """Images/s of the stage's batch step and of the bare forward on the same batch."""
    model = timm.create_model(
        "vit_base_patch14_dinov2", pretrained=False, num_classes=0, img_size=sizes.image_size
    )
    model = model.eval().to(device, memory_format=torch.channels_last)
    batch = torch.randn(sizes.feature_batch, 3, sizes.image_size, sizes.image_size)
    resident = batch.to(device, memory_format=torch.channels_last)

    @torch.inference_mode()
    def stage() -> None:
        for _ in range(sizes.feature_batches):
            _forward(model, batch, device)
        sync(device)

    @torch.inference_mode()
    def bare() -> None:
        with torch.autocast(device.type, dtype=torch.float16, enabled=device.type == "cuda"):
            for _ in range(sizes.feature_batches):
                model(resident)
        sync(device)

    images = sizes.feature_batch * sizes.feature_batches
    stage_rate, bare_rate = images / timed(stage, 3), images / timed(bare, 3)
    return {"stage_images_per_s": stage_rate, "bare_images_per_s": bare_rate}


def paper_config() -> dict:
    """The paper config's training keys for CUB."""
    config = load_config(REPO / "configs/paper.yaml", REPO / "schemas/config.schema.yaml")
    return training_config(config, "cub")


def training_rates(sizes: Sizes, device: torch.device) -> dict[str, float]:
    """Updates/s of one H_S cell for one epoch on ``device`` and on the CPU."""
    x, y = cub_like(sizes.train_rows, 0)
    spec = cell_spec("cub", "H", "S", 42, paper_config(), tau=0.1, epochs=1)
    rates = {}
    for name, where in (("gpu", device), ("cpu", torch.device("cpu"))):
        train_cell(x, y, spec, device=where)  # warm-up: CUDA context, kernels, lazy imports
        start = time.perf_counter()
        result = train_cell(x, y, spec, device=where)
        rates[f"{name}_updates_per_s"] = result.updates / (time.perf_counter() - start)
    return rates


def factorial_specs(sizes: Sizes, epochs: int) -> list:
    """The CUB factorial's cells (E/H x R/S x seeds), as the pipeline's bundle holds them."""
    config = paper_config()
    return [
        cell_spec(
            "cub", geometry, loss, seed, config, tau=0.1 if loss == "S" else None, epochs=epochs
        )
        for geometry in GEOMETRY_NAMES
        for loss in ("R", "S")
        for seed in sizes.seeds
    ]


def bundle_rates(sizes: Sizes, device: torch.device) -> dict[str, float]:
    """Cell-updates/s of the factorial's cells for one epoch, as one bundle and one by one."""
    x, y = cub_like(sizes.train_rows, 0)
    specs = factorial_specs(sizes, 1)
    train_bundle(x, y, specs[:2], device=device)  # warm-up
    start = time.perf_counter()
    bundled = sum(result.updates for result in train_bundle(x, y, specs, device=device))
    bundle_rate = bundled / (time.perf_counter() - start)
    start = time.perf_counter()
    single = sum(train_cell(x, y, spec, device=device).updates for spec in specs)
    return {
        "bundle_cell_updates_per_s": bundle_rate,
        "single_cell_updates_per_s": single / (time.perf_counter() - start),
    }


def factorial_seconds(sizes: Sizes, device: torch.device) -> dict[str, float]:
    """Wall seconds of the CUB factorial from cached features, trained in bundles as the
    pipeline trains it: tuning, cells, sealed scoring."""
    config = paper_config()
    tuning_x, tuning_y = cub_like(sizes.tuning_rows, 1)
    x, y = cub_like(sizes.train_rows, 0)
    test_x, test_y = cub_like(sizes.query + sizes.gallery, 2)
    start = time.perf_counter()
    tuning = [
        cell_spec("cub", geometry, "S", 42, config, tau=tau, epochs=sizes.tuning_epochs)
        for geometry in GEOMETRY_NAMES
        for tau in sizes.taus
    ]
    train_bundle(tuning_x, tuning_y, tuning, device=device)
    tuned = time.perf_counter()
    specs = factorial_specs(sizes, sizes.epochs)
    results = train_bundle(x, y, specs, device=device)
    scoring = 0.0
    for spec, result in zip(specs, results, strict=True):
        began = time.perf_counter()
        emb = embed(result.model, test_x)  # the sealed evaluation's CPU path
        for draw in range(sizes.draws):
            order = np.random.default_rng(draw).permutation(len(emb))
            q, g = order[: sizes.query], order[sizes.query :]
            evaluate(
                emb[q],
                emb[g],
                test_y[q],
                test_y[g],
                geometry=GEOMETRY_NAMES[spec.geometry],
                curvature=spec.curvature,
            )
        scoring += time.perf_counter() - began
    total = time.perf_counter() - start
    return {
        "tuning_s": tuned - start,
        "cells_s": total - (tuned - start) - scoring,
        "scoring_s": scoring,
        "total_s": total,
    }


def report(figures: dict[str, dict[str, float]]) -> list[str]:
    """Readable lines, each figure beside its reference."""
    f, t, w, b = figures["features"], figures["training"], figures["factorial"], figures["bundle"]
    ratio = f["stage_images_per_s"] / f["bare_images_per_s"]
    verdict = "met" if ratio >= FEATURE_GOAL else "NOT met"
    return [
        f"features: {f['stage_images_per_s']:.0f} images/s through the stage's batch step, "
        f"{f['bare_images_per_s']:.0f} bare: ratio {ratio:.2f} (goal >= {FEATURE_GOAL}: {verdict})",
        f"training (H_S, one epoch): {t['gpu_updates_per_s']:.0f} updates/s on the device, "
        f"{t['cpu_updates_per_s']:.0f} on the CPU ({torch.get_num_threads()} threads): "
        f"{t['gpu_updates_per_s'] / t['cpu_updates_per_s']:.1f}x",
        f"bundle of the factorial's cells: {b['bundle_cell_updates_per_s']:.0f} cell-updates/s, "
        f"{b['single_cell_updates_per_s']:.0f} one by one: "
        f"{b['bundle_cell_updates_per_s'] / b['single_cell_updates_per_s']:.1f}x",
        f"CUB factorial from cached features: {w['total_s'] / 60:.1f} min (tuning "
        f"{w['tuning_s'] / 60:.1f}, cells {w['cells_s'] / 60:.1f}, sealed scoring "
        f"{w['scoring_s'] / 60:.1f})",
    ]


def rows(smoke: bool = False) -> list[Row]:
    """The figures as benchmark rows (``make bench``); one skipped row without CUDA."""
    if not torch.cuda.is_available():
        return [skipped_row("gpu", "every GPU figure", "no CUDA")]
    device = torch.device("cuda")
    sizes = SMOKE if smoke else PAPER
    use_deterministic_torch(device)
    f, t = feature_rates(sizes, device), training_rates(sizes, device)
    b, w = bundle_rates(sizes, device), factorial_seconds(sizes, device)
    where = torch.cuda.get_device_name() + (" (smoke sizes)" if smoke else "")
    return [
        row(
            "gpu",
            "features stage images/s vs the bare forward (DINOv2 ViT-B/14)",
            f["stage_images_per_s"],
            f["bare_images_per_s"],
            "images/s",
            f">= {FEATURE_GOAL}",
            note=where,
        ),
        row(
            "gpu",
            "H_S updates/s on the GPU vs the CPU",
            t["gpu_updates_per_s"],
            t["cpu_updates_per_s"],
            "updates/s",
            None,
            note=f"{where}; the speed-up, no goal; CPU with {torch.get_num_threads()} threads",
        ),
        row(
            "gpu",
            "12-cell bundle cell-updates/s vs the same cells one by one, on the GPU",
            b["bundle_cell_updates_per_s"],
            b["single_cell_updates_per_s"],
            "cell-updates/s",
            None,
            note=f"{where}; the CUB factorial (E/H x R/S x 3 seeds), one epoch; no goal",
        ),
        row(
            "gpu",
            "CUB factorial from cached features, wall time",
            w["total_s"],
            None,
            "s",
            None,
            note=f"{where}; no reference: tuning {w['tuning_s']:.0f} s, cells "
            f"{w['cells_s']:.0f} s, sealed scoring {w['scoring_s']:.0f} s",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    """Measure and print; ``--out`` also writes the figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the figures to this JSON file")
    parser.add_argument("--smoke", action="store_true", help="toy sizes, any device")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available() and not args.smoke:
        print("SKIP: no CUDA device on this machine; the GPU figures are still to be measured")
        return 2
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    sizes = SMOKE if args.smoke else PAPER
    use_deterministic_torch(device)
    figures = {
        "device": {"name": torch.cuda.get_device_name() if device.type == "cuda" else "cpu"},
        "features": feature_rates(sizes, device),
        "training": training_rates(sizes, device),
        "bundle": bundle_rates(sizes, device),
        "factorial": factorial_seconds(sizes, device),
    }
    print(f"device: {figures['device']['name']}" + (" (smoke sizes)" if args.smoke else ""))
    print("\n".join(report(figures)))
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
