"""The companion method's decisions (cells, spec, pairs, group indices) and its training."""

from __future__ import annotations

import json
from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from hierbench.cells.companion import CompanionError, companion_cells, companion_spec, pair_sources
from hierbench.cells.spec import CellSpec, cell_spec
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
    assert (euclidean.normalise, lorentz.normalise) == (False, True)  # E_A: the raw output
    euclidean.check()
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
    from hierbench.cells.checkpoints import checkpoint_writer
    from hierbench.losses.entailment_objective import companion_objective
    from hierbench.provenance.hashing import sha256_file
    from hierbench.training.trainer import train_cell

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
    from hierbench.training.fairness_audit import check_records

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


def test_the_normalised_euclidean_head_is_refused_for_E_A_saying_why() -> None:
    """The old E_A (the factorial's unit-sphere E head) fails as a spec, as a training run and
    as the head the objective is given; the message names the symmetry that cancels loss A."""
    from hierbench.cells.checkpoints import head_for
    from hierbench.losses.entailment_objective import companion_objective
    from hierbench.training.trainer import train_cell

    x, labels, crops = _tiny_training_data()
    spec = companion_spec("cub", "E", 42, CONFIG)
    old = replace(spec, normalise=True)
    why = r"unit sphere the exterior angle is symmetric.*cancel"
    with pytest.raises(ValueError, match=rf"cub EA-42: .*{why}"):
        old.check()
    objective = companion_objective(spec, CONFIG, labels, crops)
    with pytest.raises(ValueError, match=why):
        train_cell(x, labels, old, objective=objective)
    batch = torch.arange(8)
    with pytest.raises(ValueError, match=rf"EuclideanHead normalises its output: .*{why}"):
        objective.batch_loss(head_for(old, x.shape[1]), torch.from_numpy(x[:8]), None, batch)
    loss, _ = objective.batch_loss(head_for(spec, x.shape[1]), torch.from_numpy(x[:8]), None, batch)
    assert torch.isfinite(loss)


def test_only_the_euclidean_head_can_be_unnormalised() -> None:
    from hierbench.geometry import build_head

    lorentz = replace(companion_spec("cub", "L", 42, CONFIG), normalise=False)
    with pytest.raises(ValueError, match="LA-42: normalise=False applies only to the Euclidean"):
        lorentz.check()
    with pytest.raises(ValueError, match="normalise=False applies only to geometry 'E'"):
        build_head(
            "L", 8, hidden_dim=4, embedding_dim=2, dropout=0.0, curvature=1.0, normalise=False
        )


# The keys of every record's spec before E_A's head became unnormalised.
FACTORIAL_SPEC_KEYS = {
    *("dataset", "geometry", "loss", "seed", "epochs", "batch_size", "lr", "weight_decay"),
    *("grad_clip", "hidden_dim", "embedding_dim", "dropout", "curvature", "radius", "tau"),
    *("regression_targets", "supcon_weights", "distance_clip"),
}


def test_specs_of_normalising_heads_are_stored_without_the_new_field() -> None:
    """Records and checkpoints of the factorial's cells keep their bytes: ``normalise`` is
    stored only where it is off (E_A), and both kinds of record give their spec back."""
    factorial = cell_spec("cub", "E", "R", 42, CONFIG)
    assert set(factorial.as_dict()) == FACTORIAL_SPEC_KEYS
    # the two fields stored only when they apply: normalise (off) and geometry_plugin (set)
    assert len(fields(CellSpec)) == len(FACTORIAL_SPEC_KEYS) + 2
    companion = companion_spec("cub", "E", 42, CONFIG)
    assert companion.as_dict()["normalise"] is False
    for spec in (factorial, companion, companion_spec("cub", "L", 42, CONFIG)):
        record = json.loads(json.dumps({"spec": spec.as_dict()}))
        assert CellSpec.from_record(record) == spec


def _write_tiny_development_side(folder: Path) -> tuple[Path, Path, Path]:
    """Whole-image and crop feature tables and a split table with final/train and the tuning
    query and gallery (the validation images), as the companion stage reads them."""
    from hierbench.features.store import feature_table, write_feature_parquet
    from hierbench.provenance.records import JobContext

    x, labels, crops = _tiny_training_data()
    images = pd.DataFrame(labels, columns=["leaf_code", "middle_code", "high_code"])
    images.insert(0, "image_id", [f"img{k:02d}" for k in range(len(x))])
    paths = folder / "dev.parquet", folder / "dev_crops.parquet", folder / "splits.parquet"
    job = JobContext(rule="unit")
    write_feature_parquet(feature_table(images, x), paths[0], job)
    write_feature_parquet(feature_table(images, crops), paths[1], job)
    roles = [("final", "train", i) for i in images["image_id"]]
    roles += [("tuning", "query", i) for i in images["image_id"][:5]]
    roles += [("tuning", "gallery", i) for i in images["image_id"][5:16]]
    rows = [{"split": s, "role": r, "seed": 0, "sealed": False, "image_id": i} for s, r, i in roles]
    pd.DataFrame(rows).to_parquet(paths[2])
    return paths


