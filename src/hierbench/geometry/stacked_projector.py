"""K projectors as one module: the first piece of a cell bundle (K heads trained together).

Each cell's ``Projector`` (Linear → BatchNorm → ReLU → Dropout → Linear) becomes one slice of
stacked weights of shape (K, …), so one batched forward, one backward and one optimiser step
serve every cell. Each slice starts as the cell's own projector (built from its seed, so its
initial-weight hash is the one the fairness audit expects) and is written back into one
(:meth:`StackedProjector.projector`), so a cell's checkpoint keeps today's state-dict keys.

BatchNorm normalises each cell over its own batch (biased variance) and updates each cell's
running statistics with the unbiased one, as ``nn.BatchNorm1d`` does; dropout draws each
cell's mask from that cell's generator with the same call ``nn.Dropout`` makes on the CPU, so
a cell's masks do not depend on which other cells share its bundle.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from hierbench.geometry.projector import Projector


def _stacked(tensors: list[torch.Tensor]) -> nn.Parameter:
    """A parameter of the cells' tensors stacked on a new leading dimension (a copy)."""
    return nn.Parameter(torch.stack([tensor.detach().clone() for tensor in tensors]))


class StackedProjector(nn.Module):
    """The projectors of K cells as one module with weights (K, …); inputs are (K, B, in_dim),
    one batch per cell, outputs (K, B, out_dim)."""

    def __init__(self, projectors: Sequence[Projector]) -> None:
        super().__init__()
        if not projectors:
            raise ValueError("a stacked projector needs at least one projector")
        shapes = {
            (p.hidden.in_features, p.hidden.out_features, p.output.out_features) for p in projectors
        }
        settings = {(p.norm.eps, p.norm.momentum, p.dropout.p) for p in projectors}
        if len(shapes) != 1 or len(settings) != 1:
            raise ValueError(
                f"stacked projectors must share their shapes and settings, got {sorted(shapes)} "
                f"and {sorted(settings)}"
            )
        self.eps, self.momentum, self.dropout = settings.pop()
        self.hidden_weight = _stacked([p.hidden.weight.T for p in projectors])  # (K, in, hid)
        self.hidden_bias = _stacked([p.hidden.bias for p in projectors])  # (K, hid)
        self.norm_weight = _stacked([p.norm.weight for p in projectors])
        self.norm_bias = _stacked([p.norm.bias for p in projectors])
        self.output_weight = _stacked([p.output.weight.T for p in projectors])  # (K, hid, out)
        self.output_bias = _stacked([p.output.bias for p in projectors])
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            values = torch.stack([getattr(p.norm, name).detach().clone() for p in projectors])
            self.register_buffer(name, values)

    @property
    def cells(self) -> int:
        """K, the number of stacked projectors."""
        return self.hidden_weight.shape[0]

    def forward(
        self, features: torch.Tensor, generators: Sequence[torch.Generator] | None = None
    ) -> torch.Tensor:
        """Project each cell's (B, in_dim) batch; in training, each cell's dropout mask comes
        from its generator (``generators``, one per cell, required when dropout is on)."""
        if features.ndim != 3 or features.shape[0] != self.cells:
            raise ValueError(
                f"features must be ({self.cells}, batch, in_dim), got {tuple(features.shape)}"
            )
        hidden = torch.baddbmm(self.hidden_bias[:, None, :], features, self.hidden_weight)
        hidden = torch.relu(self._normalise(hidden))
        if self.training and self.dropout > 0:
            hidden = hidden * self._dropout_masks(hidden, generators)
        return torch.baddbmm(self.output_bias[:, None, :], hidden, self.output_weight)

    def _normalise(self, hidden: torch.Tensor) -> torch.Tensor:
        """BatchNorm per cell: batch statistics in training (running ones updated), running
        statistics in evaluation."""
        if self.training:
            mean = hidden.mean(dim=1)
            centred = hidden - mean[:, None, :]
            variance = (centred * centred).mean(dim=1)  # two passes: 5x var_mean's speed here
            with torch.no_grad():
                size = hidden.shape[1]
                unbiased = variance * (size / max(size - 1, 1))
                self.running_mean.lerp_(mean.detach(), self.momentum)
                self.running_var.lerp_(unbiased.detach(), self.momentum)
                self.num_batches_tracked.add_(1)
        else:
            mean, variance = self.running_mean, self.running_var
        scale = self.norm_weight * torch.rsqrt(variance + self.eps)
        return (hidden - mean[:, None, :]) * scale[:, None, :] + self.norm_bias[:, None, :]

    def _dropout_masks(
        self, hidden: torch.Tensor, generators: Sequence[torch.Generator] | None
    ) -> torch.Tensor:
        """Each cell's inverted-dropout mask (0 or 1/(1 − p)) drawn from its own generator."""
        if generators is None or len(generators) != self.cells:
            raise ValueError(f"dropout needs one generator per cell ({self.cells})")
        keep = 1.0 - self.dropout
        masks = torch.empty_like(hidden)
        for cell, generator in enumerate(generators):
            masks[cell].bernoulli_(keep, generator=generator)
        return masks.div_(keep)

    def projector(self, cell: int) -> Projector:
        """Cell ``cell``'s slice as a ``Projector`` (its state-dict keys as a cell's own)."""
        in_dim, hidden_dim = self.hidden_weight.shape[1:]
        single = Projector(in_dim, hidden_dim, self.output_weight.shape[2], self.dropout)
        single.to(self.hidden_weight.dtype)
        state = {
            "hidden.weight": self.hidden_weight[cell].T,
            "hidden.bias": self.hidden_bias[cell],
            "norm.weight": self.norm_weight[cell],
            "norm.bias": self.norm_bias[cell],
            "norm.running_mean": self.running_mean[cell],
            "norm.running_var": self.running_var[cell],
            "norm.num_batches_tracked": self.num_batches_tracked[cell],
            "output.weight": self.output_weight[cell].T,
            "output.bias": self.output_bias[cell],
        }
        single.load_state_dict({k: v.detach().clone().contiguous() for k, v in state.items()})
        return single.train(self.training)
