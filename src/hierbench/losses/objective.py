"""The one interface every training objective meets, so the trainer has one code path.

An objective turns one batch into a loss: from the cell's head, the batch's features, its (B, 3)
labels and its training-row indices, it returns the loss and the per-level values the training
log records, and it names the optimiser groups of its own parameters. The plain objectives of
the factorial (R, S) have no parameters: they read the batch's (B, B) distances, sanitised and
clipped. The trainable ones (HIER-style, angle entailment) learn proxies, group embeddings or a
temperature beside the head. A new objective subclasses ``Objective`` in a module of its own.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from hierbench.geometry.distances import sanitise_and_clip
from hierbench.losses.registry import BUILT_IN

# The per-level values an objective logs: detached 0-d tensors (NaN where a level is inactive at
# this batch; None where the objective never has it), read by the trainer once per epoch.
LevelValues = dict[str, torch.Tensor | None]


def level_floats(levels: LevelValues) -> dict[str, float | None]:
    """Per-level values as numbers for a reader (None where a level is inactive): one read
    back per value, so never in the update loop."""
    floats = {key: None if value is None else float(value) for key, value in levels.items()}
    return {
        key: None if value is None or math.isnan(value) else value for key, value in floats.items()
    }


DistanceLoss = Callable[[torch.Tensor, torch.Tensor, Any], tuple[torch.Tensor, LevelValues]]


class Objective(nn.Module, ABC):
    """A cell's training objective: the loss of a batch and its own parameters' groups."""

    @abstractmethod
    def batch_loss(
        self, model: nn.Module, features: torch.Tensor, labels: torch.Tensor, batch: torch.Tensor
    ) -> tuple[torch.Tensor, LevelValues]:
        """The loss of one batch and its per-level values for the log; ``batch`` holds the
        batch's training-row indices."""

    def param_groups(self, weight_decay: float) -> list[dict[str, Any]]:
        """AdamW groups of the objective's own parameters, beside the head's (none here)."""
        return []


class DistanceObjective(Objective):
    """A plain objective (``loss``: the factorial's R or S by the spec's loss code, or a
    plugin's, :mod:`hierbench.losses.registry`) on the head's distances of the batch,
    sanitised and clipped at the spec's training clip."""

    def __init__(self, spec: Any, loss: DistanceLoss | None = None) -> None:
        super().__init__()
        if loss is None:
            if spec.loss not in BUILT_IN:
                plain = sorted(BUILT_IN)
                raise ValueError(
                    f"no plain objective for loss {spec.loss!r}; plain losses: {plain}"
                )
            loss = BUILT_IN[spec.loss].loss
        self.spec = spec
        self.loss = loss

    def batch_loss(
        self, model: nn.Module, features: torch.Tensor, labels: torch.Tensor, batch: torch.Tensor
    ) -> tuple[torch.Tensor, LevelValues]:
        """The loss of the batch's (B, B) distances under the spec."""
        embeddings = model(features)
        distances = sanitise_and_clip(
            model.distance(embeddings, embeddings), self.spec.distance_clip
        )
        return self.loss(distances, labels, self.spec)
