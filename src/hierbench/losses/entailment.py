"""Angle-entailment contrastive objective (Wang et al., ICCV 2025, hyperbolic visual hierarchies).

Points are given by their space components only (D,). The exterior angle ext(x, y) at x of the
geodesic x → y is the geometry's (``hierbench.geometry.lorentz.exterior_angle`` at curvature −c,
``hierbench.geometry.euclidean.exterior_angle`` for Euclidean cones), pairwise:
x (N_x, D), y (N_y, D) → (N_x, N_y), values in [0, π], finite everywhere by the clamps of
``hierbench.geometry.cones``.

The loss, with parents p (P, D), children q (C, D), entails E (P, C) bool and temperature τ:

    parent → child: logits β(i, j) = (π − ext(p_i, q_j))/τ over all children j,
                    L_pc = mean_{i: E_i· ≠ ∅} −mean_{j: E_ij} log softmax_j β(i, ·)
    child → parent: logits α(j, i) = ext(q_j, p_i)/τ over all parents i,
                    L_cp = mean_{j: E_·j ≠ ∅} −mean_{i: E_ij} log softmax_i α(j, ·)
    loss = L_pc + L_cp

Everything is whole-matrix work with masked sums (no loops over P or C, no boolean indexing).
The checks read the temperature (and a tensor curvature) back once per call, as does the
no-pair check and the two logged terms.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Real

import torch
from torch import nn

from hierbench.geometry.validation import check_pair

MIN_TEMPERATURE = 0.01  # CLIP's logit-scale cap of 100
MAX_TEMPERATURE = 1.0  # CLIP's logit-scale floor of 1

AngleFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class NoEntailmentPairError(ValueError):
    """An entailment matrix without a single True entry: the loss has no anchor."""


def _check_loss_inputs(
    parents: torch.Tensor, children: torch.Tensor, entails: torch.Tensor, temperature: torch.Tensor
) -> None:
    """Raise unless parents (P, D), children (C, D), entails (P, C) bool and τ > 0 fit."""
    check_pair(parents, children, ("parents", "children"))
    expected = (len(parents), len(children))
    if not isinstance(entails, torch.Tensor) or tuple(entails.shape) != expected:
        shape = tuple(entails.shape) if isinstance(entails, torch.Tensor) else type(entails)
        raise ValueError(
            f"entails must be a {expected} (parents, children) matrix for parents "
            f"{tuple(parents.shape)} and children {tuple(children.shape)}, got {shape}"
        )
    if entails.dtype != torch.bool:
        raise ValueError(f"entails must be a bool tensor, got {entails.dtype}")
    if not isinstance(temperature, torch.Tensor) or temperature.ndim != 0:
        shape = tuple(temperature.shape) if isinstance(temperature, torch.Tensor) else temperature
        raise ValueError(f"temperature must be a 0-d tensor, got {shape!r}")
    value = float(temperature.detach())
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"temperature must be finite and > 0, got {value!r}")


def _pairwise_angles(
    angle_fn: AngleFn, a: torch.Tensor, b: torch.Tensor, names: str
) -> torch.Tensor:
    """angle_fn(a, b), checked to be the (N_a, N_b) matrix of pairwise angles."""
    angles = angle_fn(a, b)
    expected = (len(a), len(b))
    if not isinstance(angles, torch.Tensor) or tuple(angles.shape) != expected:
        shape = tuple(angles.shape) if isinstance(angles, torch.Tensor) else type(angles)
        raise ValueError(f"angle_fn({names}) must return a {expected} matrix, got {shape}")
    return angles


def multi_positive_nce(logits: torch.Tensor, positives: torch.Tensor, dim: int = 1) -> torch.Tensor:
    """mean over anchors with a positive of −mean_{positives} log softmax; the anchors lie
    along ``dim`` (1: each row is an anchor, softmax over its columns; 0: each column is)."""
    log_prob = logits - torch.logsumexp(logits, dim=dim, keepdim=True)
    counts = positives.sum(dim=dim)
    per_anchor = torch.where(positives, log_prob, 0.0).sum(dim=dim) / counts.clamp_min(1)
    return -per_anchor.sum() / (counts > 0).sum().clamp_min(1)


def require_entailment_pairs(
    parents: torch.Tensor, children: torch.Tensor, entails: torch.Tensor
) -> None:
    """Raise ``NoEntailmentPairError`` when entails has no True entry."""
    if not bool(entails.any()):
        raise NoEntailmentPairError(
            f"entails has no True entry: none of the {len(parents)} parents entails any of the "
            f"{len(children)} children, so the entailment loss has no anchor"
        )


def entailment_nce(
    parent_child: torch.Tensor,
    child_parent: torch.Tensor,
    entails: torch.Tensor,
    temperature: torch.Tensor,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """L_pc + L_cp from the angles, both (P, C): ``parent_child[i, j]`` = ext(p_i, q_j) and
    ``child_parent[i, j]`` = ext(q_j, p_i) (the child → parent softmax runs down the columns)."""
    loss_pc = multi_positive_nce((math.pi - parent_child) / temperature, entails, dim=1)
    loss_cp = multi_positive_nce(child_parent / temperature, entails, dim=0)
    parts = {"loss_parent_child": loss_pc.detach(), "loss_child_parent": loss_cp.detach()}
    return loss_pc + loss_cp, parts


def angle_entailment_loss(
    parents: torch.Tensor,
    children: torch.Tensor,
    entails: torch.Tensor,
    temperature: torch.Tensor,
    angle_fn: AngleFn,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """L_pc + L_cp for parents (P, D), children (C, D), entails (P, C), and the two terms.

    ``angle_fn(a, b)`` gives pairwise exterior angles (N_a, N_b), e.g.
    ``geometry.lorentz.angle_fn(c)`` or ``geometry.euclidean.exterior_angle``. Raises
    ``NoEntailmentPairError`` when entails is all False.
    The readable reference: cells train with ``hierbench.losses.entailment_fused``'s
    ``fused_angle_entailment_loss``, the same loss with both angle directions in one pass.
    """
    _check_loss_inputs(parents, children, entails, temperature)
    entails = entails.to(parents.device)
    require_entailment_pairs(parents, children, entails)
    parent_child = _pairwise_angles(angle_fn, parents, children, "parents, children")
    child_parent = _pairwise_angles(angle_fn, children, parents, "children, parents")
    return entailment_nce(parent_child, child_parent.T, entails, temperature)


class LearnableTemperature(nn.Module):
    """τ = exp(−log_inverse), a learnable temperature kept in [minimum, maximum].

    ``log_inverse`` starts at log(1/initial) (no random draw). As CLIP and meru do with their
    logit scale, the parameter itself is clamped in place (outside autograd) to
    [log(1/maximum), log(1/minimum)] on every forward, so it cannot drift past a bound where the
    clamp would leave it without a gradient; τ is then in [minimum, maximum] up to rounding.
    """

    def __init__(
        self,
        initial: float = 0.07,
        minimum: float = MIN_TEMPERATURE,
        maximum: float = MAX_TEMPERATURE,
    ) -> None:
        super().__init__()
        for name, value in (("initial", initial), ("minimum", minimum), ("maximum", maximum)):
            if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
                raise ValueError(f"temperature {name} must be a finite number, got {value!r}")
        if not 0 < minimum <= initial <= maximum:
            raise ValueError(
                "temperatures must satisfy 0 < minimum <= initial <= maximum, got "
                f"minimum={minimum!r}, initial={initial!r}, maximum={maximum!r}"
            )
        self.bounds = (math.log(1.0 / maximum), math.log(1.0 / minimum))
        self.log_inverse = nn.Parameter(torch.tensor(math.log(1.0 / initial)))

    def extra_repr(self) -> str:
        """The temperature range in the module's printout."""
        low, high = (math.exp(-bound) for bound in reversed(self.bounds))
        return f"range=[{low:g}, {high:g}]"

    def forward(self) -> torch.Tensor:
        """The temperature τ (0-d), after clamping ``log_inverse`` into its range."""
        self.log_inverse.data.clamp_(*self.bounds)
        return torch.exp(-self.log_inverse)
