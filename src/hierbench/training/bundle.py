"""A bundle of cells trained together: K heads of the factorial's kind (E or H geometry, R or S
loss) on the same features, one batched projector forward, one backward and one optimiser step
per update for all K, each cell still itself.

Each cell keeps what it has alone: its initial weights (its head is built from its seed, as
:func:`hierbench.training.trainer.build_cell_model` builds it), its seed's batch order (gathered
per cell), its dropout masks (drawn from a generator that continues from the RNG state after its
initialisation, as the global RNG does for a cell alone), its geometry, loss, temperature and
curvature, and its own gradient clipping (the norm of its slice). AdamW is elementwise, so one
optimiser over the stacked weights steps each cell as its own would. Bundled cells must share
what the stacked step cannot tell apart: epochs, batch size, learning rate, weight decay,
gradient clip, the projector's shape and dropout. The geometry maps, distances and losses run
per cell on its slice (the projector's GEMMs are the batched part); the update never reads a
value back to the host.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence

import numpy as np
import torch

from hierbench.cells.spec import CellSpec
from hierbench.devices import use_deterministic_torch
from hierbench.geometry.distances import sanitise_and_clip
from hierbench.geometry.stacked_projector import StackedProjector
from hierbench.losses.objective import DISTANCE_LOSSES, LevelValues
from hierbench.protocol import EUCLIDEAN, POINCARE
from hierbench.training.trainer import (
    PROJECTOR_PREFIX,
    EpochValues,
    TrainResult,
    batch_order,
    build_cell_model,
    check_finite,
    epoch_means,
    log_frame,
    state_hash,
)

SHARED_FIELDS = (
    "epochs",
    "batch_size",
    "lr",
    "weight_decay",
    "grad_clip",
    "hidden_dim",
    "embedding_dim",
    "dropout",
)
CLIP_EPSILON = 1e-6  # torch.nn.utils.clip_grad_norm_'s guard against a zero norm


class BundleError(ValueError):
    """Cells that cannot share a bundle; the message names the cells and the field."""


def check_bundle(specs: Sequence[CellSpec]) -> None:
    """Raise unless the cells can train together (see the module docstring)."""
    if not specs:
        raise BundleError("a bundle needs at least one cell")
    for spec in specs:
        spec.check()
        if spec.geometry not in (EUCLIDEAN, POINCARE) or spec.loss not in DISTANCE_LOSSES:
            raise BundleError(
                f"{spec.dataset} {spec.cell}: a bundle trains E or H heads with a plain loss "
                f"({sorted(DISTANCE_LOSSES)}), not geometry {spec.geometry!r}, loss {spec.loss!r}"
            )
    for field in SHARED_FIELDS:
        values = {getattr(spec, field) for spec in specs}
        if len(values) > 1:
            cells = ", ".join(spec.cell for spec in specs)
            raise BundleError(f"cells {cells} differ in {field} ({sorted(values)}); bundle apart")
    if len({spec.cell for spec in specs}) != len(specs):
        raise BundleError(f"a bundle holds a cell twice: {[spec.cell for spec in specs]}")


def _dropout_generator(spec: CellSpec, device: torch.device) -> torch.Generator:
    """The generator of a cell's dropout masks: on the CPU, the global RNG's state right after
    its head was built (where a cell alone continues); on a GPU, the device's generator seeded
    with the cell's seed (as ``torch.manual_seed`` left it for a cell alone)."""
    generator = torch.Generator(device=device)
    if device.type == "cpu":
        generator.set_state(torch.get_rng_state())
    else:
        generator.manual_seed(spec.seed)
    return generator


def _clip_per_cell(parameters: Sequence[torch.nn.Parameter], clip: float) -> torch.Tensor:
    """Scale each cell's slice of the gradients to norm at most ``clip``; the (K,) norms."""
    grads = [p.grad for p in parameters]
    squares = torch.stack([g.reshape(g.shape[0], -1).square().sum(dim=1) for g in grads])
    norms = squares.sum(dim=0).sqrt()
    scale = (clip / (norms + CLIP_EPSILON)).clamp(max=1.0)
    for grad in grads:
        grad.mul_(scale.view(-1, *([1] * (grad.ndim - 1))))
    return norms


