"""The objective registry (hierbench.losses.registry): a plugin is found by import path, file or
entry point; every flaw in naming it is one error naming the config key; the example
triplet-margin objective is the plain loop it describes."""

from __future__ import annotations

import itertools
import sys
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from hierbench import factorial, plugins
from hierbench.losses.registry import (
    BUILT_IN,
    ObjectiveError,
    PlainObjective,
    load_reference,
    objective,
    objectives,
)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "triplet_margin.py"
KEY = "plugins.objectives.T"


def _plugin_file(folder: Path, body: str, name: str = "my_objective.py") -> Path:
    path = folder / name
    path.write_text("from hierbench.losses.registry import PlainObjective\n" + body)
    return path


def test_the_built_in_objectives_are_the_papers_and_only_supcon_reads_a_temperature():
    assert sorted(BUILT_IN) == ["R", "S"]
    assert [BUILT_IN[code].needs_tau for code in ("R", "S")] == [False, True]
    assert all(entry.source is None for entry in BUILT_IN.values())


def test_a_file_plugin_loads_with_its_file_as_the_source():
    loaded = load_reference(f"{EXAMPLE}:OBJECTIVE", KEY)
    assert loaded.name == "triplet_margin" and loaded.source == EXAMPLE.resolve()
    assert not loaded.needs_tau


def test_a_module_plugin_loads_by_import_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    _plugin_file(tmp_path, "OBJ = PlainObjective('mine', lambda d, l, s: (d.sum(), {}))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_objective", raising=False)
    loaded = load_reference("my_objective:OBJ", KEY)
    assert loaded.name == "mine" and loaded.source == (tmp_path / "my_objective.py").resolve()


def test_an_entry_point_plugin_loads_by_name(monkeypatch: pytest.MonkeyPatch):
    point = metadata.EntryPoint("triplet", f"{__name__}:ENTRY", factorial.ENTRY_POINT_GROUP)
    monkeypatch.setattr(
        plugins.metadata,
        "entry_points",
        lambda group: [point] if group == factorial.ENTRY_POINT_GROUP else [],
    )
    assert load_reference("entry-point:triplet", KEY) == ENTRY
    with pytest.raises(ObjectiveError, match=r"plugins.objectives.T: no entry point 'other'"):
        load_reference("entry-point:other", KEY)


def _entry_loss(distances, labels, spec):
    return distances.mean(dim=(-2, -1)), {}


ENTRY = PlainObjective("entry", _entry_loss, source=Path(__file__).resolve())


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("no_colon", r"is not 'package.module:NAME'"),
        ("missing/file.py:OBJ", r"no file missing/file.py"),
        ("hierbench_no_such_module:OBJ", r"cannot import 'hierbench_no_such_module'"),
        ("hierbench.protocol:NOPE", r"hierbench.protocol has no 'NOPE'"),
        (
            "hierbench.protocol:LOSSES",
            r"is a tuple, not a hierbench.losses.registry.PlainObjective",
        ),
    ],
)
def test_a_wrong_reference_is_one_error_naming_the_key(reference: str, message: str):
    with pytest.raises(ObjectiveError, match=rf"^plugins\.objectives\.T: .*{message}"):
        load_reference(reference, KEY)


def test_a_plugin_that_asks_for_a_tuned_temperature_is_refused(tmp_path: Path):
    path = _plugin_file(tmp_path, "OBJ = PlainObjective('t', lambda d, l, s: (d, {}), True)\n")
    with pytest.raises(ObjectiveError, match="needs_tau"):
        load_reference(f"{path}:OBJ", KEY)


@pytest.mark.parametrize("code", ["R", "S", "A", "L", "TT", "t"])
def test_a_plugin_code_must_be_a_free_capital_letter(code: str):
    config = {"plugins": {"objectives": {code: f"{EXAMPLE}:OBJECTIVE"}}}
    with pytest.raises(ObjectiveError, match=rf"plugins.objectives.{code}: a plugin's loss code"):
        objectives(config)


def test_objectives_are_the_built_in_ones_and_the_configs_plugins():
    config = {"plugins": {"objectives": {"T": f"{EXAMPLE}:OBJECTIVE"}}}
    assert sorted(objectives(config)) == ["R", "S", "T"]
    assert objective("T", config).name == "triplet_margin"
    assert objective("R") is BUILT_IN["R"]
    with pytest.raises(ObjectiveError, match=r"no objective for loss 'T'"):
        objective("T", {})


def _triplet_loop(distances: torch.Tensor, leaves: list[int], margin: float) -> float:
    """The example's loss, one triple at a time."""
    hinges = [
        max(0.0, float(distances[a, p] - distances[a, n]) + margin)
        for a, p, n in itertools.product(range(len(leaves)), repeat=3)
        if a != p and leaves[a] == leaves[p] and leaves[a] != leaves[n]
    ]
    return sum(hinges) / max(len(hinges), 1)


def test_the_triplet_example_is_its_plain_loop_cell_by_cell():
    example = load_reference(f"{EXAMPLE}:OBJECTIVE", KEY)
    module = sys.modules[f"hierbench_plugin_{EXAMPLE.stem}"]
    generator = torch.Generator().manual_seed(0)
    points = torch.randn(2, 7, 3, generator=generator)  # two bundled cells, 7 images each
    distances = torch.cdist(points, points)
    leaves = [0, 0, 1, 1, 1, 2, 0]
    labels = torch.tensor([[leaf, leaf // 2, 0] for leaf in leaves]).expand(2, 7, 3)
    losses, levels = example.loss(distances, labels, SimpleNamespace())
    assert levels == {} and losses.shape == (2,)
    for cell in range(2):
        expected = _triplet_loop(distances[cell], leaves, module.MARGIN)
        assert losses[cell].item() == pytest.approx(expected, rel=1e-6)
