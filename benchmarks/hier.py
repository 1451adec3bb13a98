"""The HIER-style objective's update at NABirds' size on one core, against its Gumbel draws.

Measured in the same run, repeated (medians reported): the seconds of one update of
``HierObjective`` (forward and backward; the head left out) on a batch of 128 ball points
with NABirds' 555 leaf classes and the authors' 512 hierarchical proxies, 50 triplets per
anchor, and the seconds of drawing that update's Gumbel noise alone (two (T, 512) draws per
triplet term, T its triplets). Issue #36 asks for at most 0.1 s per update; the draws are the
authors' estimator (a noise vector per triplet and proxy, for the straight-through softmax
of every active triplet), so their time is a floor no rewrite of the rest can pass.

Run: ``.venv/bin/python benchmarks/hier.py [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import time
from statistics import median
from unittest import mock

import torch
from benchrows import Row, row

from hierbench.losses import hier
from hierbench.losses.hier import HierObjective, HierSettings
from hierbench.losses.hier_triplets import gumbel_noise

LEAVES, BATCH, DIM = 555, 128, 32  # NABirds' leaf classes; the factorial's batch and width
UPDATE_GOAL_S = 0.1


def _batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Ball points (well inside the unit ball) and (B, 3) labels of NABirds' size."""
    generator = torch.Generator().manual_seed(seed)
    points = torch.randn(BATCH, DIM, generator=generator) * 0.3 / DIM**0.5
    leaf = torch.randint(0, LEAVES, (BATCH,), generator=generator)
    return points, torch.stack([leaf, leaf, leaf], dim=1)


def update_seconds(objective: HierObjective, points: torch.Tensor, labels: torch.Tensor) -> float:
    """Seconds of one forward and backward of the objective."""
    embeddings = points.clone().requires_grad_()
    start = time.perf_counter()
    loss, _ = objective(embeddings, labels)
    loss.backward()
    return time.perf_counter() - start


def noise_shapes(objective: HierObjective, points: torch.Tensor, labels: torch.Tensor) -> list:
    """The shapes of the Gumbel draws one update makes."""
    shapes = []

    def recording(shape, generator):
        shapes.append(tuple(shape))
        return gumbel_noise(shape, generator)

    with mock.patch.object(hier, "gumbel_noise", recording):
        update_seconds(objective, points, labels)
    return shapes


def noise_seconds(shapes: list, generator: torch.Generator) -> float:
    """Seconds of drawing Gumbel noise of these shapes."""
    start = time.perf_counter()
    for shape in shapes:
        gumbel_noise(shape, generator)
    return time.perf_counter() - start


def rows(repeats: int = 5) -> list[Row]:
    """The update's time against its draws' (one thread, paired per repeat, medians)."""
    torch.set_num_threads(1)
    objective = HierObjective(list(range(LEAVES)), DIM, 1.0, HierSettings(), seed=42)
    points, labels = _batch()
    shapes = noise_shapes(objective, points, labels)
    update_seconds(objective, points, labels)  # one-off costs out of the timing
    generator = torch.Generator().manual_seed(0)
    updates, draws = [], []
    for _ in range(repeats):
        updates.append(update_seconds(objective, points, labels))
        draws.append(noise_seconds(shapes, generator))
    triplets = sum(shape[0] for shape in shapes) // 2
    return [
        row(
            "hier",
            "HIER-style update (NABirds size, 1 thread) vs its Gumbel draws alone",
            median(updates),
            median(draws),
            "s/update",
            None,
            ratio=median(u / d for u, d in zip(updates, draws, strict=True)),
            note=(
                f"goal <= {UPDATE_GOAL_S:g} s per update (issue #36): "
                f"{'met' if median(updates) <= UPDATE_GOAL_S else 'not met'}; the draws alone "
                f"({triplets} triplets x 512 proxies x 2) are the floor; batch {BATCH}, "
                f"{LEAVES} leaves, median of {repeats}"
            ),
        )
    ]


def main() -> int:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    for item in rows(parser.parse_args().repeats):
        print(
            f"{item['figure']}: {item['value']:.3f} s vs {item['reference']:.3f} s; {item['note']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