def train_bundle(
    features: np.ndarray,
    labels: np.ndarray,
    specs: Sequence[CellSpec],
    *,
    device: torch.device | None = None,
) -> list[TrainResult]:
    """Train every cell of ``specs`` together on the same features for its epochs; returns one
    result per cell, in order, as :func:`hierbench.training.trainer.train_cell` would."""
    check_bundle(specs)
    device = torch.device("cpu") if device is None else device
    use_deterministic_torch(device)
    x = torch.as_tensor(features, dtype=torch.float32).to(device)
    y = torch.as_tensor(labels, dtype=torch.long).to(device)
    heads, dropout_generators, initial = [], [], []
    for spec in specs:
        head = build_cell_model(spec, x.shape[1])
        generator = _dropout_generator(spec, device)
        heads.append(head)
        dropout_generators.append(generator)
        initial.append(state_hash(head, PROJECTOR_PREFIX))
    stacked = StackedProjector([head.projector for head in heads]).to(device)
    first = specs[0]
    optimizer = torch.optim.AdamW(
        stacked.parameters(), lr=first.lr, weight_decay=first.weight_decay, fused=True
    )
    orders = [torch.Generator().manual_seed(spec.seed) for spec in specs]
    rows: list[list[dict]] = [[] for _ in specs]
    order_hashes: list[list[str]] = [[] for _ in specs]
    updates = 0
    for epoch in range(1, first.epochs + 1):
        start = time.perf_counter()
        batches = [batch_order(len(x), first.batch_size, order) for order in orders]
        for cell, cell_batches in enumerate(batches):
            raw = cell_batches.numpy().astype("<i8").tobytes()
            order_hashes[cell].append(hashlib.sha256(raw).hexdigest())
        steps = torch.stack(batches, dim=1).to(device)  # (steps, K, B)
        stacked.train()
        values = [EpochValues() for _ in specs]
        for step in steps:
            losses, levels = _bundle_update(stacked, heads, specs, x, y, step, dropout_generators)
            norms = _clip_per_cell(list(stacked.parameters()), first.grad_clip)
            pairs = torch.stack([torch.stack(losses), norms.to(losses[0].dtype)], dim=1)  # (K, 2)
            optimizer.found_inf = (~torch.isfinite(pairs).all()).to(torch.float32)
            optimizer.step()
            for cell in range(len(specs)):
                values[cell].add(pairs[cell].detach(), levels[cell])
        updates += len(steps)
        seconds = time.perf_counter() - start
        for cell, spec in enumerate(specs):
            table, keys = values[cell].read()
            check_finite(table, keys, spec, epoch)
            row = {"epoch": epoch, "updates": updates, "seconds": seconds / len(specs)}
            rows[cell].append(row | epoch_means(table, keys))
    stacked.cpu().eval()
    results = []
    for cell, head in enumerate(heads):
        head.projector.load_state_dict(stacked.projector(cell).state_dict())
        head.cpu().eval()
        results.append(
            TrainResult(
                model=head,
                initial_weight_hash=initial[cell],
                batch_order_hashes=order_hashes[cell],
                updates=updates,
                parameters=sum(p.numel() for p in head.projector.parameters()),
                log=log_frame(rows[cell]),
            )
        )
    return results


def _bundle_update(
    stacked: StackedProjector,
    heads: Sequence[torch.nn.Module],
    specs: Sequence[CellSpec],
    x: torch.Tensor,
    y: torch.Tensor,
    step: torch.Tensor,
    dropout_generators: Sequence[torch.Generator],
) -> tuple[list[torch.Tensor], list[LevelValues]]:
    """One batched forward and backward of every cell's batch (``step``: (K, B) rows); each
    cell's loss and per-level values, detached."""
    outputs = stacked(x[step], dropout_generators)  # (K, B, out)
    losses, levels, total = [], [], outputs.new_zeros(())
    for cell, (head, spec) in enumerate(zip(heads, specs, strict=True)):
        embeddings = head.from_projection(outputs[cell])
        distances = sanitise_and_clip(head.distance(embeddings, embeddings), spec.distance_clip)
        loss, cell_levels = DISTANCE_LOSSES[spec.loss](distances, y[step[cell]], spec)
        total = total + loss
        losses.append(loss.detach())
        levels.append(cell_levels)
    stacked.zero_grad(set_to_none=True)
    total.backward()
    return losses, levels
