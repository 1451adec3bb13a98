"""A bundle of cells gives each cell what it gets alone: its initial weights and batch order
exactly, its trained weights within float tolerance."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from test_training import _data, _spec

from hierbench.training.bundle import BundleError, loss_groups, train_bundle
from hierbench.training.trainer import NonFiniteLossError, train_cell

FACTORIAL = [("E", "R"), ("E", "S"), ("H", "R"), ("H", "S")]
# The hidden bias (and the running mean that tracks it) which BatchNorm's batch mean cancels.
BATCHNORM_CANCELLED = {"projector.hidden.bias", "projector.norm.running_mean"}


def _specs(seeds=(42,), epochs: int = 2):
    return [_spec(g, loss, seed=seed, epochs=epochs) for seed in seeds for g, loss in FACTORIAL]


def test_each_bundled_cell_matches_the_cell_trained_alone():
    x, y = _data()
    specs = _specs(seeds=(42, 2024))
    bundled = train_bundle(x, y, specs)
    for spec, result in zip(specs, bundled, strict=True):
        alone = train_cell(x, y, spec)
        assert result.initial_weight_hash == alone.initial_weight_hash, spec.cell
        assert result.batch_order_hashes == alone.batch_order_hashes, spec.cell
        assert result.updates == alone.updates and result.parameters == alone.parameters
        mine, theirs = result.model.state_dict(), alone.model.state_dict()
        assert mine.keys() == theirs.keys()
        for name in set(theirs) - BATCHNORM_CANCELLED:
            torch.testing.assert_close(mine[name], theirs[name], rtol=1e-4, atol=1e-5)
        # The bias before BatchNorm gets gradients of pure rounding noise, which AdamW scales
        # to steps of lr: it drifts apart, but the batch statistics cancel it exactly
        outputs = []
        for model in (result.model, alone.model):
            torch.manual_seed(0)  # the same dropout masks for both
            outputs.append(model.train()(torch.as_tensor(x[:32])))
        torch.testing.assert_close(*outputs, rtol=1e-4, atol=1e-5)
        log, reference = result.log, alone.log
        assert list(log.columns) == list(reference.columns)
        np.testing.assert_allclose(log["loss"], reference["loss"], rtol=1e-4)


def test_a_bundle_of_one_and_a_bundle_of_many_give_a_cell_the_same_bytes():
    x, y = _data()
    specs = _specs(seeds=(42, 2024))
    many = train_bundle(x, y, specs)[5]
    one = train_bundle(x, y, [specs[5]])[0]
    for name, tensor in one.model.state_dict().items():
        assert torch.equal(many.model.state_dict()[name], tensor), name


def test_a_non_finite_cell_stops_the_bundle_naming_that_cell():
    x, y = _data()
    specs = _specs()
    specs[2] = dataclasses.replace(specs[2], lr=1e-3)
    bad = dataclasses.replace(specs[3], tau=1e-30)  # logits overflow: the loss goes non-finite
    with pytest.raises(NonFiniteLossError, match=r"cell HS-42 \(seed 42\) at epoch 1, step 1"):
        train_bundle(x, y, [*specs[:3], bad])


def test_cells_that_cannot_share_a_step_are_refused():
    specs = _specs()
    with pytest.raises(BundleError, match="differ in lr"):
        train_bundle(*_data(), [specs[0], dataclasses.replace(specs[1], lr=0.5)])
    with pytest.raises(BundleError, match="holds a cell twice"):
        train_bundle(*_data(), [specs[0], specs[0]])


def test_runs_of_one_cell_at_other_temperatures_share_a_bundle():
    """Tuning runs: one cell name (E_S at the tuning seed), one run per tau, each its own."""
    x, y = _data()
    runs = [dataclasses.replace(_specs()[1], epochs=1, tau=tau) for tau in (0.1, 0.5)]
    bundled = train_bundle(x, y, runs)
    assert loss_groups(runs) == [[0], [1]]
    for spec, result in zip(runs, bundled, strict=True):
        alone = train_cell(x, y, spec)
        np.testing.assert_allclose(result.log["loss"], alone.log["loss"], rtol=1e-4)
    assert not np.allclose(bundled[0].log["loss"], bundled[1].log["loss"])


def test_cells_that_differ_only_in_their_seed_share_a_loss_group():
    specs = _specs(seeds=(42, 2024))
    tuned = dataclasses.replace(specs[1], tau=0.7)  # E_S at another temperature
    assert loss_groups(specs) == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert loss_groups([*specs, tuned]) == [[0, 4], [1, 5], [2, 6], [3, 7], [8]]


def test_the_training_logs_name_each_epoch_out_of_its_total(caplog):
    x, y = _data()
    with caplog.at_level("INFO"):
        train_bundle(x, y, _specs(epochs=2))
        train_cell(x, y, _specs(epochs=2)[0])
    lines = [record.getMessage() for record in caplog.records]
    assert sum(" bundle of 4 cells epoch 2/2: " in line for line in lines) == 1
    assert sum(" epoch 1/2: " in line and "bundle" not in line for line in lines) == 1
