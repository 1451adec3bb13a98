"""Embedding views (hierbench.effects.embedding_view): the disk view stays in the unit disk and
keeps distances where a flat view can, the sphere's view likewise, prototypes are mapped as
their points are, and the figure is the same bytes when drawn twice."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch

from hierbench.effects.embedding_view import (
    DISK,
    PLANE,
    SPHERE,
    ArmView,
    embedding_view,
    group_colours,
    principal_plane,
    shown_rows,
    views_figure,
)
from hierbench.effects.figures import figure_writer
from hierbench.geometry import lorentz_distance, poincare_map
from hierbench.metrics.rank_distances import pairwise_distances


def _in_a_plane(rng: np.random.Generator, n: int, dim: int = 8) -> np.ndarray:
    """n tangent vectors spanning one random plane through the origin of R^dim."""
    basis = np.linalg.qr(rng.normal(size=(dim, 2)))[0].T
    return rng.normal(size=(n, 2)) @ basis


def _disk_distances(points: np.ndarray) -> np.ndarray:
    """Pairwise distances of points of the unit Poincaré disk."""
    return pairwise_distances(points, points, geometry="poincare", curvature=1.0)


def _pairs(matrix: np.ndarray) -> np.ndarray:
    """A square distance matrix less its diagonal (a point's distance to itself from the Gram
    product is √rounding, not 0)."""
    return matrix[~np.eye(len(matrix), dtype=bool)]


def _poincare_points(tangent: np.ndarray, curvature: float) -> np.ndarray:
    """Ball points of the Poincaré head's map (radius-bounded tangents, as the head makes)."""
    mapped = poincare_map(torch.as_tensor(tangent), curvature, radius=2.0)
    return mapped.numpy()


@pytest.mark.parametrize("curvature", [0.1, 2.0])
def test_a_poincare_cell_in_a_plane_is_drawn_at_its_own_distances(curvature: float):
    rng = np.random.default_rng(0)
    points = _poincare_points(_in_a_plane(rng, 30), curvature)
    view = embedding_view(points, np.arange(30) % 3, "H", curvature=curvature)
    assert view.kind == DISK and view.points.shape == (30, 2)
    own = pairwise_distances(points, points, geometry="poincare", curvature=curvature)
    drawn = _disk_distances(view.points) / np.sqrt(curvature)  # the unit disk is √c times
    np.testing.assert_allclose(_pairs(drawn), _pairs(own), rtol=1e-7)


def test_a_lorentz_cell_in_a_plane_is_drawn_at_its_own_distances():
    rng = np.random.default_rng(1)
    space = torch.as_tensor(_in_a_plane(rng, 25) * 0.7)
    curvature = 0.5
    view = embedding_view(space.numpy(), np.zeros(25, int), "L", curvature=curvature)
    own = lorentz_distance(space, space, curvature).numpy()
    drawn = _disk_distances(view.points) / np.sqrt(curvature)
    np.testing.assert_allclose(_pairs(drawn), _pairs(own), rtol=1e-7)


def test_the_disk_view_stays_inside_the_disk_and_never_deepens_a_point():
    rng = np.random.default_rng(2)
    curvature = 2.0
    points = _poincare_points(rng.normal(size=(200, 16)) * 3.0, curvature)  # near the boundary
    view = embedding_view(points, np.arange(200) % 7, "H", curvature=curvature)
    assert (np.linalg.norm(view.points, axis=1) < 1.0).all()
    assert (np.linalg.norm(view.prototypes, axis=1) < 1.0).all()
    origin = np.zeros((1, points.shape[1]))
    depth = pairwise_distances(origin, points, geometry="poincare", curvature=curvature)[0]
    drawn = _disk_distances(np.vstack([np.zeros((1, 2)), view.points]))[0, 1:] / np.sqrt(curvature)
    assert (drawn <= depth + 1e-9).all()
    assert drawn.max() > 0.5 * depth.max()  # the plane keeps the largest share it can


