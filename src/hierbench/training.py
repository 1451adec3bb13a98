"""The trainer of one factorial cell: seeding, batch order, the update loop, checkpoints.

Within a training seed every cell starts from identical weights and sees identical batches:
the global RNG is reset to the seed immediately before the head is built (the geometry adds no
parameters and draws no random numbers), and the example order of each epoch is the
permutation a ``RandomSampler`` with a generator seeded by the training seed would draw,
cut into ``batch_size`` batches with the last incomplete batch dropped. Both are hashed, so
the fairness audit can prove it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from safetensors.torch import load_file, save_file

from hierbench.artifacts import publish
from hierbench.geometry import TRAIN_DISTANCE_CLIP, build_head, sanitise_and_clip
from hierbench.losses import regression_loss, taxonomy_supcon_loss
from hierbench.provenance import JobContext

log = logging.getLogger(__name__)

LOG_COLUMNS = ("epoch", "updates", "loss", "loss_c", "loss_m", "loss_h", "grad_norm", "seconds")


class NonFiniteLossError(RuntimeError):
    """A loss became NaN or infinite; the message names dataset, cell, seed, epoch and step."""


@dataclass(frozen=True)
class CellSpec:
    """Everything that defines one training run (a factorial cell or a tuning run)."""

    dataset: str
    geometry: str  # "E" Euclidean or "H" Poincare
    loss: str  # "R" regression or "S" Taxonomy-SupCon
    seed: int
    epochs: int
    batch_size: int
    lr: float
    weight_decay: float
    grad_clip: float
    hidden_dim: int
    embedding_dim: int
    dropout: float
    curvature: float | None = None
    radius: float | None = None
    tau: float | None = None
    regression_targets: dict[str, float] = field(
        default_factory=lambda: {"c": 0.2, "m": 0.5, "h": 0.8, "o": 1.0}
    )
    supcon_weights: tuple[float, float, float] = (1.0, 1.0, 1.0)
    distance_clip: float = TRAIN_DISTANCE_CLIP

    @property
    def cell(self) -> str:
        """The cell's name, e.g. ``HS-2024``."""
        return f"{self.geometry}{self.loss}-{self.seed}"

    def check(self) -> None:
        """Refuse specs that cannot be trained, naming the cell and the field."""
        if self.geometry not in ("E", "H") or self.loss not in ("R", "S"):
            raise ValueError(f"{self.dataset} {self.cell}: geometry must be E|H and loss R|S")
        if self.geometry == "H" and (self.curvature is None or self.radius is None):
            raise ValueError(
                f"{self.dataset} {self.cell}: a Poincare cell needs curvature and radius"
            )
        if self.loss == "S" and self.tau is None:
            raise ValueError(f"{self.dataset} {self.cell}: a Taxonomy-SupCon cell needs tau")


@dataclass
class TrainResult:
    """A trained head and the facts the fairness audit checks."""

    model: torch.nn.Module
    initial_weight_hash: str
    batch_order_hashes: list[str]
    updates: int
    parameters: int
    log: pd.DataFrame


