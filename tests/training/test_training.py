"""The trainer, tuning selection and fairness audit on small synthetic data."""

from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd
import pytest

from hierbench.cells.checkpoints import checkpoint_writer, embed, load_checkpoint
from hierbench.cells.spec import CellSpec, budget_group, own_epoch_budgets
from hierbench.protocol import CURVATURE_CONTROL as CURV
from hierbench.protocol import HIER
from hierbench.provenance.artifacts import publish
from hierbench.provenance.hashing import sha256_file
from hierbench.provenance.records import JobContext
from hierbench.training.fairness_audit import (
    AuditError,
    audit_table,
    check_records,
    projector_parameters,
    raise_on_failure,
)
from hierbench.training.trainer import NonFiniteLossError, batch_order, train_cell
from hierbench.training.tuning import TuningError, select_temperatures, selected_tau

JOB = JobContext(rule="unit")


def _data(n: int = 96, dim: int = 24, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    leaf = rng.integers(0, 12, n)
    labels = np.stack([leaf, leaf // 3, leaf // 6], axis=1)
    centres = rng.normal(size=(12, dim))
    features = centres[leaf] + 0.5 * rng.normal(size=(n, dim))
    return features.astype(np.float32), labels


def _spec(geometry: str = "E", loss: str = "R", seed: int = 42, epochs: int = 2) -> CellSpec:
    return CellSpec(
        dataset="unit",
        geometry=geometry,
        loss=loss,
        seed=seed,
        epochs=epochs,
        batch_size=32,
        lr=1e-3,
        weight_decay=1e-4,
        grad_clip=1.0,
        hidden_dim=16,
        embedding_dim=8,
        dropout=0.1,
        curvature=2.0 if geometry == "H" else None,
        radius=0.4 if geometry == "H" else None,
        tau=0.2 if loss == "S" else None,
    )


def test_the_four_cells_of_a_seed_share_initial_weights_and_batch_order():
    x, y = _data()
    results = {g + o: train_cell(x, y, _spec(g, o)) for g in "EH" for o in "RS"}
    assert len({r.initial_weight_hash for r in results.values()}) == 1
    assert len({tuple(r.batch_order_hashes) for r in results.values()}) == 1
    assert {r.updates for r in results.values()} == {2 * (96 // 32)}
    other = train_cell(x, y, _spec(seed=7))
    assert other.initial_weight_hash != results["ER"].initial_weight_hash
    assert other.batch_order_hashes != results["ER"].batch_order_hashes


def test_same_seed_gives_the_same_checkpoint_bytes(tmp_path):
    x, y = _data()
    paths = []
    for run in ("a", "b"):
        result = train_cell(x, y, _spec("H", "S"))
        target = tmp_path / run / "model.safetensors"
        paths.append(publish(target, checkpoint_writer(result.model, _spec("H", "S")), JOB))
    assert sha256_file(paths[0]) == sha256_file(paths[1])


def test_reloaded_checkpoint_reproduces_outputs_exactly(tmp_path):
    x, y = _data()
    spec = _spec("H", "R")
    result = train_cell(x, y, spec)
    path = publish(tmp_path / "m.safetensors", checkpoint_writer(result.model, spec), JOB)
    reloaded = load_checkpoint(path, spec, x.shape[1])
    assert np.array_equal(embed(result.model, x), embed(reloaded, x))


def test_training_log_has_one_row_per_epoch_with_levels():
    x, y = _data()
    log = train_cell(x, y, _spec("E", "S", epochs=3)).log
    assert log["epoch"].tolist() == [1, 2, 3]
    assert log[["loss", "loss_c", "loss_m", "loss_h", "grad_norm"]].notna().all().all()


def test_non_finite_loss_names_dataset_cell_seed_epoch_and_step():
    x, y = _data()
    x[5] = np.nan
    with pytest.raises(
        NonFiniteLossError, match=r"unit cell ER-42 \(seed 42\) at epoch 1, step \d+"
    ):
        train_cell(x, y, _spec())


def test_a_batch_without_positives_stops_naming_its_step():
    x, y = _data()
    y[:] = np.arange(len(y))[:, None] * np.array([1, 1, 1])  # every image its own group
    with pytest.raises(
        NonFiniteLossError,
        match=r"step 1; no per-level value .* no level of the batch had a strict positive",
    ):
        train_cell(x, y, _spec("E", "S"))


@pytest.mark.parametrize("cell", ["ER", "HR", "ES", "HS"])
def test_the_update_loop_never_waits_for_the_device(cell, monkeypatch):
    """No update reads a value back to the host (.item(), bool(), float(), .tolist()); the log
    reads each epoch's values once, so the same loop keeps a GPU busy."""
    import torch

    from hierbench.training import trainer

    reads = []
    real_update = trainer._update

    def counted(*args, **kwargs):
        with pytest.MonkeyPatch.context() as patch:
            for name in ("item", "tolist", "__bool__", "__float__", "__int__"):
                patch.setattr(torch.Tensor, name, lambda *a, _n=name: reads.append(_n))
            return real_update(*args, **kwargs)

    monkeypatch.setattr(trainer, "_update", counted)
    result = train_cell(*_data(), _spec(cell[0], cell[1]))
    assert reads == [] and result.updates == 2 * 3
    assert result.log["loss"].notna().all()


def test_training_runs_deterministic_kernels_without_nan_filling_allocations():
    import torch

    train_cell(*_data(), _spec(epochs=1))
    assert torch.are_deterministic_algorithms_enabled()
    assert torch.utils.deterministic.fill_uninitialized_memory is False


def test_batch_order_drops_the_last_incomplete_batch():
    import torch

    batches = batch_order(100, 32, torch.Generator().manual_seed(0))
    assert batches.shape == (3, 32) and len(set(batches.flatten().tolist())) == 96
    with pytest.raises(ValueError, match="cannot fill one batch"):
        batch_order(10, 32, torch.Generator())


def test_spec_checks_name_the_cell():
    with pytest.raises(ValueError, match="HR-42: a Poincare cell needs curvature"):
        train_cell(
            *_data(), _spec("H", "R").__class__(**{**_spec("H", "R").__dict__, "curvature": None})
        )


def _records() -> list[dict]:
    base = {
        "feature_dim": 768,
        "parameters": 205_600,
        "train_examples": 5994,
        "updates": 4600,
        "updates_per_epoch": 46,
        "reload_max_abs_diff": 0.0,
        "batch_order_hashes": ["a", "b"],
    }
    records = []
    for seed in (42, 2024):
        for cell in ("ER", "HR", "ES", "HS"):
            spec = {"seed": seed, "hidden_dim": 256, "embedding_dim": 32}
            records.append(
                {
                    **copy.deepcopy(base),
                    "cell": f"{cell}-{seed}",
                    "spec": spec,
                    "initial_weight_hash": f"init-{seed}",
                }
            )
    return records


def test_audit_passes_fair_cells_and_counts_205600_parameters():
    assert projector_parameters(768, 256, 32) == 205_600
    table = audit_table(check_records(_records(), epochs=100, batch_size=128))
    assert table["passed"].all()
    raise_on_failure(table, "cub")


def test_audit_catches_a_changed_initialisation():
    records = _records()
    records[1]["initial_weight_hash"] = "tampered"
    table = audit_table(check_records(records, epochs=100, batch_size=128))
    with pytest.raises(AuditError, match=r"initial_weights \[seed 42\].*HR-42"):
        raise_on_failure(table, "cub")


def test_audit_catches_a_changed_batch_order_and_update_count():
    records = _records()
    records[6]["batch_order_hashes"] = ["a", "c"]
    records[0]["updates"] = 4599
    table = audit_table(check_records(records, epochs=100, batch_size=128))
    failed = table[~table["passed"]]
    assert set(failed["check"]) == {"batch_order", "update_count"}
    assert "ES-2024" in failed.loc[failed["check"] == "batch_order", "detail"].item()
    assert "ER-42" in failed.loc[failed["check"] == "update_count", "detail"].item()


def _with_short_hier_cells(epochs: int) -> list[dict]:
    """The fair records plus a HIER-style cell per seed trained ``epochs`` epochs on the same
    batches (the first of the factorial's)."""
    records = _records()
    for seed in (42, 2024):
        hier = copy.deepcopy(records[0 if seed == 42 else 4])
        hier.update(
            cell=f"hier-{seed}",
            updates=46 * epochs,
            batch_order_hashes=["a", "b"][:epochs],
        )
        hier["spec"] = {**hier["spec"], "loss": HIER}
        records.append(hier)
    return records


def test_a_hier_budget_of_its_own_is_audited_against_that_budget():
    table = audit_table(
        check_records(_with_short_hier_cells(1), epochs=100, batch_size=128, own_epochs={HIER: 1})
    )
    raise_on_failure(table, "nabirds")
    counts = table[table["check"] == "update_count"].set_index("scope")["detail"].to_dict()
    assert counts == {
        "cells of the factorial budget": "4600 updates (46 per epoch)",
        "hier cells, own budget": "46 updates (46 per epoch)",
    }
    orders = table[table["check"] == "batch_order"]["detail"]
    assert orders.str.endswith("over the first 1 epochs (the shortest budget)").all()


def test_a_short_hier_cell_fails_without_its_budget_or_off_its_batches():
    records = _with_short_hier_cells(1)
    table = audit_table(check_records(records, epochs=100, batch_size=128))
    failed = table[~table["passed"]]
    assert set(failed["check"]) == {"update_count"}
    assert "hier-42" in failed["detail"].item() and "hier-2024" in failed["detail"].item()
    records[-1]["batch_order_hashes"] = ["z"]
    records[-2]["updates"] = 92
    table = audit_table(check_records(records, epochs=100, batch_size=128, own_epochs={HIER: 1}))
    failed = table[~table["passed"]].set_index("check")["detail"]
    assert set(failed.index) == {"batch_order", "update_count"}
    assert "hier-2024" in failed["batch_order"] and "hier-42" in failed["update_count"]


def _with_short_curvature_cells(epochs: int) -> list[dict]:
    """The fair records plus the curvature control's cells of seed 42 (a point and the matched
    E_R, both loss R like the factorial's) trained ``epochs`` epochs on the same batches."""
    records = _records()
    for index, label in ((0, "ER-42@euclidean"), (1, "HR-42@c1_r0.4")):
        cell = copy.deepcopy(records[index])
        cell.update(
            cell=label, updates=46 * epochs, batch_order_hashes=["a", "b"][:epochs], control=CURV
        )
        records.append(cell)
    return records


def test_the_curvature_controls_own_budget_is_audited_apart_from_the_factorials_r_cells():
    records = _with_short_curvature_cells(1)
    table = audit_table(check_records(records, epochs=100, batch_size=128, own_epochs={CURV: 1}))
    raise_on_failure(table, "nabirds")
    counts = table[table["check"] == "update_count"].set_index("scope")["detail"].to_dict()
    assert counts == {
        "cells of the factorial budget": "4600 updates (46 per epoch)",
        "curvature cells, own budget": "46 updates (46 per epoch)",
    }
    # Without its budget the control's cells fail the factorial's update count, by name.
    failed = audit_table(check_records(records, epochs=100, batch_size=128))
    detail = failed[~failed["passed"]]["detail"].item()
    assert "ER-42@euclidean" in detail and "HR-42@c1_r0.4" in detail


def test_own_budgets_come_from_the_config_and_group_records():
    config = {
        "datasets": {
            "nabirds": {
                "controls": {"curvature": {"epochs": 84}, "baselines": {"hier": {"epochs": None}}}
            }
        }
    }
    budgets = own_epoch_budgets(config, "nabirds")
    assert budgets == {CURV: 84}
    assert budget_group({"control": CURV, "spec": {"loss": "R"}}, budgets) == CURV
    assert budget_group({"spec": {"loss": "R"}}, budgets) == ""
    assert budget_group({"spec": {"loss": HIER}}, budgets) == ""  # no HIER budget set


def test_selection_picks_the_best_score_per_geometry_and_the_smaller_tau_on_ties():
    scores = [
        {"geometry": "E", "tau": 0.1, "score": 0.5, "map_leaf": 0, "map_middle": 0, "map_high": 0},
        {"geometry": "E", "tau": 0.2, "score": 0.6, "map_leaf": 0, "map_middle": 0, "map_high": 0},
        {"geometry": "H", "tau": 0.5, "score": 0.4, "map_leaf": 0, "map_middle": 0, "map_high": 0},
        {"geometry": "H", "tau": 0.3, "score": 0.4, "map_leaf": 0, "map_middle": 0, "map_high": 0},
        {
            "geometry": "H",
            "tau": 1.0,
            "score": math.nan,
            "map_leaf": 0,
            "map_middle": 0,
            "map_high": 0,
        },
    ]
    table = select_temperatures(scores)
    winners = table[table["selected"]].set_index("geometry")["tau"].to_dict()
    assert winners == {"E": 0.2, "H": 0.3}


def test_selected_tau_prefers_a_pinned_value(tmp_path):
    config = {"datasets": {"cub": {"tau": {"E": 0.25, "H": None}}}}
    assert selected_tau("cub", "E", config, None) == 0.25
    with pytest.raises(TuningError, match="not pinned"):
        selected_tau("cub", "H", config, None)
    path = tmp_path / "selection.parquet"
    pd.DataFrame({"geometry": ["H", "H"], "tau": [0.1, 0.5], "selected": [False, True]}).to_parquet(
        path
    )
    assert selected_tau("cub", "H", config, path) == 0.5


def test_an_added_geometry_without_a_pinned_tau_reads_its_own_selection(tmp_path):
    config = {"datasets": {"cub": {"tau": {"E": 0.25, "H": None}}}}  # no key for C at all
    path = tmp_path / "selection-C.parquet"
    frame = pd.DataFrame({"geometry": ["C", "C"], "tau": [0.1, 0.5], "selected": [True, False]})
    frame.to_parquet(path)
    assert selected_tau("cub", "C", config, path) == 0.1


def test_an_explicit_cpu_device_changes_no_byte():
    import torch

    x, y = _data()
    default, explicit = (
        train_cell(x, y, _spec("H", "S")),
        train_cell(x, y, _spec("H", "S"), device=torch.device("cpu")),
    )
    state = {k: v.numpy().tobytes() for k, v in default.model.state_dict().items()}
    assert state == {k: v.numpy().tobytes() for k, v in explicit.model.state_dict().items()}
    assert (
        embed(default.model, x).tobytes()
        == embed(default.model, x, device=torch.device("cpu")).tobytes()
    )
