"""A bundled cell's spec, name and record keys are those it gets trained alone."""

from __future__ import annotations

import pytest
from conftest import REPO

from hierbench.config import load_config
from hierbench.stages.training import bundle_member

CONFIG = load_config(REPO / "configs/tiny.yaml")


def test_a_curvature_cell_trains_at_its_point_for_the_controls_epochs():
    cell = {"point": "c2_r0.4", "geometry": "H", "seed": "42"}
    spec, label, extra = bundle_member("cub", cell, CONFIG, None, 3)
    assert (spec.loss, spec.curvature, spec.radius, spec.epochs) == ("R", 2.0, 0.4, 3)
    assert (label, extra) == ("HR-42@c2_r0.4", {"control": "curvature"})
    matched = bundle_member("cub", {**cell, "point": "euclidean", "geometry": "E"}, CONFIG, None, 3)
    assert matched[0].geometry == "E" and matched[1] == "ER-42@euclidean"
    with pytest.raises(ValueError, match="trains geometry 'H', not 'E'"):
        bundle_member("cub", {**cell, "geometry": "E"}, CONFIG, None, 3)


def test_an_outer_split_cell_names_its_split_and_a_final_cell_nothing_more():
    cell = {"outer": "outer-2", "geometry": "E", "loss": "R", "seed": 42}
    spec, label, extra = bundle_member("cub", cell, CONFIG, None, None)
    assert (label, extra) == ("ER-42@outer-2", {"train_split": "outer-2"})
    assert spec.epochs == CONFIG["training"]["epochs"]
    final = bundle_member("cub", {"geometry": "H", "loss": "R", "seed": 2024}, CONFIG, None, None)
    assert final[0].geometry == "H" and final[1:] == ("HR-2024", {})
