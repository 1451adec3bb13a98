"""The factorial's axes (hierbench.factorial): an added loss brings its arms on every geometry
and its simple effects against each paper loss, an added geometry its arms under every loss and
its effects against each paper geometry; the paper's effects are untouched; a flawed factorial
is one error naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from hierbench.factorial import (
    GeometryError,
    ObjectiveError,
    added_arms,
    added_effects,
    added_geometries,
    added_levels_named,
    added_losses,
    check_factorial,
    factorial_geometries,
    factorial_losses,
    geometry_reference,
    geometry_references,
    geometry_sources,
    is_added_effect,
    is_paper_effect,
    plugin_sources,
    waits_for_tau,
)
from hierbench.protocol import FACTORIAL_EFFECTS

REPO = Path(__file__).resolve().parents[1]
PLUGIN = {"plugins": {"objectives": {"T": "examples/triplet_margin.py:OBJECTIVE"}}}


def test_the_default_factorial_is_the_papers():
    assert factorial_losses({}) == ("R", "S") and factorial_geometries({}) == ("E", "H")
    assert (
        added_losses({}) == () and added_arms(("R", "S")) == () and added_effects(("R", "S")) == {}
    )


def test_an_added_loss_brings_its_arms_and_effects_against_each_paper_loss():
    config = {"factorial": {"losses": ["R", "S", "T"]}, **PLUGIN}
    assert added_losses(config) == ("T",)
    assert added_arms(factorial_losses(config)) == ("E_T", "H_T")
    effects = added_effects(factorial_losses(config))
    assert sorted(effects) == sorted(["loss_TR_E", "loss_TR_H", "loss_TS_E", "loss_TS_H", "geom_T"])
    arms = {"E_R": 0.10, "H_R": 0.20, "E_S": 0.30, "H_S": 0.45, "E_T": 0.50, "H_T": 0.80}
    computed = {name: formula(arms) for name, (formula, _) in effects.items()}
    assert computed == pytest.approx(
        {"loss_TR_E": 0.40, "loss_TR_H": 0.60, "loss_TS_E": 0.20, "loss_TS_H": 0.35, "geom_T": 0.30}
    )
    assert effects["loss_TS_H"][1] == "H_T - H_S"
    assert not any(is_paper_effect(name) for name in effects)
    assert all(is_paper_effect(name) for name in FACTORIAL_EFFECTS)


def test_a_factorial_without_the_papers_losses_is_refused():
    with pytest.raises(
        ValueError, match=r"factorial.losses \['R', 'T'\] lacks the paper's \['S'\]"
    ):
        check_factorial({"factorial": {"losses": ["R", "T"]}, **PLUGIN})


def test_an_added_loss_no_plugin_names_is_refused():
    with pytest.raises(ValueError, match=r"plugins.objectives names no 'U'"):
        check_factorial({"factorial": {"losses": ["R", "S", "U"]}, **PLUGIN})


@pytest.mark.parametrize("taken", ["A", "L"])
def test_an_added_loss_may_not_take_another_cells_code(taken: str):
    with pytest.raises(ValueError, match=rf"{taken!r} is taken by another cell"):
        check_factorial({"factorial": {"losses": ["R", "S", taken]}})


def test_an_added_losss_source_is_its_plugins_file(monkeypatch):
    config = {"factorial": {"losses": ["R", "S", "T"]}, **PLUGIN}
    monkeypatch.chdir(REPO)
    assert plugin_sources(config) == {"T": (REPO / "examples/triplet_margin.py").resolve()}
    missing = {**config, "plugins": {"objectives": {"T": "nowhere/plugin.py:OBJ"}}}
    with pytest.raises(ObjectiveError, match=r"^plugins.objectives.T: no file nowhere/plugin.py"):
        plugin_sources(missing)


@pytest.mark.parametrize(
    ("loss", "pinned", "waits"),
    [
        ("S", {"E": None, "H": None}, True),
        ("S", {"E": 0.1, "H": 0.1}, False),
        ("S", {"E": 0.1, "H": None}, True),  # a bundle over both geometries: one unpinned
        ("R", {"E": None, "H": None}, False),
        ("T", {"E": None, "H": None}, False),  # an added loss never reads the tuned one
        (None, {"E": None, "H": 0.1}, True),  # the search itself, no loss of its own
    ],
)
def test_a_job_waits_for_the_tuned_temperature_only_when_its_cells_read_one(loss, pinned, waits):
    config = {"datasets": {"cub": {"tau": pinned}}}
    assert waits_for_tau(config, "cub", loss, ("E", "H")) is waits


GEOMETRY = {"plugins": {"geometries": {"C": "examples/sphere.py:GEOMETRY"}}}


def test_an_added_geometry_brings_its_arms_and_effects_against_each_paper_geometry():
    config = {"factorial": {"geometries": ["E", "H", "C"]}, **GEOMETRY}
    assert added_geometries(config) == ("C",)
    assert added_arms(factorial_losses(config), factorial_geometries(config)) == ("C_R", "C_S")
    effects = added_effects(factorial_losses(config), factorial_geometries(config))
    expected = ["geom_CE_R", "geom_CE_S", "geom_CH_R", "geom_CH_S", "loss_C"]
    assert list(effects) == expected
    arms = {"E_R": 0.10, "H_R": 0.20, "E_S": 0.30, "H_S": 0.45, "C_R": 0.25, "C_S": 0.50}
    computed = {name: formula(arms) for name, (formula, _) in effects.items()}
    assert computed == pytest.approx(
        {"geom_CE_R": 0.15, "geom_CE_S": 0.20, "geom_CH_R": 0.05, "geom_CH_S": 0.05, "loss_C": 0.25}
    )
    assert effects["geom_CH_S"][1] == "C_S - H_S" and effects["loss_C"][1] == "C_S - C_R"
    assert all(is_added_effect(name) for name in effects)
    assert not any(is_added_effect(name) for name in (*FACTORIAL_EFFECTS, "geom_A", "loss_AS_E"))


def test_an_added_loss_and_geometry_meet_in_one_arm_with_both_levels_effects():
    arms = added_arms(("R", "S", "T"), ("E", "H", "C"))
    assert arms == ("E_T", "H_T", "C_T", "C_R", "C_S")
    effects = added_effects(("R", "S", "T"), ("E", "H", "C"))
    assert {"loss_TR_C", "loss_TS_C", "geom_CE_T", "geom_CH_T"} <= set(effects)
    assert effects["loss_TR_C"][1] == "C_T - C_R" and effects["geom_CE_T"][1] == "C_T - E_T"
    for name in effects:  # the name alone says which levels it involves
        assert name in added_effects(*added_levels_named(name))


def test_a_factorial_without_the_papers_geometries_is_refused():
    with pytest.raises(
        ValueError, match=r"factorial.geometries \['E', 'C'\] lacks the paper's \['H'\]"
    ):
        check_factorial({"factorial": {"geometries": ["E", "C"]}, **GEOMETRY})


@pytest.mark.parametrize(
    ("factorial_", "message"),
    [
        ({"geometries": ["E", "H", "L"]}, r"'L' is taken by another head or loss"),
        ({"geometries": ["E", "H", "T"], "losses": ["R", "S", "T"]}, r"'T' is taken"),
        ({"geometries": ["E", "H", "U"]}, r"plugins.geometries names no 'U'"),
    ],
)
def test_an_added_geometry_needs_a_free_code_and_a_plugin(factorial_, message):
    config = {"factorial": factorial_, "plugins": {**PLUGIN["plugins"], **GEOMETRY["plugins"]}}
    with pytest.raises(ValueError, match=message):
        check_factorial(config)


def test_an_added_geometrys_source_is_its_plugins_file_and_its_cells_reference(monkeypatch):
    config = {"factorial": {"geometries": ["E", "H", "C"]}, **GEOMETRY}
    monkeypatch.chdir(REPO)
    assert geometry_sources(config) == {"C": (REPO / "examples/sphere.py").resolve()}
    assert geometry_reference(config, "C") == "examples/sphere.py:GEOMETRY"
    assert geometry_reference(config, "H") is None
    with pytest.raises(GeometryError, match=r"^plugins.geometries.E: a plugin's geometry code"):
        geometry_references({"plugins": {"geometries": {"E": "examples/sphere.py:GEOMETRY"}}})
    with pytest.raises(GeometryError, match=r"no geometry 'C'"):
        geometry_reference({}, "C")


def test_an_added_geometry_waits_for_its_own_temperature_unless_pinned():
    assert waits_for_tau({"datasets": {"cub": {"tau": {"E": 0.1, "H": 0.1}}}}, "cub", None, ("C",))
    pinned = {"datasets": {"cub": {"tau": {"E": None, "H": None, "C": 0.2}}}}
    assert not waits_for_tau(pinned, "cub", None, ("C",))
