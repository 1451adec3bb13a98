"""The companion method's decisions (cells, spec, pairs, group indices) and its training."""

from __future__ import annotations

import numpy as np
import pytest

from hierbench.companion import CompanionError, companion_cells, companion_spec, pair_sources
from hierbench.losses.entailment_objective import group_indices

CONFIG = {
    "companion": {
        "enabled": True,
        "temperature": 0.07,
        "init_seed": 1,
        "pairs": {"boxes": True, "cross_image": 2, "taxonomy": True},
    },
    "training": {
        "seeds": [42, 7],
        "epochs": 3,
        "batch_size": 8,
        "lr": 1e-3,
        "weight_decay": 0.0,
        "grad_clip": 1.0,
        "regression_targets": {"c": 0.2, "m": 0.5, "h": 0.8, "o": 1.0},
        "supcon_weights": {"c": 1.0, "m": 1.0, "h": 1.0},
        "distance_clip_train": 20.0,
    },
    "head": {"hidden_dim": 16, "embedding_dim": 4, "dropout": 0.0},
    "datasets": {"cub": {"hyperbolic": {"curvature": 2.0, "radius": 0.4}}},
}


def test_cells_follow_the_switch() -> None:
    assert companion_cells(CONFIG) == ["EA-42", "EA-7", "LA-42", "LA-7"]
    off = {**CONFIG, "companion": {**CONFIG["companion"], "enabled": False}}
    assert companion_cells(off) == []


def test_spec_of_each_head() -> None:
    euclidean = companion_spec("cub", "E", 42, CONFIG)
    lorentz = companion_spec("cub", "L", 42, CONFIG)
    assert (euclidean.geometry, euclidean.loss, euclidean.curvature) == ("E", "A", None)
    assert (lorentz.geometry, lorentz.loss, lorentz.curvature, lorentz.radius) == (
        "L",
        "A",
        2.0,
        None,
    )
    assert lorentz.epochs == euclidean.epochs == 3
    lorentz.check()
    with pytest.raises(CompanionError, match="heads"):
        companion_spec("cub", "H", 42, CONFIG)


def test_no_pair_source_is_an_error_naming_the_key() -> None:
    pairs = {"boxes": False, "cross_image": 0, "taxonomy": False}
    with pytest.raises(CompanionError, match=r"companion\.pairs"):
        pair_sources({"companion": {"pairs": pairs}})


def test_group_indices_map_codes_to_training_groups() -> None:
    labels = np.array([[0, 10, 3], [1, 12, 5], [2, 10, 3], [3, 11, 3]])
    groups, high_of_middle = group_indices(labels)
    assert groups.tolist() == [[0, 0], [2, 1], [0, 0], [1, 0]]
    assert high_of_middle.tolist() == [0, 0, 1]
    with pytest.raises(CompanionError, match="two high groups"):
        group_indices(np.array([[0, 10, 3], [1, 10, 4]]))


def _tiny_training_data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    n = 32
    leaves = np.arange(n) % 8
    labels = np.column_stack([leaves, leaves // 2, leaves // 4]).astype(np.int64)
    x = rng.normal(size=(n, 12)).astype(np.float32)
    return x, labels, (x + rng.normal(0, 0.1, x.shape)).astype(np.float32)


@pytest.mark.parametrize("head", ["E", "L"])
def test_same_seed_same_checkpoint_bytes(tmp_path, head: str) -> None:
    from hierbench.cells import checkpoint_writer
    from hierbench.hashing import sha256_file
    from hierbench.losses.entailment_objective import companion_objective
    from hierbench.training import train_cell

    x, labels, crops = _tiny_training_data()
    digests = []
    for run in range(2):
        spec = companion_spec("cub", head, 42, CONFIG)
        result = train_cell(
            x, labels, spec, objective=companion_objective(spec, CONFIG, labels, crops)
        )
        path = tmp_path / f"{run}.safetensors"
        checkpoint_writer(result.model, spec)(path)
        digests.append(sha256_file(path))
        assert np.isfinite(result.log["loss"]).all()
    assert digests[0] == digests[1]


def test_the_audit_catches_a_changed_initialisation_of_extra_parameters() -> None:
    from hierbench.audit import check_records

    def record(cell: str, temperature_hash: str) -> dict:
        return {
            "cell": cell,
            "spec": {"seed": 42, "hidden_dim": 16, "embedding_dim": 4},
            "feature_dim": 12,
            "parameters": 12 * 16 + 16 + 16 * 4 + 4 + 32,
            "initial_weight_hash": "same",
            "batch_order_hashes": ["b"],
            "updates": 3,
            "updates_per_epoch": 1,
            "train_examples": 8,
            "reload_max_abs_diff": 0.0,
            "initial_extra_hashes": {"objective.temperature.log_inverse": temperature_hash},
        }

    rows = check_records([record("EA-42", "t1"), record("LA-42", "t1")], epochs=3, batch_size=8)
    extra = [row for row in rows if row["check"] == "extra_initial_weights"]
    assert len(extra) == 1 and extra[0]["passed"]
    rows = check_records([record("EA-42", "t1"), record("LA-42", "t2")], epochs=3, batch_size=8)
    extra = [row for row in rows if row["check"] == "extra_initial_weights"]
    assert not extra[0]["passed"] and "LA-42" in extra[0]["detail"]


def test_every_tensor_of_the_objective_moves_with_it() -> None:
    """Crops, partners and group indices are buffers: ``.to(device)`` takes them along (the
    meta device stands in for a GPU here)."""
    from hierbench.losses.entailment_objective import companion_objective

    _, labels, crops = _tiny_training_data()
    objective = companion_objective(companion_spec("cub", "L", 42, CONFIG), CONFIG, labels, crops)
    tensors = [*objective.parameters(), *objective.buffers()]
    assert {"crops", "partners", "groups", "high_of_middle"} <= dict(
        objective.named_buffers()
    ).keys()
    assert objective.state_dict().keys() == dict(objective.named_parameters()).keys()
    objective.to("meta")
    assert {t.device.type for t in [*objective.parameters(), *objective.buffers()]} == {"meta"}
    assert len(tensors) == len([*objective.parameters(), *objective.buffers()])
