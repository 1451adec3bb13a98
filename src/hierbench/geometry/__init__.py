"""The trainable head of every cell and the geometries built on it, one module each.

Every cell of the factorial trains the same ``Projector``; the geometry only post-processes its
output and defines the distance. A geometry adds no parameters, buffers or state-dict entries
and draws no random numbers, so heads built after the same ``torch.manual_seed`` start from
identical weights whatever their geometry. A new geometry is a module beside these whose head
class has ``build`` and ``distance``, and one entry in ``HEADS`` (its code in
``hierbench.protocol``).

A researcher's geometry joins as a plain geometry in a file of their own, named in the config
(:mod:`hierbench.geometry.plain`), with no entry here.

``EXTRA_HEADS`` holds heads beside the factorial's two: the Lorentz head (L), which adds two
parameters, its learnable curvature and meru's learnable tangent scale, but likewise draws no
random numbers of its own. The
Euclidean head also comes unnormalised (``normalise=False``), for the companion method's E_A.
"""

from __future__ import annotations

from hierbench.geometry.distances import (
    TEST_DISTANCE_CLIP,
    TRAIN_DISTANCE_CLIP,
    euclidean_distance,
    max_norm,
    poincare_distance,
    poincare_radius,
    sanitise_and_clip,
)
from hierbench.geometry.euclidean import EuclideanHead
from hierbench.geometry.lorentz import (
    LorentzHead,
    expmap0,
    lorentz_distance,
    lorentz_time,
    pairwise_inner,
)
from hierbench.geometry.plain import PlainGeometry, PluginHead
from hierbench.geometry.poincare import PoincareHead, poincare_map
from hierbench.geometry.projector import Projector, count_trainable_parameters
from hierbench.protocol import EUCLIDEAN, HEAD_NAMES, LORENTZ, POINCARE

Head = EuclideanHead | PoincareHead | LorentzHead
HEADS: dict[str, type[EuclideanHead] | type[PoincareHead]] = {
    EUCLIDEAN: EuclideanHead,
    POINCARE: PoincareHead,
}
EXTRA_HEADS: dict[str, type[LorentzHead]] = {LORENTZ: LorentzHead}

__all__ = [
    "EXTRA_HEADS",
    "HEADS",
    "TEST_DISTANCE_CLIP",
    "TRAIN_DISTANCE_CLIP",
    "EuclideanHead",
    "Head",
    "LorentzHead",
    "PlainGeometry",
    "PluginHead",
    "PoincareHead",
    "Projector",
    "build_head",
    "count_trainable_parameters",
    "euclidean_distance",
    "expmap0",
    "lorentz_distance",
    "lorentz_time",
    "max_norm",
    "pairwise_inner",
    "poincare_distance",
    "poincare_map",
    "poincare_radius",
    "sanitise_and_clip",
]


def build_head(
    geometry: str,
    in_dim: int,
    *,
    hidden_dim: int,
    embedding_dim: int,
    dropout: float,
    curvature: float | None = None,
    radius: float | None = None,
    normalise: bool = True,
) -> Head:
    """A fresh head: the geometry's options are checked, then the projector is built (all RNG
    use), then the geometry wraps it. ``normalise=False`` (Euclidean only) keeps the
    projector's raw output instead of projecting it onto the unit sphere."""
    heads = {**HEADS, **EXTRA_HEADS}
    if geometry not in heads:
        raise ValueError(f"geometry must be one of {tuple(HEAD_NAMES)}, got {geometry!r}")
    if not normalise and geometry != EUCLIDEAN:
        raise ValueError(f"normalise=False applies only to geometry 'E', got {geometry!r}")
    options = {"normalise": normalise} if geometry == EUCLIDEAN else {}
    return heads[geometry].build(
        lambda: Projector(in_dim, hidden_dim, embedding_dim, dropout),
        curvature=curvature,
        radius=radius,
        **options,
    )
