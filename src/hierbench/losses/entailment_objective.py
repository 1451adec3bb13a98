"""The angle-entailment objective (A) as a cell trains it: pairs from boxes, cross-image partners
and the taxonomy (``hierbench.losses.entailment_pairs``), scored by the angle-entailment loss in its
fused form (``fused_angle_entailment_loss``) with the head's geometry (Euclidean cones for E, the
Lorentz model at the head's learned curvature for L).

The E head must be unnormalised: on the unit sphere ext(x, y) = ext(y, x) = arccos(−‖x − y‖/2),
so the parent → child logits (π − ext)/τ and the child → parent logits ext/τ pull every pair in
opposite directions, and nothing can place a parent nearer the origin than its children. The
objective refuses a normalising E head (``cellspec.SPHERE_SYMMETRY`` says why).

Images and crops pass through the head separately, so the head's BatchNorm normalises each by
its own batch, as the factorial's cells normalise their images. The crops' pass leaves the
running statistics alone (``running_statistics_kept``). Otherwise those statistics, which
normalise the images at retrieval, would be about half crop statistics, which training never
applied to an image. On the synthetic case of ``benchmarks/companion_sanity.py`` that mismatch
cost L_A 0.047 leaf mAP (3 of 3 seeds). One joint pass of images and crops is no way out: there
the parent → child term stayed at chance and the held-out retrieval fell below the frozen
features (2 of 2 seeds measured).

Its own parameters, the middle and high group embeddings (tangent vectors at the origin, mapped
by the head's geometry) and the learnable temperature, are initialised from a generator of their
own (``companion.init_seed``), never from the global RNG: the head's initial weights and dropout
stream stay those of every other cell of the seed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from torch import nn

from hierbench.cells.companion import CompanionError, PairSources, pair_sources
from hierbench.cells.spec import SPHERE_SYMMETRY, CellSpec
from hierbench.geometry.lorentz import expmap0
from hierbench.losses.entailment import LearnableTemperature
from hierbench.losses.entailment_fused import fused_angle_entailment_loss
from hierbench.losses.entailment_pairs import batch_pairs, cross_image_partners
from hierbench.losses.objective import Objective

GROUP_INIT_SCALE = 0.1  # group embeddings start near the origin: generic parents


class EntailmentObjective(Objective):
    """Loss A of one cell (``geometry`` "E" or "L") over the training rows it was built for.

    ``crops`` (N, F) are the crop features of the training rows (None without crop pairs),
    ``groups`` (N, 2) their middle and high group indices, ``high_of_middle`` (M,) each middle
    group's high group, ``partners`` (N, K) the cross-image partner rows.
    """

    def __init__(
        self,
        geometry: str,
        embedding_dim: int,
        sources: PairSources,
        groups: torch.Tensor,
        high_of_middle: torch.Tensor,
        *,
        crops: torch.Tensor | None,
        partners: torch.Tensor | None,
        temperature: float,
        init_seed: int,
    ) -> None:
        super().__init__()
        if geometry not in ("E", "L"):
            raise ValueError(
                f"the angle-entailment objective runs on heads E or L, not {geometry!r}"
            )
        if sources.needs_crops and crops is None:
            raise ValueError("box and cross-image pairs need the training rows' crop features")
        self.geometry, self.sources = geometry, sources
        self.register_buffer("groups", groups.long(), persistent=False)
        self.register_buffer("high_of_middle", high_of_middle.long(), persistent=False)
        # Buffers (not saved with the objective), so that ``.to(device)`` moves them too.
        self.register_buffer("crops", crops, persistent=False)
        self.register_buffer("partners", partners, persistent=False)
        generator = torch.Generator().manual_seed(init_seed)
        n_middle = len(high_of_middle) if sources.taxonomy else 0
        n_high = int(high_of_middle.max()) + 1 if n_middle else 0
        self.middle = nn.Parameter(
            torch.randn((n_middle, embedding_dim), generator=generator) * GROUP_INIT_SCALE
        )
        self.high = nn.Parameter(
            torch.randn((n_high, embedding_dim), generator=generator) * GROUP_INIT_SCALE
        )
        self.temperature = LearnableTemperature(temperature)

    def require_radial_freedom(self, model: nn.Module) -> None:
        """Refuse a Euclidean head that normalises onto the unit sphere, where the two
        directions of loss A cancel (``SPHERE_SYMMETRY``)."""
        if self.geometry == "E" and getattr(model, "normalise", False):
            raise ValueError(f"{type(model).__name__} normalises its output: {SPHERE_SYMMETRY}")

    def _place(self, model: nn.Module, tangent: torch.Tensor) -> torch.Tensor:
        """Group embeddings in the head's space (space components on the hyperboloid for L)."""
        return expmap0(tangent, model.curvature) if self.geometry == "L" else tangent

    def batch_loss(
        self, model: nn.Module, features: torch.Tensor, labels: torch.Tensor, batch: torch.Tensor
    ) -> tuple[torch.Tensor, dict[str, float | None]]:
        """Loss A of one batch (``labels`` (B, 3) leaf/middle/high codes are not used: the
        objective's own group indices of the batch rows are)."""
        self.require_radial_freedom(model)
        images = model(features)
        pairs = batch_pairs(
            batch, self.groups[batch], self.sources, self.partners, self.high_of_middle
        )
        parents, children = [images], []
        if len(pairs.crop_rows):
            with running_statistics_kept(model):
                children.append(model(self.crops.index_select(0, pairs.crop_rows)))
        if self.sources.taxonomy:
            middle, high = self._place(model, self.middle), self._place(model, self.high)
            parents += [middle, high]
            children += [middle, images]
        curvature = model.curvature if self.geometry == "L" else None
        loss, parts = fused_angle_entailment_loss(
            torch.cat(parents), torch.cat(children), pairs.entails, self.temperature(), curvature
        )
        return loss, {"loss_c": None, "loss_m": None, "loss_h": None, **parts}

    def param_groups(self, weight_decay: float) -> list[dict[str, Any]]:
        """Group embeddings with the head's weight decay; the temperature without any."""
        return [
            {"params": [self.middle, self.high], "weight_decay": weight_decay, "name": "groups"},
            {"params": list(self.temperature.parameters()), "weight_decay": 0.0, "name": "tau"},
        ]