def state_hash(model: torch.nn.Module) -> str:
    """SHA256 over the names, dtypes, shapes and bytes of every tensor in a state dict."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        array = tensor.detach().cpu().contiguous().numpy()
        digest.update(f"{name}|{array.dtype}|{array.shape}|".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def batch_order(n: int, batch_size: int, generator: torch.Generator) -> torch.Tensor:
    """One epoch's batches: a seeded permutation cut into full batches (drop_last)."""
    if n < batch_size:
        raise ValueError(f"{n} training examples cannot fill one batch of {batch_size}")
    permutation = torch.randperm(n, generator=generator)
    return permutation[: (n // batch_size) * batch_size].view(-1, batch_size)


def head_for(spec: CellSpec, in_dim: int) -> torch.nn.Module:
    """A head of the spec's architecture and geometry (weights from the current RNG state)."""
    return build_head(
        spec.geometry,
        in_dim,
        hidden_dim=spec.hidden_dim,
        embedding_dim=spec.embedding_dim,
        dropout=spec.dropout,
        curvature=spec.curvature,
        radius=spec.radius,
    )


def build_cell_model(spec: CellSpec, in_dim: int) -> torch.nn.Module:
    """Reset the RNG to the training seed, then build the head: identical weights per seed."""
    torch.manual_seed(spec.seed)
    return head_for(spec, in_dim)


def batch_loss(
    model: torch.nn.Module, features: torch.Tensor, labels: torch.Tensor, spec: CellSpec
) -> tuple[torch.Tensor, dict[str, float | None]]:
    """The cell's objective on one batch, with per-level values for the log."""
    embeddings = model(features)
    distances = sanitise_and_clip(model.distance(embeddings, embeddings), spec.distance_clip)
    if spec.loss == "R":
        return regression_loss(distances, labels, spec.regression_targets), {}
    return taxonomy_supcon_loss(distances, labels, spec.tau, spec.supcon_weights)


def use_deterministic_torch() -> None:
    """Deterministic kernels everywhere, without NaN-filling every fresh allocation.

    ``fill_uninitialized_memory`` only helps to catch kernels that read memory they never
    wrote; none of ours do, and at batch 128 it costs dozens of extra fills per update.
    """
    torch.use_deterministic_algorithms(True)
    torch.utils.deterministic.fill_uninitialized_memory = False  # type: ignore[attr-defined]


def _update(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    features: torch.Tensor,
    labels: torch.Tensor,
    spec: CellSpec,
) -> dict[str, float | None]:
    """One optimiser update; returns loss, gradient norm and per-level losses as floats.

    A non-finite loss or gradient norm is returned, not applied: the caller stops the job.
    Distance sanitising can hide a NaN in the loss; a NaN gradient cannot hide.
    """
    loss, levels = batch_loss(model, features, labels, spec)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), spec.grad_clip, foreach=True)
    values = {"loss": loss.item(), "grad_norm": norm.item()}
    if math.isfinite(values["loss"]) and math.isfinite(values["grad_norm"]):
        optimizer.step()
    return values | levels


def train_cell(
    features: np.ndarray,
    labels: np.ndarray,
    spec: CellSpec,
    *,
    on_epoch: Callable[[int, torch.nn.Module], dict[str, float]] | None = None,
) -> TrainResult:
    """Train one cell for exactly ``spec.epochs`` epochs and return the endpoint model.

    ``on_epoch(epoch, model)`` may return diagnostics (validation metrics) for the log; they
    never influence training.
    """
    spec.check()
    use_deterministic_torch()
    x = torch.as_tensor(features, dtype=torch.float32)
    y = torch.as_tensor(labels, dtype=torch.long)
    model = build_cell_model(spec, x.shape[1])
    initial = state_hash(model)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=spec.lr, weight_decay=spec.weight_decay, fused=True
    )
    generator = torch.Generator().manual_seed(spec.seed)
    rows, order_hashes, updates = [], [], 0
    for epoch in range(1, spec.epochs + 1):
        start = time.perf_counter()
        batches = batch_order(len(x), spec.batch_size, generator)
        order_hashes.append(hashlib.sha256(batches.numpy().astype("<i8").tobytes()).hexdigest())
        model.train()
        totals: dict[str, list[float]] = {}
        for step, batch in enumerate(batches, start=1):
            values = _update(
                model, optimizer, x.index_select(0, batch), y.index_select(0, batch), spec
            )
            if not all(math.isfinite(values[key]) for key in ("loss", "grad_norm")):
                raise NonFiniteLossError(
                    f"non-finite loss {values['loss']} (gradient norm {values['grad_norm']}) "
                    f"in {spec.dataset} cell {spec.cell} (seed {spec.seed}) at epoch {epoch}, "
                    f"step {step}"
                )
            updates += 1
            for key, value in values.items():
                if value is not None:
                    totals.setdefault(key, []).append(value)
        row = {"epoch": epoch, "updates": updates, "seconds": time.perf_counter() - start}
        row |= {key: float(np.mean(values)) for key, values in totals.items()}
        if on_epoch is not None:
            row |= on_epoch(epoch, model)
        rows.append(row)
        log.info("%s %s epoch %d: %s", spec.dataset, spec.cell, epoch, _brief(row))
    model.eval()
    return TrainResult(
        model=model,
        initial_weight_hash=initial,
        batch_order_hashes=order_hashes,
        updates=updates,
        parameters=sum(p.numel() for p in model.parameters() if p.requires_grad),
        log=_log_frame(rows),
    )