def test_a_class_of_one_point_has_its_prototype_on_that_point():
    rng = np.random.default_rng(3)
    points = _poincare_points(rng.normal(size=(12, 6)), 1.0)
    classes = np.array([5] + [7] * 11)  # class 5 holds point 0 alone
    view = embedding_view(points, classes, "H", curvature=1.0)
    assert view.prototypes.shape == (2, 2)
    np.testing.assert_allclose(view.prototypes[0], view.points[0], atol=1e-12)


def test_the_sphere_view_is_inside_the_circle_and_keeps_a_great_circle_as_it_is():
    rng = np.random.default_rng(4)
    circle = _in_a_plane(rng, 20)
    circle /= np.linalg.norm(circle, axis=1, keepdims=True)
    view = embedding_view(circle * 3.0, np.zeros(20, int), "E")  # normalised first
    assert view.kind == SPHERE
    np.testing.assert_allclose(np.linalg.norm(view.points, axis=1), 1.0, atol=1e-12)
    drawn, own = pairwise_distances(view.points, view.points), pairwise_distances(circle, circle)
    np.testing.assert_allclose(_pairs(drawn), _pairs(own), rtol=1e-7)
    spread = embedding_view(rng.normal(size=(50, 8)), np.arange(50) % 4, "E")
    assert (np.linalg.norm(spread.points, axis=1) <= 1.0 + 1e-12).all()


def test_unnormalised_euclidean_embeddings_get_the_unbounded_plane():
    rng = np.random.default_rng(5)
    vectors = _in_a_plane(rng, 15) * 10.0
    view = embedding_view(vectors, np.arange(15) % 2, "E", normalised=False)
    assert view.kind == PLANE and not view.bounded
    drawn, own = pairwise_distances(view.points, view.points), pairwise_distances(vectors, vectors)
    np.testing.assert_allclose(_pairs(drawn), _pairs(own), rtol=1e-9)


def test_principal_plane_is_orthonormal_and_signed_the_same_whatever_the_rows_signs():
    rng = np.random.default_rng(6)
    vectors = rng.normal(size=(40, 5)) * [5.0, 3.0, 1.0, 0.5, 0.1]
    plane = principal_plane(vectors)
    np.testing.assert_allclose(plane @ plane.T, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(principal_plane(-vectors), plane, atol=1e-12)
    assert (plane[np.arange(2), np.abs(plane).argmax(axis=1)] > 0).all()


def test_a_view_asks_for_a_curvature_and_a_known_geometry():
    with pytest.raises(ValueError, match="curvature"):
        embedding_view(np.zeros((3, 4)), np.zeros(3, int), "H")
    with pytest.raises(ValueError, match="no embedding view"):
        embedding_view(np.zeros((3, 4)), np.zeros(3, int), "Q")


def test_twenty_groups_get_twenty_colours_the_dark_shades_first():
    colours = group_colours(np.arange(20))
    assert sorted(colours) == list(range(20))
    assert list(colours[:10]) == list(range(0, 20, 2))  # tab20's dark shades
    assert group_colours(np.array([20]))[0] == colours[0]


def test_many_points_are_drawn_as_a_seeded_sample():
    assert np.array_equal(shown_rows(10, seed=1, limit=20), np.arange(10))
    sample = shown_rows(100, seed=1, limit=20)
    assert len(sample) == 20 and np.array_equal(sample, np.sort(sample))
    assert np.array_equal(sample, shown_rows(100, seed=1, limit=20))


def test_the_figure_is_the_same_bytes_when_drawn_twice():
    rng = np.random.default_rng(7)
    points = _poincare_points(rng.normal(size=(40, 6)), 1.0)
    classes = np.arange(40) % 4
    view = embedding_view(points, classes, "H", curvature=1.0)
    panel = ArmView("H_R: Poincaré disk", view, classes // 2, np.arange(4) // 2)

    def drawn() -> bytes:
        buffer = io.BytesIO()
        figure_writer(views_figure([panel, panel], "test", seed=0), "png")(buffer)
        return buffer.getvalue()

    assert drawn() == drawn()
