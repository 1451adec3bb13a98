"""HIER (Kim et al., CVPR 2023): learnable hierarchical proxies in the Poincaré ball.

Shapes: B items (ball points, (B, D)) with (B, 3) labels of which only the leaf is used, K leaf
classes (class proxies (K, D)), P hierarchical proxies ("LCAs", raw (P, D) parameters mapped
into the ball of curvature −c by ``poincare_proxies``). With N = B + P nodes z = [items; LCAs]
and d = clip(dist_c(z, z)) (N, N):

    sim_items   = exp(−d[:B, :B]) + [same leaf]      (detached; triplets among the items)
    sim_proxies = exp(−d[B:, B:])                    (detached; triplets among the LCAs)
    L_hier      = L_trip(d[:B, B:], items' triplets) + L_trip(d[B:, B:], LCAs' triplets)
    loss        = λ₁·ProxyAnchor(items, class proxies, leaf) + λ₂·L_hier

L_trip, the triplet mining and the Gumbel draws are in ``hierbench.losses.hier_triplets`` (and
re-exported here). This follows the authors' code (tjddus9597/HIER-CVPR23: HIERLoss, ToPoincare,
PALoss_Angle, scripts/DINO/hier_CUB.sh). Deliberate differences: triplet negatives exclude the
anchor itself, and every random draw (initial parameters, triplets, noise) comes from explicit
generators, never the global RNG.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any

import torch
from torch import nn

from hierbench.geometry.distances import TRAIN_DISTANCE_CLIP, poincare_distance, sanitise_and_clip
from hierbench.geometry.validation import check_positive
from hierbench.losses.hier_triplets import (
    check_count,
    gumbel_noise,
    lca_triplet_loss,
    reciprocal_triplets,
    straight_through_lca,
)
from hierbench.losses.objective import Objective
from hierbench.losses.proxy_anchor import proxy_anchor_loss

EXPMAP_NORM_FLOOR = 1e-5  # the authors' clamp of ‖u‖ in expmap0 and of ‖x‖ in project
CLIP_NORM_OFFSET = 1e-5  # added to ‖x‖ in the feature clipping, as the authors
BOUNDARY_MARGIN = 1e-3  # proxies are projected to norm ≤ (1 − 1e-3)/√c, as the authors
TANH_CLAMP = 15.0  # the authors' tanh clamps its argument to ±15
_POSITIVE_FIELDS = ("gumbel_tau", "proxy_clip_r", "pa_alpha")
_NON_NEGATIVE_FIELDS = ("margin", "hier_weight", "metric_weight", "pa_margin", "proxy_lr", "lca_lr")

__all__ = [
    "HierObjective",
    "HierSettings",
    "gumbel_noise",
    "lca_triplet_loss",
    "poincare_proxies",
    "reciprocal_triplets",
    "straight_through_lca",
]


@dataclass(frozen=True)
class HierSettings:
    """HIER's hyperparameters; defaults are the authors' CUB script (scripts/DINO/hier_CUB.sh)."""

    proxies: int = 512  # number of hierarchical proxies P (num_hproxies)
    margin: float = 0.1  # hinge margin δ of the triplet term (mrg)
    topk: int = 20  # neighbourhood size of the reciprocal-neighbour triplets
    triplets_per_anchor: int = 50  # positives and negatives drawn per anchor
    gumbel_tau: float = 0.1  # temperature of the Gumbel-softmax LCA choice
    proxy_clip_r: float = 2.3  # feature clipping radius before expmap0 (clip_r)
    hier_weight: float = 0.5  # λ₂, weight of L_hier
    metric_weight: float = 1.0  # λ₁, weight of the Proxy-Anchor term
    pa_alpha: float = 32.0  # Proxy-Anchor scale α
    pa_margin: float = 0.1  # Proxy-Anchor margin
    proxy_lr: float = 0.05  # class proxies: base lr 5e-6 × lr_scale 1e4
    lca_lr: float = 2.5e-4  # hierarchical proxies: base lr 5e-6 × lr_scale 50

    def check(self) -> None:
        """Raise ValueError naming the first field whose value makes no sense."""
        for name in ("proxies", "topk", "triplets_per_anchor"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"HIER setting {name} must be an integer >= 1, got {value!r}")
        for name in _POSITIVE_FIELDS + _NON_NEGATIVE_FIELDS:
            value, strict = getattr(self, name), name in _POSITIVE_FIELDS
            real = isinstance(value, Real) and not isinstance(value, bool)
            if not real or not math.isfinite(value) or value < 0 or (strict and value == 0):
                raise ValueError(
                    f"HIER setting {name} must be a finite number {'>' if strict else '>='} 0, "
                    f"got {value!r}"
                )
        if self.hier_weight == 0 and self.metric_weight == 0:
            raise ValueError("HIER settings hier_weight and metric_weight are both 0")

    @classmethod
    def from_config(cls, block: Mapping[str, Any]) -> HierSettings:
        """Checked settings from a config block; missing keys take the defaults."""
        if not isinstance(block, Mapping):
            raise ValueError(f"the HIER config block must be a mapping, got {type(block).__name__}")
        known = [field.name for field in dataclasses.fields(cls)]
        unknown = sorted(str(key) for key in block if key not in known)
        if unknown:
            raise ValueError(
                f"unknown HIER setting {unknown[0]!r} (all unknown: {unknown}); "
                f"known settings: {known}"
            )
        settings = cls(**dict(block))
        settings.check()
        return settings


class _RiemannianGradient(torch.autograd.Function):
    """Identity forward; backward scales each row's gradient by (1 − c‖x‖²)²/4 (the authors')."""

    @staticmethod
    def forward(ctx: Any, points: torch.Tensor, curvature: float) -> torch.Tensor:  # type: ignore[override]
        """The ball points unchanged; their squared norms kept for the backward."""
        ctx.save_for_backward((points.detach() ** 2).sum(dim=1, keepdim=True))
        ctx.curvature = curvature
        return points.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:  # type: ignore[override]
        """The Euclidean gradient times the inverse squared conformal factor, (1 − c‖x‖²)²/4."""
        (squared_norm,) = ctx.saved_tensors
        return grad * (1.0 - ctx.curvature * squared_norm) ** 2 / 4.0, None


def poincare_proxies(raw: torch.Tensor, curvature: float, clip_r: float) -> torch.Tensor:
    """Raw (P, D) proxies as Poincaré-ball points (P, D), as the authors' ToPoincare(clip_r).

    x ← x·min(1, r/(‖x‖ + 1e-5)); y = tanh(√c‖x‖)·x/(√c‖x‖) with ‖x‖ ≥ 1e-5 and the tanh
    argument ≤ 15; y is projected to norm ≤ (1 − 1e-3)/√c; the gradient is then rescaled per
    row by (1 − c‖y‖²)²/4 (their RiemannianGradient), the forward value is y.
    """
    if not isinstance(raw, torch.Tensor) or raw.ndim != 2 or not raw.is_floating_point():
        shape = tuple(raw.shape) if isinstance(raw, torch.Tensor) else type(raw).__name__
        raise ValueError(f"raw proxies must be a floating (P, D) tensor, got {shape}")
    check_positive("curvature", curvature)
    check_positive("clip_r", clip_r)
    sqrt_c = math.sqrt(curvature)
    raw_norm = raw.norm(dim=1, keepdim=True) + CLIP_NORM_OFFSET
    clipped = raw * (clip_r / raw_norm).clamp_max(1.0)
    scaled_norm = sqrt_c * clipped.norm(dim=1, keepdim=True).clamp_min(EXPMAP_NORM_FLOOR)
    ball = torch.tanh(scaled_norm.clamp_max(TANH_CLAMP)) * clipped / scaled_norm
    ball_norm = ball.norm(dim=1, keepdim=True).clamp_min(EXPMAP_NORM_FLOOR)
    max_norm = (1.0 - BOUNDARY_MARGIN) / sqrt_c
    projected = torch.where(ball_norm > max_norm, ball / ball_norm * max_norm, ball)
    return _RiemannianGradient.apply(projected, float(curvature))


def _leaf_classes(leaf_codes: Sequence[int]) -> list[int]:
    """The sorted unique leaf codes of the training set (the K classes), checked as integers."""
    codes = [int(code) for code in leaf_codes]
    if any(code != raw for code, raw in zip(codes, leaf_codes, strict=True)):
        raise ValueError("leaf codes must be integers")
    if not codes:
        raise ValueError("HIER needs at least one training leaf class, got no leaf codes")
    return sorted(set(codes))


class HierObjective(Objective):
    """λ₁·Proxy-Anchor (leaf labels) + λ₂·L_hier with learnable class proxies and LCAs.

    Initial parameters come from ``torch.Generator().manual_seed(seed)`` and every noise and
    triplet draw from a second generator seeded ``seed + 1``, so the global RNG stays untouched.
    """

    def __init__(
        self,
        leaf_codes: Sequence[int],
        embedding_dim: int,
        curvature: float,
        settings: HierSettings,
        seed: int,
        distance_clip: float = TRAIN_DISTANCE_CLIP,
    ) -> None:
        super().__init__()
        settings.check()
        check_count("embedding_dim", embedding_dim)
        check_positive("curvature", curvature)
        check_positive("distance_clip", distance_clip)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an integer, got {seed!r}")
        classes = _leaf_classes(leaf_codes)
        self.settings = settings
        self.curvature = float(curvature)
        self.distance_clip = float(distance_clip)
        self.register_buffer("leaf_classes", torch.tensor(classes), persistent=False)
        init = torch.Generator().manual_seed(seed)
        class_proxies = torch.empty(len(classes), embedding_dim)
        nn.init.kaiming_normal_(class_proxies, mode="fan_out", generator=init)
        self.class_proxies = nn.Parameter(class_proxies)
        scale = settings.proxy_clip_r * 0.9 / math.sqrt(embedding_dim)
        self.lcas = nn.Parameter(
            torch.randn(settings.proxies, embedding_dim, generator=init) * scale
        )
        self.generator = torch.Generator().manual_seed(seed + 1)

    def extra_repr(self) -> str:
        """Sizes and curvature in the module's printout."""
        return (
            f"classes={len(self.class_proxies)}, proxies={len(self.lcas)}, "
            f"curvature={self.curvature}"
        )

    def leaf_indices(self, leaf: torch.Tensor) -> torch.Tensor:
        """Leaf codes (B,) as class indices 0..K−1; a code not seen in training is an error."""
        classes = self.leaf_classes.to(leaf.device)
        index = torch.searchsorted(classes, leaf).clamp_max(len(classes) - 1)
        unknown = classes[index] != leaf
        if bool(unknown.any()):
            codes = sorted(set(leaf[unknown].tolist()))
            raise ValueError(
                f"leaf code {codes[0]} is not a training class of this HIER objective "
                f"(unknown codes in the batch: {codes})"
            )
        return index

    def _triplet_term(self, distances: torch.Tensor, similarity: torch.Tensor) -> torch.Tensor:
        """L_trip for the nodes of ``similarity`` against the proxies, with fresh draws."""
        settings = self.settings
        triplets = reciprocal_triplets(
            similarity, settings.topk, settings.triplets_per_anchor, self.generator
        )
        shape = (len(triplets[0]), distances.shape[1])
        noise_ij = gumbel_noise(shape, self.generator)
        noise_ijk = gumbel_noise(shape, self.generator)
        return lca_triplet_loss(
            distances, *triplets, noise_ij, noise_ijk, settings.gumbel_tau, settings.margin
        )

    def forward(
        self, embeddings: torch.Tensor, labels: torch.Tensor
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor | None]]:
        """The loss of a batch of ball points (B, D) with (B, 3) labels, and its parts for the log.

        Only the leaf labels are used. Draws, in order: item triplets, their two noises, proxy
        triplets, their two noises.
        """
        if not isinstance(labels, torch.Tensor) or labels.ndim != 2 or labels.shape[1] != 3:
            shape = tuple(labels.shape) if hasattr(labels, "shape") else type(labels).__name__
            raise ValueError(
                f"labels must be a (B, 3) tensor of leaf/middle/high codes, got {shape}"
            )
        if labels.is_floating_point() or labels.dtype == torch.bool:
            raise ValueError(f"labels must be an integer tensor, got {labels.dtype}")
        width = self.class_proxies.shape[1]
        if embeddings.ndim != 2 or tuple(embeddings.shape) != (len(labels), width):
            raise ValueError(
                f"embeddings must be ({len(labels)}, {width}) for {len(labels)} labels, "
                f"got {tuple(embeddings.shape)}"
            )
        settings, size = self.settings, len(embeddings)
        leaf = labels[:, 0].contiguous()
        classes = self.leaf_indices(leaf)
        proxies = poincare_proxies(self.lcas, self.curvature, settings.proxy_clip_r)
        nodes = torch.cat([embeddings, proxies.to(embeddings.dtype)])
        distances = sanitise_and_clip(
            poincare_distance(nodes, nodes, self.curvature), self.distance_clip
        )
        with torch.no_grad():
            item_similarity = torch.exp(-distances[:size, :size])
            item_similarity += (leaf[:, None] == leaf[None, :]).to(item_similarity.dtype)
            proxy_similarity = torch.exp(-distances[size:, size:])
        hier = self._triplet_term(distances[:size, size:], item_similarity)
        hier = hier + self._triplet_term(distances[size:, size:], proxy_similarity)
        metric = proxy_anchor_loss(
            embeddings,
            self.class_proxies.to(embeddings.dtype),
            classes,
            settings.pa_alpha,
            settings.pa_margin,
        )
        loss = settings.metric_weight * metric + settings.hier_weight * hier
        parts = {
            "loss_c": metric.detach(),
            "loss_m": None,
            "loss_h": None,
            "loss_hier": hier.detach(),
        }
        return loss, parts

    def batch_loss(
        self, model: nn.Module, features: torch.Tensor, labels: torch.Tensor, batch: torch.Tensor
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor | None]]:
        """The trainer's entry: the head's embeddings of the batch, then ``forward``."""
        return self(model(features), labels)

    def param_groups(self, weight_decay: float) -> list[dict[str, Any]]:
        """Optimizer groups: class proxies at ``proxy_lr``, LCAs at ``lca_lr``, both decayed."""
        if isinstance(weight_decay, bool) or not isinstance(weight_decay, Real):
            raise ValueError(f"weight_decay must be a number >= 0, got {weight_decay!r}")
        if not math.isfinite(weight_decay) or weight_decay < 0:
            raise ValueError(f"weight_decay must be a finite number >= 0, got {weight_decay!r}")
        return [
            {
                "name": "hier_class_proxies",
                "params": [self.class_proxies],
                "lr": self.settings.proxy_lr,
                "weight_decay": float(weight_decay),
            },
            {
                "name": "hier_lcas",
                "params": [self.lcas],
                "lr": self.settings.lca_lr,
                "weight_decay": float(weight_decay),
            },
        ]
