"""Embedding views (issue #63): a cell's test embeddings drawn in two dimensions, coloured by
high group, with the class prototypes marked.

- Hyperbolic cells (Poincaré ``H``, the Lorentz ``L``): the points in the Poincaré ball of
  their curvature c, scaled by √c onto the unit ball (a Lorentz point by geoopt's
  ``lorentz_to_poincare``, the isometry between the two models); the log map at the origin
  (geoopt's ``PoincareBall(1).logmap0``); the two principal directions of those tangent vectors
  about the origin; the exponential map back into the unit disk. A point's distance from the
  disk's origin is that of its tangent vector's part in the plane: its depth in the hierarchy,
  never more than its true distance from the origin, and equal to it for a cell whose
  embeddings span a plane (then the view is an isometry).
- Cells on the unit sphere (the factorial's ``E``, the L2-normalised frozen features): the
  points projected onto their two principal directions about the origin (the sphere seen
  along the rest: inside the unit circle, on it where a point lies in the plane).
- Unnormalised Euclidean embeddings (the companion's ``E_A``): the same projection, in the
  plane without a bound.

A class prototype is the class mean mapped the same way: of the tangent vectors at the origin
(hyperbolic, as ``effects.figures.prototype_norms``), of the unit vectors put back on the
sphere, or of the plain vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Circle

from hierbench.protocol import EUCLIDEAN, LORENTZ, POINCARE

DISK, SPHERE, PLANE = "Poincaré disk", "sphere", "plane"
HIGH = 2  # the label column of the high level
MAX_POINTS = 2000  # drawn per panel at most (a seeded sample); prototypes use every point
PANEL_SIZE = 3.2
MAX_COLUMNS = 4
GROUP_COLOURS = 20  # tab20's colours: high groups beyond twenty share them


@dataclass(frozen=True)
class EmbeddingView:
    """A cell's 2-D view: its points, its class prototypes (one per leaf class, in class code
    order), and how it was drawn (``DISK``, ``SPHERE`` or ``PLANE``)."""

    points: np.ndarray
    prototypes: np.ndarray
    kind: str

    @property
    def bounded(self) -> bool:
        """Whether the view lies in the unit disk (drawn with its circle)."""
        return self.kind != PLANE


def principal_plane(vectors: np.ndarray) -> np.ndarray:
    """The (2, D) orthonormal directions that keep the most of the rows' squared length, about
    the origin rather than the mean (so the origin stays the origin): the first two right
    singular vectors, each signed so that its largest entry is positive."""
    matrix = np.asarray(vectors, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[1] < 2 or len(matrix) == 0:
        raise ValueError(f"a 2-D view needs (n, d ≥ 2) vectors, got shape {matrix.shape}")
    _, _, right = np.linalg.svd(matrix, full_matrices=False)
    directions = right[:2]
    largest = np.abs(directions).argmax(axis=1)
    signs = np.sign(directions[np.arange(len(directions)), largest])
    return directions * signs[:, None]


def unit_ball_points(embeddings: np.ndarray, geometry: str, curvature: float) -> np.ndarray:
    """Hyperbolic embeddings as points of the unit Poincaré ball: the ball of curvature c
    scaled by √c (distances there are √c times the cell's); a Lorentz cell's space components
    through geoopt's ``lorentz_to_poincare`` (the time component from ``lorentz_time``)."""
    import geoopt.manifolds.lorentz.math as lorentz_math
    import torch

    from hierbench.geometry import lorentz_time

    points = torch.as_tensor(np.asarray(embeddings), dtype=torch.float64)
    if geometry == POINCARE:
        return (points * np.sqrt(curvature)).numpy()
    if geometry == LORENTZ:
        full = torch.cat([lorentz_time(points, curvature), points], dim=-1)
        k = torch.tensor(1.0 / curvature, dtype=torch.float64)  # geoopt's Lorentz(k): k = 1/c
        return lorentz_math.lorentz_to_poincare(full, k).numpy()
    raise ValueError(f"a disk view is drawn for geometry {POINCARE} or {LORENTZ}, not {geometry!r}")


def _class_means(vectors: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """The mean row of each class, in class code order."""
    codes, inverse = np.unique(classes, return_inverse=True)
    sums = np.zeros((len(codes), vectors.shape[1]))
    np.add.at(sums, inverse, vectors)
    return sums / np.bincount(inverse)[:, None]


def disk_view(ball: np.ndarray, classes: np.ndarray) -> EmbeddingView:
    """The Poincaré-disk view of unit-ball points (see the module's docstring)."""
    import geoopt
    import torch

    unit = geoopt.PoincareBall(c=torch.tensor(1.0, dtype=torch.float64))
    tangent = unit.logmap0(torch.as_tensor(ball, dtype=torch.float64)).numpy()
    plane = principal_plane(tangent)

    def into_disk(vectors: np.ndarray) -> np.ndarray:
        return unit.expmap0(torch.as_tensor(vectors @ plane.T)).numpy()

    return EmbeddingView(into_disk(tangent), into_disk(_class_means(tangent, classes)), DISK)


def sphere_view(embeddings: np.ndarray, classes: np.ndarray) -> EmbeddingView:
    """Unit vectors (normalised here) projected onto their principal plane about the origin;
    prototypes: each class's mean direction, back on the sphere, projected alike."""
    unit = _normalised(np.asarray(embeddings, dtype=np.float64))
    plane = principal_plane(unit)
    means = _normalised(_class_means(unit, classes))
    return EmbeddingView(unit @ plane.T, means @ plane.T, SPHERE)


def plane_view(embeddings: np.ndarray, classes: np.ndarray) -> EmbeddingView:
    """Unbounded Euclidean embeddings projected onto their principal plane about the origin;
    prototypes: the class means, projected alike."""
    vectors = np.asarray(embeddings, dtype=np.float64)
    plane = principal_plane(vectors)
    return EmbeddingView(vectors @ plane.T, _class_means(vectors, classes) @ plane.T, PLANE)


def _normalised(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (a zero row stays zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def embedding_view(
    embeddings: np.ndarray,
    classes: np.ndarray,
    geometry: str,
    *,
    curvature: float | None = None,
    normalised: bool = True,
) -> EmbeddingView:
    """The view of a cell's embeddings by its geometry: a hyperbolic one in the disk, a
    Euclidean one on the sphere (``normalised``) or in the plane."""
    if geometry in (POINCARE, LORENTZ):
        if curvature is None or not curvature > 0:
            raise ValueError(f"a {geometry} cell's view needs its curvature, got {curvature!r}")
        return disk_view(unit_ball_points(embeddings, geometry, curvature), classes)
    if geometry != EUCLIDEAN:
        raise ValueError(f"no embedding view for geometry {geometry!r}")
    return (sphere_view if normalised else plane_view)(embeddings, classes)


@dataclass(frozen=True)
class ArmView:
    """One panel of the figure: its title (the arm, how it is drawn), the arm's view, and
    each point's and prototype's high-group colour index."""

    title: str
    view: EmbeddingView
    point_groups: np.ndarray
    prototype_groups: np.ndarray


def group_indices(high_codes: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Each code's place among ``groups`` (sorted high codes)."""
    return np.searchsorted(groups, high_codes)


def group_colours(places: np.ndarray) -> np.ndarray:
    """The tab20 colour of each group's place: the ten dark shades first, then the ten light
    ones (tab20 pairs a dark and a light shade of one hue), then again."""
    places = np.asarray(places)
    return (2 * places + (places // (GROUP_COLOURS // 2)) % 2) % GROUP_COLOURS


def shown_rows(count: int, seed: int, limit: int = MAX_POINTS) -> np.ndarray:
    """The rows a panel draws: all of them, or a seeded sample of ``limit`` in row order."""
    if count <= limit:
        return np.arange(count)
    return np.sort(np.random.default_rng(seed).choice(count, limit, replace=False))


def _draw_panel(axis: Axes, panel: ArmView, shown: np.ndarray) -> None:
    """One arm's points coloured by high group, its prototypes as black-edged stars, the unit
    circle and its centre where the view is bounded."""
    cmap = "tab20"
    points = panel.view.points[shown]
    axis.scatter(
        points[:, 0],
        points[:, 1],
        c=group_colours(panel.point_groups[shown]),
        cmap=cmap,
        vmin=0,
        vmax=GROUP_COLOURS - 1,
        s=5,
        alpha=0.6,
        linewidths=0,
    )
    protos = panel.view.prototypes
    axis.scatter(
        protos[:, 0],
        protos[:, 1],
        c=group_colours(panel.prototype_groups),
        cmap=cmap,
        vmin=0,
        vmax=GROUP_COLOURS - 1,
        s=60,
        marker="*",
        edgecolors="k",
        linewidths=0.6,
    )
    if panel.view.bounded:
        axis.add_patch(Circle((0, 0), 1.0, fill=False, color="0.3", linewidth=0.8))
        axis.plot([0], [0], marker="+", color="0.3", markersize=6)
        axis.set_xlim(-1.05, 1.05)
        axis.set_ylim(-1.05, 1.05)
    axis.set_aspect("equal")
    axis.set_xticks([])
    axis.set_yticks([])
    axis.set_title(panel.title, fontsize=8)


def views_figure(panels: Sequence[ArmView], title: str, seed: int) -> Figure:
    """Every arm's view as a panel (at most ``MAX_COLUMNS`` a row), the same high groups in
    the same colours, each panel's points a seeded sample when there are many."""
    columns = min(MAX_COLUMNS, max(len(panels), 1))
    rows = -(-len(panels) // columns)
    figure = Figure(figsize=(PANEL_SIZE * columns, PANEL_SIZE * rows + 0.6))
    axes = np.atleast_1d(figure.subplots(rows, columns, squeeze=False)).ravel()
    for axis, panel in zip(axes, panels, strict=False):
        _draw_panel(axis, panel, shown_rows(len(panel.view.points), seed))
    for axis in axes[len(panels) :]:
        axis.set_axis_off()
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    return figure
