"""The HIER-style cell's recipe: the factorial's H cell, with an optional epoch budget."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from conftest import REPO

from hierbench.config import ConfigError, load_yaml, validate_config
from hierbench.protocol import HIER, POINCARE
from hierbench.stages.hier import hier_cell_spec

SCHEMA = load_yaml(REPO / "schemas/config.schema.yaml")


def _paper_scale(hier_overrides: dict[str, Any]) -> dict[str, Any]:
    """configs/paper-scale.yaml with NABirds' HIER block updated, validated by the schema."""
    raw = copy.deepcopy(load_yaml(REPO / "configs/paper-scale.yaml"))
    raw["datasets"]["nabirds"]["controls"]["baselines"]["hier"].update(hier_overrides)
    return validate_config(raw, SCHEMA)


def test_without_its_own_budget_the_hier_cell_trains_for_the_factorials_epochs() -> None:
    config = _paper_scale({})
    spec, settings = hier_cell_spec("nabirds", 2024, config)
    assert (spec.geometry, spec.loss, spec.seed) == (POINCARE, HIER, 2024)
    assert spec.epochs == config["training"]["epochs"] == 100
    assert spec.curvature == 0.1
    assert settings.proxies == 512
    assert "epochs" not in dataclasses.asdict(settings)


def test_hier_epochs_changes_the_budget_and_nothing_else() -> None:
    default_spec, default_settings = hier_cell_spec("nabirds", 42, _paper_scale({}))
    spec, settings = hier_cell_spec("nabirds", 42, _paper_scale({"epochs": 3}))
    assert spec.epochs == 3
    assert dataclasses.replace(spec, epochs=default_spec.epochs) == default_spec
    assert settings == default_settings


@pytest.mark.parametrize("bad", [0, 2.5, "ten"])
def test_a_bad_hier_epoch_budget_is_refused_by_key(bad: Any) -> None:
    with pytest.raises(ConfigError) as caught:
        _paper_scale({"epochs": bad})
    assert "datasets.nabirds.controls.baselines.hier.epochs" in str(caught.value)
