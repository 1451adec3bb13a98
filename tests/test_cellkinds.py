"""The registry of cell kinds (hierbench.cellkinds): one object per kind, and every list the
workflow reads (locked, audited, bundled, the rules that train and score) derived from it."""

from __future__ import annotations

import pytest
from conftest import REPO

from hierbench.cellkinds import (
    CELL_KINDS,
    TRAINING_RULES,
    audited_kinds,
    cell_kind,
    locked_kinds,
    picture_arms,
    sealed_evaluation,
)
from hierbench.layout import BUNDLE_MANIFESTS, CELLS
from hierbench.runtools.rebuild_map import rule_blocks

RULES = {block.name for block in rule_blocks(REPO / "rules")}


def test_every_kind_has_its_folder_pattern_and_every_pattern_its_kind():
    assert list(CELL_KINDS) == list(CELLS)
    assert all(kind.folder == CELLS[name] for name, kind in CELL_KINDS.items())


def test_the_lock_and_the_audit_cover_the_kinds_the_registry_marks():
    assert locked_kinds() == ("factorial", "curvature", "semantic", "hier", "companion")
    assert audited_kinds() == ("factorial", "curvature", "hier", "companion")
    assert set(audited_kinds()) <= set(locked_kinds())  # the audit reads locked cells only


def test_bundled_kinds_are_those_with_a_manifest_pattern():
    bundled = {name for name, kind in CELL_KINDS.items() if kind.bundled}
    assert bundled == {"factorial", "curvature", "semantic"} == set(BUNDLE_MANIFESTS) & set(CELLS)


def test_each_kind_is_trained_by_rules_the_workflow_defines():
    trained = {rule.cell_kind for rule in TRAINING_RULES}
    assert trained == set(CELL_KINDS)
    assert {rule.rule for rule in TRAINING_RULES} <= RULES
    for kind in CELL_KINDS.values():
        assert kind.evaluation_rule is None or kind.evaluation_rule in RULES, kind.name
        assert (kind.evaluation_rule is not None) == kind.locked, kind.name  # sealed iff locked


def test_a_bundle_rule_trains_a_bundle_kind_and_the_others_a_cell_each():
    bundled = {rule.rule for rule in TRAINING_RULES if rule.bundled}
    assert bundled == {
        "train_factorial",
        "train_added_loss",
        "train_added_geometry",
        "train_curvature",
        "train_semantic",
    }
    assert all("cells" in rule.params for rule in TRAINING_RULES if rule.bundled)
    alone = [rule for rule in TRAINING_RULES if not rule.bundled]
    assert all(CELL_KINDS[rule.trains].bundled is False for rule in alone)


def test_an_added_level_names_the_plugins_it_runs():
    added = {rule.rule: (rule.added, rule.plugins) for rule in TRAINING_RULES if rule.added}
    assert added == {
        "train_added_loss": ("loss", ("objectives", "geometries")),
        "train_added_geometry": ("geometry", ("geometries",)),
    }


def test_an_unknown_kind_names_the_known_ones():
    with pytest.raises(KeyError, match=r"no cell kind 'moth'; known kinds: \['companion'"):
        cell_kind("moth")


def test_a_sealed_evaluation_is_found_by_its_kind_or_arm():
    assert sealed_evaluation("curvature").rule == "evaluate_curvature_cell"
    assert sealed_evaluation("curvature").variant == "point"
    assert sealed_evaluation("frozen").scored == {}
    with pytest.raises(KeyError, match="no sealed evaluation of 'moth'; known: \\['factorial'"):
        sealed_evaluation("moth")


def _tiny() -> dict:
    from hierbench.config import load_config

    return load_config(REPO / "configs/tiny.yaml")


def test_the_pictures_draw_each_arm_once_by_its_first_seeds_cell():
    config = _tiny()
    cub = picture_arms(config, "cub")
    assert [cell.arm for cell in cub] == [
        "frozen",
        "E_R",
        "H_R",
        "E_S",
        "H_S",
        "E_A",
        "L_A",
        "hier",
    ]
    assert cub[0].kind is None and cub[0].values == {}
    first = config["training"]["seeds"][0]
    assert all(cell.values["seed"] == first for cell in cub[1:])
    assert cub[2].values == {"geometry": "H", "loss": "R", "seed": first}
    assert (cub[6].kind, cub[6].values) == ("companion", {"head": "L", "seed": first})
    assert "hier" not in [cell.arm for cell in picture_arms(config, "nabirds")]  # no baselines


def test_the_pictures_leave_out_the_companion_when_off_and_an_added_loss():
    config = _tiny()
    config["companion"]["enabled"] = False
    config["factorial"] = {"losses": ["R", "S", "X"], "geometries": ["E", "H"]}
    arms = [cell.arm for cell in picture_arms(config, "nabirds")]
    assert arms == ["frozen", "E_R", "H_R", "E_S", "H_S"]