def test_a_companion_record_reports_the_norms_of_its_validation_embeddings(tmp_path) -> None:
    """After training, E_A's embeddings of the 16 validation images do not share one norm;
    each record gives the spread and the mean norm of the images beside that of their crops
    (L_A: norms of the space components)."""
    from hierbench.cells.checkpoints import embed, load_checkpoint
    from hierbench.provenance.records import JobContext
    from hierbench.stages.companion import train_companion_cell

    features, crops, splits = _write_tiny_development_side(tmp_path)
    records = {}
    for head in ("E", "L"):
        folder = tmp_path / f"{head}A-42"
        folder.mkdir()
        outputs = {n: folder / f"{n}.out" for n in ("model", "log", "record")}
        train_companion_cell(
            "cub", head, 42, features, crops, splits, CONFIG, outputs, JobContext(rule="unit")
        )
        records[head] = json.loads(outputs["record"].read_text())
    euclidean = records["E"]
    assert euclidean["spec"]["normalise"] is False
    for head, record in records.items():
        norms = record["validation_norms"]
        assert norms["images"]["count"] == norms["crops"]["count"] == 16
        assert norms["images"]["min"] <= norms["images"]["median"] <= norms["images"]["max"]
        assert norms["images"]["mean"] > 0 and norms["crops"]["mean"] > 0
        assert 0.0 <= norms["crop_beyond_image"] <= 1.0
        assert ("space components" in norms["measure"]) == (head == "L")
    spread = euclidean["validation_norms"]["images"]
    assert spread["std"] > 1e-3 and spread["max"] - spread["min"] > 1e-3
    # 32 rows of 8 leaves: 3 other images per leaf, so no row is short of its 2 partners
    partners = euclidean["companion"]["cross_image_partners"]
    assert partners == {"k": 2, "rows": 32, "rows_short_of_k": 0}
    x, _, _ = _tiny_training_data()
    model = load_checkpoint(
        tmp_path / "EA-42/model.out", CellSpec.from_record(euclidean), x.shape[1]
    )
    validation = np.linalg.norm(embed(model, x[:16]).astype(np.float64), axis=1)
    assert spread["mean"] == pytest.approx(validation.mean(), rel=1e-6)
    assert spread["std"] == pytest.approx(validation.std(), rel=1e-6)


@pytest.mark.parametrize("head", ["E", "L"])
def test_the_crops_pass_leaves_the_running_statistics_to_the_images(head: str) -> None:
    """Crops go through the head (normalised by their own batch) but do not move its
    batch-normalisation running statistics: after one batch of loss A they are exactly those of
    the batch's images alone, the only rows retrieval embeds (with them, in eval mode)."""
    from hierbench.cells.checkpoints import head_for
    from hierbench.losses.entailment_objective import companion_objective

    x, labels, crops = _tiny_training_data()
    spec = companion_spec("cub", head, 42, {**CONFIG, "head": {**CONFIG["head"], "dropout": 0.0}})
    objective = companion_objective(spec, CONFIG, labels, crops)
    batch = torch.arange(8)
    torch.manual_seed(0)
    trained, reference = head_for(spec, x.shape[1]), head_for(spec, x.shape[1])
    reference.load_state_dict(trained.state_dict())
    objective.batch_loss(trained.train(), torch.from_numpy(x[:8]), None, batch)
    reference.train()(torch.from_numpy(x[:8]))
    for name, value in reference.projector.norm.state_dict().items():
        assert torch.equal(trained.projector.norm.state_dict()[name], value), name
    assert trained.projector.norm.track_running_stats
    assert int(trained.projector.norm.num_batches_tracked) == 1


def test_rows_short_of_partners_are_counted_and_logged(caplog) -> None:
    """A leaf with fewer than K other images gives its rows fewer partners: the record counts
    them and the log says so; without cross-image pairs there is nothing to count."""
    import logging

    import torch

    from hierbench.losses.entailment_pairs import cross_image_partners
    from hierbench.stages.companion import partner_counts

    leaves = torch.tensor([0, 0, 0, 1, 1, 2])  # leaf 1: one other image; leaf 2: none
    partners = cross_image_partners(leaves, 2, torch.Generator().manual_seed(0))
    with caplog.at_level(logging.INFO, logger="hierbench.stages.companion"):
        counts = partner_counts(partners, "cub", "EA-42")
    assert counts == {"k": 2, "rows": 6, "rows_short_of_k": 3}
    assert "cub EA-42: 3 of 6 training rows have fewer than 2 cross-image partners" in caplog.text
    assert partner_counts(None, "cub", "EA-42") == {"k": 0, "rows": 0, "rows_short_of_k": 0}
