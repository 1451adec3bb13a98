"""Geometries added to the factorial (hierbench.geometry.plain): a plain geometry named in the
config builds a head with the paper heads' parameters and initial weights, trains in a bundle
beside them, reloads from its checkpoint, and ranks the sealed gallery by its own distances;
the example sphere is the formula it states."""

from __future__ import annotations

import dataclasses
import math
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch

from hierbench.cells.checkpoints import (
    checkpoint_writer,
    head_ranking,
    load_checkpoint,
    load_geometry,
)
from hierbench.cells.spec import CellSpec
from hierbench.factorial import GeometryError
from hierbench.geometry import EuclideanHead, PlainGeometry, PluginHead
from hierbench.geometry.plain import plugin_pair_scores
from hierbench.metrics import evaluate
from hierbench.training.bundle import train_bundle
from hierbench.training.trainer import PROJECTOR_PREFIX, build_cell_model, state_hash

REPO = Path(__file__).resolve().parents[2]
SPHERE = f"{REPO / 'examples' / 'sphere.py'}:GEOMETRY"


def _data(n: int = 96, dim: int = 24) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    leaf = rng.integers(0, 12, n)
    features = rng.normal(size=(12, dim))[leaf] + 0.5 * rng.normal(size=(n, dim))
    return features.astype(np.float32), np.stack([leaf, leaf // 3, leaf // 6], axis=1)


def _spec(geometry: str, loss: str, seed: int = 42) -> CellSpec:
    hyperbolic = {"curvature": 2.0, "radius": 0.4} if geometry == "H" else {}
    return CellSpec(
        dataset="unit",
        geometry=geometry,
        loss=loss,
        seed=seed,
        epochs=2,
        batch_size=32,
        lr=1e-3,
        weight_decay=1e-4,
        grad_clip=1.0,
        hidden_dim=16,
        embedding_dim=8,
        dropout=0.1,
        tau=0.2 if loss == "S" else None,
        **hyperbolic,
    )


def _sphere_spec(loss: str = "R", seed: int = 42) -> CellSpec:
    paper = _spec("E", loss, seed=seed)
    return dataclasses.replace(paper, geometry="C", geometry_plugin=SPHERE)


def test_the_sphere_example_is_the_great_circle_distance():
    sphere = load_geometry(SPHERE)
    points = sphere.embed(torch.randn(2, 5, 3, generator=torch.Generator().manual_seed(0)))
    assert torch.allclose(points.norm(dim=-1), torch.ones(2, 5))
    distances = sphere.distances(points, points)
    assert distances.shape == (2, 5, 5)
    for cell in range(2):
        for i in range(5):
            for j in range(5):
                cosine = float(points[cell, i] @ points[cell, j])
                expected = math.acos(min(max(cosine, -1 + 1e-6), 1 - 1e-6))
                assert distances[cell, i, j].item() == pytest.approx(expected, abs=1e-5)


def test_a_reference_to_something_else_is_one_error_naming_it(tmp_path: Path):
    plugin = tmp_path / "not_a_geometry.py"
    plugin.write_text("GEOMETRY = 3\n")
    with pytest.raises(GeometryError, match=r"is a int, not a hierbench.geometry.plain"):
        load_geometry(f"{plugin}:GEOMETRY")


def test_an_added_geometrys_head_starts_from_the_paper_heads_weights():
    paper = build_cell_model(_spec("E", "R"), 24)
    added = build_cell_model(_sphere_spec(), 24)
    assert isinstance(added, PluginHead) and isinstance(paper, EuclideanHead)
    assert added.state_dict().keys() == paper.state_dict().keys()
    assert state_hash(added, PROJECTOR_PREFIX) == state_hash(paper, PROJECTOR_PREFIX)


def test_an_added_geometry_trains_in_a_bundle_beside_the_paper_cells_and_reloads():
    x, y = _data()
    specs = [_spec("E", "R"), _sphere_spec("R"), _sphere_spec("S")]
    results = train_bundle(x, y, specs)
    assert len({result.initial_weight_hash for result in results}) == 1
    assert len({tuple(result.batch_order_hashes) for result in results}) == 1
    alone = train_bundle(x, y, [specs[1]])[0]
    for name, tensor in alone.model.state_dict().items():
        assert torch.equal(results[1].model.state_dict()[name], tensor), name
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "model.safetensors"
        checkpoint_writer(results[1].model, specs[1])(path)
        reloaded = load_checkpoint(path, specs[1], x.shape[1])
    assert isinstance(reloaded, PluginHead)
    with torch.inference_mode():
        assert torch.equal(
            reloaded(torch.as_tensor(x)), results[1].model.eval()(torch.as_tensor(x))
        )


def test_a_plugin_geometry_ranks_the_gallery_by_its_own_distances():
    sphere = load_geometry(SPHERE)
    rng = np.random.default_rng(0)
    points = sphere.embed(torch.as_tensor(rng.normal(size=(40, 4)))).numpy()
    labels = np.stack([np.arange(40) % 5, np.arange(40) % 5 // 2, np.zeros(40, int)], axis=1)
    model = PluginHead(torch.nn.Identity(), sphere, "C")  # type: ignore[arg-type]
    ranked = evaluate(points, points, labels, labels, **head_ranking(model, _sphere_spec(), 1e6))
    # on the unit sphere the arc is a monotone function of the chord: the Euclidean ranking
    chords = evaluate(points, points, labels, labels)
    np.testing.assert_array_equal(ranked["ap"].to_numpy(), chords["ap"].to_numpy())


def test_a_plugin_geometrys_non_finite_distances_rank_last():
    nowhere = PlainGeometry(
        "nowhere", lambda x: x, lambda a, b: torch.full((len(a), len(b)), math.nan)
    )
    scores = plugin_pair_scores(nowhere, 7.0)(np.zeros((2, 3)), np.zeros((4, 3)))
    np.testing.assert_array_equal(scores, np.full((2, 4), 7.0))


def test_a_paper_cell_names_no_plugin_and_keeps_its_record_bytes():
    assert "geometry_plugin" not in _spec("H", "S").as_dict()
    assert _sphere_spec().as_dict()["geometry_plugin"] == SPHERE
    with pytest.raises(ValueError, match="geometry_plugin applies only to a geometry added"):
        dataclasses.replace(_spec("E", "R"), geometry_plugin=SPHERE).check()
    with pytest.raises(ValueError, match=r"geometry must be E\|H\|L or one added"):
        dataclasses.replace(_spec("E", "R"), geometry="C").check()