def _brief(row: dict[str, Any]) -> str:
    """Compact text of a log row."""
    return ", ".join(f"{k} {v:.4g}" for k, v in row.items() if k not in ("epoch",))


def _log_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The per-epoch training log with a fixed set of columns (NaN where a level was inactive)."""
    frame = pd.DataFrame(rows)
    for column in LOG_COLUMNS:
        if column not in frame:
            frame[column] = np.nan
    extra = sorted(c for c in frame.columns if c not in LOG_COLUMNS)
    return frame[list(LOG_COLUMNS) + extra]


@torch.inference_mode()
def embed(model: torch.nn.Module, features: np.ndarray, batch_size: int = 4096) -> np.ndarray:
    """Embeddings of ``features`` in eval mode, float32, in input order."""
    model.eval()
    x = torch.as_tensor(features, dtype=torch.float32)
    parts = [model(x[i : i + batch_size]) for i in range(0, len(x), batch_size)]
    return torch.cat(parts).numpy() if parts else np.zeros((0, 0), dtype=np.float32)


def save_checkpoint(
    model: torch.nn.Module, target: str | Path, job: JobContext, spec: CellSpec
) -> Path:
    """Write the model's state dict as safetensors (with the spec as metadata) and a record."""
    tensors = {name: t.detach().cpu().contiguous() for name, t in model.state_dict().items()}
    metadata = {"spec": json.dumps(asdict(spec), sort_keys=True)}
    return publish(target, lambda tmp: save_file(tensors, str(tmp), metadata=metadata), job)


def load_checkpoint(path: str | Path, spec: CellSpec, in_dim: int) -> torch.nn.Module:
    """A fresh head of the spec's architecture with the checkpoint's weights, in eval mode."""
    model = head_for(spec, in_dim)
    model.load_state_dict(load_file(str(path)), strict=True)
    return model.eval()


def cell_spec(
    dataset: str,
    geometry: str,
    loss: str,
    seed: int,
    config: dict[str, Any],
    *,
    tau: float | None = None,
    epochs: int | None = None,
) -> CellSpec:
    """The spec of a cell from the resolved config (``epochs`` overrides, for tuning runs)."""
    training, head = config["training"], config["head"]
    hyperbolic = config["datasets"][dataset]["hyperbolic"]
    weights = training["supcon_weights"]
    return CellSpec(
        dataset=dataset,
        geometry=geometry,
        loss=loss,
        seed=int(seed),
        epochs=int(epochs if epochs is not None else training["epochs"]),
        batch_size=training["batch_size"],
        lr=training["lr"],
        weight_decay=training["weight_decay"],
        grad_clip=training["grad_clip"],
        hidden_dim=head["hidden_dim"],
        embedding_dim=head["embedding_dim"],
        dropout=head["dropout"],
        curvature=hyperbolic["curvature"] if geometry == "H" else None,
        radius=hyperbolic["radius"] if geometry == "H" else None,
        tau=tau if loss == "S" else None,
        regression_targets=dict(training["regression_targets"]),
        supcon_weights=(weights["c"], weights["m"], weights["h"]),
        distance_clip=training["distance_clip_train"],
    )


def verification_digest(embeddings: np.ndarray) -> str:
    """SHA256 of a verification batch's embeddings (float32, C order)."""
    return hashlib.sha256(np.ascontiguousarray(embeddings, dtype=np.float32).tobytes()).hexdigest()
