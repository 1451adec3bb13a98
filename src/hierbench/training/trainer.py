"""The trainer of one factorial cell: seeding, batch order, the update loop.

Within a training seed every cell starts from identical weights and sees identical batches:
the global RNG is reset to the seed immediately before the head is built (the geometry adds no
parameters and draws no random numbers), and the example order of each epoch is the
permutation a ``RandomSampler`` with a generator seeded by the training seed would draw,
cut into ``batch_size`` batches with the last incomplete batch dropped. Both are hashed, so
the fairness audit can prove it.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch

from hierbench.cells.checkpoints import head_for
from hierbench.cells.spec import CellSpec
from hierbench.devices import use_deterministic_torch
from hierbench.losses import DistanceObjective, LevelValues, Objective

log = logging.getLogger(__name__)

LOG_COLUMNS = ("epoch", "updates", "loss", "loss_c", "loss_m", "loss_h", "grad_norm", "seconds")


class NonFiniteLossError(RuntimeError):
    """A loss became NaN or infinite; the message names dataset, cell, seed, epoch and step."""


@dataclass
class TrainResult:
    """A trained head and the facts the fairness audit checks."""

    model: torch.nn.Module
    initial_weight_hash: str
    batch_order_hashes: list[str]
    updates: int
    parameters: int
    log: pd.DataFrame
    initial_extra_hashes: dict[str, str] = field(default_factory=dict)


PROJECTOR_PREFIX = "projector."


def state_hash(model: torch.nn.Module, prefix: str = "") -> str:
    """SHA256 over the names, dtypes, shapes and bytes of every tensor in a state dict (those
    whose name starts with ``prefix``)."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        if not name.startswith(prefix):
            continue
        array = tensor.detach().cpu().contiguous().numpy()
        digest.update(f"{name}|{array.dtype}|{array.shape}|".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def extra_initial_hashes(model: torch.nn.Module, objective: Objective) -> dict[str, str]:
    """Hashes of every parameter beyond the shared projector as initialised (a learnable
    curvature, an objective's embeddings and temperature), for the fairness audit."""
    extras = {
        f"head.{name}": state_hash_of(tensor)
        for name, tensor in model.named_parameters()
        if not name.startswith(PROJECTOR_PREFIX)
    }
    extras |= {f"objective.{n}": state_hash_of(t) for n, t in objective.named_parameters()}
    return extras


def head_param_groups(model: torch.nn.Module) -> list[dict[str, Any]]:
    """The projector's parameters with the cell's weight decay; any other head parameter (a
    learnable curvature) without weight decay, which would pull it towards 1 (meru does the
    same)."""
    named = list(model.named_parameters())
    groups = [{"params": [p for n, p in named if n.startswith(PROJECTOR_PREFIX)]}]
    others = [p for n, p in named if not n.startswith(PROJECTOR_PREFIX)]
    return groups + ([{"params": others, "weight_decay": 0.0}] if others else [])


def state_hash_of(tensor: torch.Tensor) -> str:
    """SHA256 of one tensor's dtype, shape and bytes."""
    array = tensor.detach().cpu().contiguous().numpy()
    digest = hashlib.sha256(f"{array.dtype}|{array.shape}|".encode())
    digest.update(array.tobytes())
    return digest.hexdigest()


def batch_order(n: int, batch_size: int, generator: torch.Generator) -> torch.Tensor:
    """One epoch's batches: a seeded permutation cut into full batches (drop_last)."""
    if n < batch_size:
        raise ValueError(f"{n} training examples cannot fill one batch of {batch_size}")
    permutation = torch.randperm(n, generator=generator)
    return permutation[: (n // batch_size) * batch_size].view(-1, batch_size)


def build_cell_model(spec: CellSpec, in_dim: int) -> torch.nn.Module:
    """Reset the RNG to the training seed, then build the head: identical weights per seed."""
    torch.manual_seed(spec.seed)
    return head_for(spec, in_dim)


def _update(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    features: torch.Tensor,
    labels: torch.Tensor,
    spec: CellSpec,
    objective: Objective,
    batch: torch.Tensor,
) -> tuple[torch.Tensor, LevelValues]:
    """One optimiser update without waiting for the device: returns the (2,) tensor of loss
    and gradient norm and the objective's per-level values, all detached, for the epoch's log.

    A non-finite loss or gradient norm is never applied: it sets the fused AdamW's
    ``found_inf``, so the step is skipped on the device; the epoch's end names the step and
    stops the job. The norm is the head's (clipped at ``spec.grad_clip``); a trainable
    objective's parameters are not clipped.
    """
    loss, levels = objective.batch_loss(model, features, labels, batch)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), spec.grad_clip, foreach=True)
    values = torch.stack([loss.detach(), norm.to(loss.dtype)])
    optimizer.found_inf = (~torch.isfinite(values).all()).to(torch.float32)
    optimizer.step()
    return values, levels


class EpochValues:
    """The values of one epoch's updates, kept on the device and read back once at its end."""

    def __init__(self) -> None:
        self.steps: list[torch.Tensor] = []
        self.keys: list[str] = []

    def add(self, values: torch.Tensor, levels: LevelValues) -> None:
        """One update's loss and gradient norm and its per-level values (None and NaN: the
        level was inactive)."""
        if not self.keys:
            self.keys = sorted(levels)
        nan = values.new_full((), math.nan)
        extra = [
            nan if levels.get(key) is None else levels[key].to(values.dtype) for key in self.keys
        ]
        self.steps.append(torch.cat([values, torch.stack(extra)]) if extra else values)

    def read(self) -> tuple[np.ndarray, list[str]]:
        """Every update's values as a float64 (steps, 2 + levels) array, and the level keys."""
        return torch.stack(self.steps).cpu().numpy().astype(np.float64), self.keys


def epoch_means(table: np.ndarray, keys: list[str]) -> dict[str, float]:
    """Mean loss and gradient norm, and each level's mean over the updates where it was active
    (a level never active in the epoch is left out)."""
    means = {"loss": float(np.mean(table[:, 0])), "grad_norm": float(np.mean(table[:, 1]))}
    for column, key in enumerate(keys, start=2):
        active = table[:, column][~np.isnan(table[:, column])]
        if len(active):
            means[key] = float(np.mean(active))
    return means


def check_finite(table: np.ndarray, keys: list[str], spec: CellSpec, epoch: int) -> None:
    """Stop at an epoch whose loss or gradient norm went non-finite, naming its first step."""
    bad = np.flatnonzero(~np.isfinite(table[:, :2]).all(axis=1))
    if not len(bad):
        return
    step = int(bad[0])
    loss, norm = table[step, 0], table[step, 1]
    why = ""
    if keys and np.isnan(table[step, 2:]).all():
        why = (
            "; no per-level value of this batch was active (under SupCon: no level of the batch "
            "had a strict positive; use larger batches)"
        )
    raise NonFiniteLossError(
        f"non-finite loss {loss} (gradient norm {norm}) in {spec.dataset} cell {spec.cell} "
        f"(seed {spec.seed}) at epoch {epoch}, step {step + 1}{why}"
    )


def train_cell(
    features: np.ndarray,
    labels: np.ndarray,
    spec: CellSpec,
    *,
    on_epoch: Callable[[int, torch.nn.Module], dict[str, float]] | None = None,
    objective: Objective | None = None,
    device: torch.device | None = None,
) -> TrainResult:
    """Train one cell for exactly ``spec.epochs`` epochs and return the endpoint model (on the
    CPU, in eval mode).

    ``on_epoch(epoch, model)`` may return diagnostics (validation metrics) for the log; they
    never influence training. ``objective`` (default: the spec's plain loss on the batch's
    distances, ``DistanceObjective``) may have parameters of its own, optimised by the same
    AdamW beside the head; the head is built and seeded as always.

    ``device`` (the CPU by default) runs the updates there. The initial weights and the batch
    order come from CPU generators on every device, so the fairness audit's hashes do not
    depend on it; dropout draws from the device's own generator, seeded alike.
    """
    spec.check()
    device = torch.device("cpu") if device is None else device
    use_deterministic_torch(device)
    x = torch.as_tensor(features, dtype=torch.float32).to(device)
    y = torch.as_tensor(labels, dtype=torch.long).to(device)
    objective = DistanceObjective(spec) if objective is None else objective
    model = build_cell_model(spec, x.shape[1])
    initial = state_hash(model, PROJECTOR_PREFIX)  # the weights every cell of a seed shares
    extras = extra_initial_hashes(model, objective)
    model.to(device)
    objective.to(device)
    groups = head_param_groups(model) + objective.param_groups(spec.weight_decay)
    optimizer = torch.optim.AdamW(groups, lr=spec.lr, weight_decay=spec.weight_decay, fused=True)
    generator = torch.Generator().manual_seed(spec.seed)
    rows, order_hashes, updates = [], [], 0
    for epoch in range(1, spec.epochs + 1):
        start = time.perf_counter()
        batches = batch_order(len(x), spec.batch_size, generator)
        order_hashes.append(hashlib.sha256(batches.numpy().astype("<i8").tobytes()).hexdigest())
        model.train()
        epoch_values = EpochValues()
        for batch in batches.to(device):
            values = _update(
                model,
                optimizer,
                x.index_select(0, batch),
                y.index_select(0, batch),
                spec,
                objective,
                batch,
            )
            epoch_values.add(*values)
        table, keys = epoch_values.read()  # the epoch's one read back
        check_finite(table, keys, spec, epoch)
        updates += len(table)
        row = {"epoch": epoch, "updates": updates, "seconds": time.perf_counter() - start}
        row |= epoch_means(table, keys)
        if on_epoch is not None:
            row |= on_epoch(epoch, model)
        rows.append(row)
        log.info("%s %s epoch %d/%d: %s", spec.dataset, spec.cell, epoch, spec.epochs, _brief(row))
    model.cpu().eval()
    return TrainResult(
        model=model,
        initial_weight_hash=initial,
        batch_order_hashes=order_hashes,
        updates=updates,
        parameters=sum(
            p.numel()
            for name, p in model.named_parameters()
            if p.requires_grad and name.startswith(PROJECTOR_PREFIX)
        ),
        log=log_frame(rows),
        initial_extra_hashes=extras,
    )


def _brief(row: dict[str, Any]) -> str:
    """Compact text of a log row."""
    return ", ".join(f"{k} {v:.4g}" for k, v in row.items() if k not in ("epoch",))


def log_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The per-epoch training log with a fixed set of columns (NaN where a level was inactive)."""
    frame = pd.DataFrame(rows)
    for column in LOG_COLUMNS:
        if column not in frame:
            frame[column] = np.nan
    extra = sorted(c for c in frame.columns if c not in LOG_COLUMNS)
    return frame[list(LOG_COLUMNS) + extra]
