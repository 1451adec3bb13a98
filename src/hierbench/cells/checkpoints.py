"""A cell's checkpoint: the head its spec (``hierbench.cells.spec``) builds, the safetensors file
it is saved to, and the embeddings it gives.

Everything that reads a trained cell (the fairness audit, evaluation, figures) needs this and
nothing of the trainer, so it lives apart from ``hierbench.training.trainer``.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from hierbench import jobcost
from hierbench.cells.spec import CellSpec
from hierbench.factorial import GEOMETRY_ENTRY_POINT_GROUP, GeometryError
from hierbench.geometry import PlainGeometry, PluginHead, Projector, build_head
from hierbench.geometry.plain import plugin_pair_scores
from hierbench.plugins import load_plugin
from hierbench.protocol import HEAD_NAMES, LORENTZ

# Rows of the development features whose embeddings prove that a checkpoint reloads exactly.
VERIFICATION_ROWS = 256


def head_for(spec: CellSpec, in_dim: int) -> torch.nn.Module:
    """A head of the spec's architecture and geometry (weights from the current RNG state): a
    geometry added to the factorial is the plugin its spec names."""
    if spec.geometry_plugin is not None:
        projector = Projector(in_dim, spec.hidden_dim, spec.embedding_dim, spec.dropout)
        return PluginHead(projector, load_geometry(spec.geometry_plugin), spec.geometry)
    return build_head(
        spec.geometry,
        in_dim,
        hidden_dim=spec.hidden_dim,
        embedding_dim=spec.embedding_dim,
        dropout=spec.dropout,
        curvature=spec.curvature,
        radius=spec.radius,
        normalise=spec.normalise,
    )


@functools.cache
def load_geometry(reference: str) -> PlainGeometry:
    """The plain geometry a config entry names (``file.py:NAME``, ``package.module:NAME`` or
    ``entry-point:NAME``), loaded once per process."""
    key = f"plugins.geometries ({reference})"
    found = load_plugin(reference, key, GEOMETRY_ENTRY_POINT_GROUP, GeometryError)
    if not isinstance(found, PlainGeometry):
        raise GeometryError(
            f"{key}: {reference!r} is a {type(found).__name__}, not a "
            "hierbench.geometry.plain.PlainGeometry"
        )
    return found


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
    metadata = {"spec": json.dumps(spec.as_dict(), sort_keys=True)}
    return lambda path: save_file(tensors, str(path), metadata=metadata)


@jobcost.charged(jobcost.LOADING)
def load_checkpoint(path: str | Path, spec: CellSpec, in_dim: int) -> torch.nn.Module:
    """A fresh head of the spec's architecture with the checkpoint's weights, in eval mode."""
    model = head_for(spec, in_dim)
    model.load_state_dict(load_file(str(path)), strict=True)
    return model.eval()


def verification_digest(embeddings: np.ndarray) -> str:
    """SHA256 of a verification batch's embeddings (float32, C order)."""
    return hashlib.sha256(np.ascontiguousarray(embeddings, dtype=np.float32).tobytes()).hexdigest()


def learned_curvature(model: torch.nn.Module, spec: CellSpec) -> float | None:
    """The curvature evaluation uses: a Lorentz head's learned value, else the spec's."""
    if spec.geometry == LORENTZ:
        return float(model.curvature.detach())
    return spec.curvature


def head_ranking(model: torch.nn.Module, spec: CellSpec, clip: float) -> dict[str, Any]:
    """The metric engine's distance settings for a cell's head: its geometry's distance (a
    Lorentz head's at its learned curvature) clipped at ``clip``, or, for a geometry added to
    the factorial, the plugin's own distances as the ranking scores."""
    if isinstance(model, PluginHead):
        return {"pair_scores": plugin_pair_scores(model.plain, clip)}
    return {
        "geometry": HEAD_NAMES[spec.geometry],
        "curvature": learned_curvature(model, spec),
        "distance_clip": clip,
    }
