"""A cell's identity and its checkpoint: the spec that defines a training run, the head it
builds, the safetensors file it is saved to, and the embeddings it gives.

Everything that reads a trained cell (the fairness audit, evaluation, figures) needs this and
nothing of the trainer, so it lives apart from ``hierbench.training``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from hierbench.geometry import TRAIN_DISTANCE_CLIP, build_head
from hierbench.protocol import (
    COMPANION_LOSS,
    GEOMETRIES,
    HIER,
    LORENTZ,
    LOSSES,
    POINCARE,
    SUPCON,
    cell_name,
)

# Rows of the development features whose embeddings prove that a checkpoint reloads exactly.
VERIFICATION_ROWS = 256


@dataclass(frozen=True)
class CellSpec:
    """Everything that defines one training run (a factorial cell or a tuning run)."""

    dataset: str
    geometry: str  # "E" Euclidean, "H" Poincaré, or "L" Lorentz (companion cells)
    loss: str  # "R" regression, "S" Taxonomy-SupCon, "A" angle entailment, "hier" (baseline)
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

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> CellSpec:
        """The spec a training record (``cells/<cell>/record.json``) was written from."""
        spec = dict(record["spec"])
        spec["supcon_weights"] = tuple(spec["supcon_weights"])
        return cls(**spec)

    @property
    def cell(self) -> str:
        """The cell's name, e.g. ``HS-2024``."""
        return cell_name(self.geometry, self.loss, self.seed)

    def check(self) -> None:
        """Refuse specs that cannot be trained, naming the cell and the field."""
        geometries, losses = (*GEOMETRIES, LORENTZ), (*LOSSES, HIER, COMPANION_LOSS)
        if self.geometry not in geometries or self.loss not in losses:
            raise ValueError(
                f"{self.dataset} {self.cell}: geometry must be {'|'.join(geometries)} and loss "
                f"{'|'.join(losses)}"
            )
        if self.geometry == LORENTZ and self.curvature is None:
            raise ValueError(
                f"{self.dataset} {self.cell}: a Lorentz cell needs its initial curvature"
            )
        if self.geometry == POINCARE and (self.curvature is None or self.radius is None):
            raise ValueError(
                f"{self.dataset} {self.cell}: a Poincare cell needs curvature and radius"
            )
        if self.loss == SUPCON and self.tau is None:
            raise ValueError(f"{self.dataset} {self.cell}: a Taxonomy-SupCon cell needs tau")


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


@torch.inference_mode()
def embed(
    model: torch.nn.Module,
    features: np.ndarray,
    batch_size: int = 4096,
    *,
    device: torch.device | None = None,
) -> np.ndarray:
    """Embeddings of ``features`` in eval mode, float32, in input order, as a CPU array.

    They are computed on ``device`` (the model is moved there) or, without one, wherever the
    model's parameters are.
    """
    target = device if device is not None else model_device(model)
    model.to(target).eval()
    x = torch.as_tensor(features, dtype=torch.float32)
    parts = [model(x[i : i + batch_size].to(target)).cpu() for i in range(0, len(x), batch_size)]
    return torch.cat(parts).numpy() if parts else np.zeros((0, 0), dtype=np.float32)


def model_device(model: torch.nn.Module) -> torch.device:
    """The device of a model's parameters (the CPU for a model without any)."""
    return next((p.device for p in model.parameters()), torch.device("cpu"))


def checkpoint_writer(model: torch.nn.Module, spec: CellSpec) -> Callable[[Path], None]:
    """A writer of the model's state dict as safetensors, the spec as metadata (for publishing)."""
    tensors = {name: t.detach().cpu().contiguous() for name, t in model.state_dict().items()}
    metadata = {"spec": json.dumps(asdict(spec), sort_keys=True)}
    return lambda path: save_file(tensors, str(path), metadata=metadata)


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
    hyperbolic: dict[str, float] | None = None,
) -> CellSpec:
    """The spec of a cell from the resolved config (``epochs`` overrides, for tuning runs;
    ``hyperbolic`` another Poincaré operating point, for the curvature control)."""
    training, head = config["training"], config["head"]
    hyperbolic = hyperbolic or config["datasets"][dataset]["hyperbolic"]
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
        curvature=hyperbolic["curvature"] if geometry == POINCARE else None,
        radius=hyperbolic["radius"] if geometry == POINCARE else None,
        tau=tau if loss == SUPCON else None,
        regression_targets=dict(training["regression_targets"]),
        supcon_weights=(weights["c"], weights["m"], weights["h"]),
        distance_clip=training["distance_clip_train"],
    )


def verification_digest(embeddings: np.ndarray) -> str:
    """SHA256 of a verification batch's embeddings (float32, C order)."""
    return hashlib.sha256(np.ascontiguousarray(embeddings, dtype=np.float32).tobytes()).hexdigest()


def learned_curvature(model: torch.nn.Module, spec: CellSpec) -> float | None:
    """The curvature evaluation uses: a Lorentz head's learned value, else the spec's."""
    if spec.geometry == LORENTZ:
        return float(model.curvature.detach())
    return spec.curvature
