"""A bundle of cells trained together: K heads of the factorial's kind (E, H or an added
geometry; R, S or an added loss) on the same features, one batched projector forward, one
backward and one optimiser step per update for all K, each cell still itself.

Each cell keeps what it has alone: its initial weights (its head is built from its seed, as
:func:`hierbench.training.trainer.build_cell_model` builds it), its seed's batch order (gathered
per cell), its dropout masks (drawn from a generator that continues from the RNG state after its
initialisation, as the global RNG does for a cell alone), its geometry, loss, temperature and
curvature, and its own gradient clipping (the norm of its slice). AdamW is elementwise, so one
optimiser over the stacked weights steps each cell as its own would. Bundled cells must share
what the stacked step cannot tell apart: epochs, batch size, learning rate, weight decay,
gradient clip, the projector's shape and dropout. Cells that also share their geometry map,
distance and loss settings (all but the seed: :func:`loss_groups`) run those as one stacked
call, (k, B, B) distances and k losses; the update never reads a value back to the host.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from hierbench.cells.spec import CellSpec
from hierbench.devices import use_deterministic_torch
from hierbench.geometry.distances import sanitise_and_clip
from hierbench.geometry.stacked_projector import StackedProjector
from hierbench.losses.objective import LevelValues
from hierbench.losses.registry import BUILT_IN
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

log = logging.getLogger(__name__)


class BundleError(ValueError):
    """Cells that cannot share a bundle; the message names the cells and the field."""


# A plain objective's loss by code: (…, B, B) distances, labels, spec -> losses, level values.
Losses = Mapping[str, Callable[[torch.Tensor, torch.Tensor, CellSpec], tuple[Any, LevelValues]]]
BUILT_IN_LOSSES: dict[str, Any] = {code: entry.loss for code, entry in BUILT_IN.items()}


def check_bundle(specs: Sequence[CellSpec], losses: Losses = BUILT_IN_LOSSES) -> None:
    """Raise unless the cells can train together (see the module docstring)."""
    if not specs:
        raise BundleError("a bundle needs at least one cell")
    for spec in specs:
        spec.check()
        factorial_head = spec.geometry in (EUCLIDEAN, POINCARE) or spec.geometry_plugin
        if not factorial_head or spec.loss not in losses:
            raise BundleError(
                f"{spec.dataset} {spec.cell}: a bundle trains E, H or added-geometry heads with "
                f"a plain loss ({sorted(losses)}), not geometry {spec.geometry!r}, loss "
                f"{spec.loss!r}"
            )
    for field in SHARED_FIELDS:
        values = {getattr(spec, field) for spec in specs}
        if len(values) > 1:
            cells = ", ".join(spec.cell for spec in specs)
            raise BundleError(f"cells {cells} differ in {field} ({sorted(values)}); bundle apart")
    if len({json.dumps(spec.as_dict(), sort_keys=True) for spec in specs}) != len(specs):
        raise BundleError(f"a bundle holds a cell twice: {[spec.cell for spec in specs]}")


def loss_groups(specs: Sequence[CellSpec]) -> list[list[int]]:
    """The cells (indices, in order of first appearance) that differ only in their seed: each
    group's geometry map, distances and loss run as one stacked call."""
    groups: dict[str, list[int]] = {}
    for index, spec in enumerate(specs):
        settings = {k: v for k, v in spec.as_dict().items() if k not in ("dataset", "seed")}
        groups.setdefault(json.dumps(settings, sort_keys=True), []).append(index)
    return list(groups.values())


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
    # one full reduction per cell and tensor (torch._foreach_norm, as clip_grad_norm_): a cell's
    # norm never depends on how many cells share the stack (a (K, n) row reduction can round by K)
    cells = grads[0].shape[0]
    slices = [grad[cell] for cell in range(cells) for grad in grads]
    per_slice = torch.stack(torch._foreach_norm(slices)).view(cells, len(grads))
    norms = torch.linalg.vector_norm(per_slice, dim=1)
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
    losses: Losses = BUILT_IN_LOSSES,
) -> list[TrainResult]:
    """Train every cell of ``specs`` together on the same features for its epochs; returns one
    result per cell, in order, as :func:`hierbench.training.trainer.train_cell` would.
    ``losses``: each loss code's plain objective (the built-in R and S, and a run's plugins)."""
    check_bundle(specs, losses)
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
    groups = [(group, torch.tensor(group, device=device)) for group in loss_groups(specs)]
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
            losses_now, levels = _bundle_update(
                stacked, heads, specs, groups, x, y, step, dropout_generators, losses
            )
            norms = _clip_per_cell(list(stacked.parameters()), first.grad_clip)
            pairs = torch.stack([losses_now, norms.to(losses_now.dtype)], dim=1)  # (K, 2)
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
        log.info(
            "%s bundle of %d cells epoch %d/%d: %d updates, %.1f s",
            first.dataset,
            len(specs),
            epoch,
            first.epochs,
            updates,
            seconds,
        )
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
    groups: Sequence[tuple[list[int], torch.Tensor]],
    x: torch.Tensor,
    y: torch.Tensor,
    step: torch.Tensor,
    dropout_generators: Sequence[torch.Generator],
    plain: Losses,
) -> tuple[torch.Tensor, list[LevelValues]]:
    """One batched forward and backward of every cell's batch (``step``: (K, B) rows), the
    losses (``plain``, by loss code) stacked per group of :func:`loss_groups`; each cell's loss
    (K,) and per-level values, detached."""
    outputs = stacked(x[step], dropout_generators)  # (K, B, out)
    losses = outputs.new_empty(len(specs))
    levels: list[LevelValues] = [{} for _ in specs]
    total = outputs.new_zeros(())
    for cells, index in groups:
        head, spec = heads[cells[0]], specs[cells[0]]
        embeddings = head.from_projection(outputs[index])
        distances = sanitise_and_clip(head.stacked_distances(embeddings), spec.distance_clip)
        group_losses, group_levels = plain[spec.loss](distances, y[step[index]], spec)
        total = total + group_losses.sum()
        losses[index] = group_losses.detach()
        for position, cell in enumerate(cells):
            levels[cell] = {
                key: None if value is None else value[position]
                for key, value in group_levels.items()
            }
    stacked.zero_grad(set_to_none=True)
    total.backward()
    return losses, levels
