"""The trainable projector every cell of the factorial shares, whatever its geometry."""

from __future__ import annotations

import torch
from torch import nn


class Projector(nn.Module):
    """Linear → BatchNorm → ReLU → Dropout → Linear: the one trainable head of every cell."""

    def __init__(
        self, in_dim: int, hidden_dim: int = 256, out_dim: int = 32, dropout: float = 0.1
    ) -> None:
        super().__init__()
        for name, value in (("in_dim", in_dim), ("hidden_dim", hidden_dim), ("out_dim", out_dim)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"Projector {name} must be a positive integer, got {value!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"Projector dropout must be in [0, 1), got {dropout!r}")
        self.hidden = nn.Linear(in_dim, hidden_dim)
        self.norm = nn.BatchNorm1d(hidden_dim)
        self.activation = nn.ReLU()
        self.dropout = nn.Dropout(dropout)
        self.output = nn.Linear(hidden_dim, out_dim)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """Project (batch, in_dim) features to (batch, out_dim)."""
        hidden = self.dropout(self.activation(self.norm(self.hidden(features))))
        return self.output(hidden)


def count_trainable_parameters(module: nn.Module) -> int:
    """Number of scalar parameters that the optimiser updates (requires_grad)."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)