@contextmanager
def running_statistics_kept(model: nn.Module) -> Iterator[None]:
    """Within the block the model's batch-normalisation layers normalise by their batch's
    statistics but leave their running statistics (and batch count) untouched: the crops' pass
    must not move the statistics that normalise the images at retrieval, where no crop is."""
    layers = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    tracked = [layer.track_running_stats for layer in layers]
    try:
        for layer in layers:
            layer.track_running_stats = False
        yield
    finally:
        for layer, value in zip(layers, tracked, strict=True):
            layer.track_running_stats = value


def group_indices(labels: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """(N, 2) middle and high group indices of the training rows (0-based over the training
    groups) and (M,) each middle group's high group index."""
    middles, middle_index = np.unique(labels[:, 1], return_inverse=True)
    _, high_index = np.unique(labels[:, 2], return_inverse=True)
    high_of_middle = np.full(len(middles), -1, dtype=np.int64)
    high_of_middle[middle_index] = high_index
    if len(np.unique(np.column_stack([middle_index, high_index]), axis=0)) != len(middles):
        raise CompanionError("a middle group of the training data sits under two high groups")
    groups = np.column_stack([middle_index, high_index]).astype(np.int64)
    return torch.from_numpy(groups), torch.from_numpy(high_of_middle)


def companion_objective(
    spec: CellSpec, config: dict[str, Any], labels: np.ndarray, crops: np.ndarray | None
) -> EntailmentObjective:
    """The loss-A objective of a cell over its training rows (``labels`` (N, 3) codes, ``crops``
    (N, F) crop features in the same row order); cross-image partners drawn with the seed."""
    sources = pair_sources(config)
    block = config["companion"]
    groups, high_of_middle = group_indices(labels)
    leaves = torch.as_tensor(labels[:, 0], dtype=torch.long)
    generator = torch.Generator().manual_seed(spec.seed)
    partners = cross_image_partners(leaves, sources.cross_image, generator)
    return EntailmentObjective(
        spec.geometry,
        spec.embedding_dim,
        sources,
        groups,
        high_of_middle,
        crops=None if crops is None else torch.as_tensor(crops, dtype=torch.float32),
        partners=partners if sources.cross_image else None,
        temperature=float(block["temperature"]),
        init_seed=int(block["init_seed"]),
    )
