"""benchmarks/companion_demo.py: the A cells trained once per pair source on a run's development
features, scored on the validation images beside the frozen features (issue #33, item 9)."""

from __future__ import annotations

import importlib.util
import sys

import pytest
import torch
from conftest import REPO

from hierbench.cells.companion import pair_sources


def _load(name: str):
    """A benchmark script, imported under its own name (companion_demo imports companion_sanity
    by that name from the benchmarks folder)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(autouse=True)
def _one_thread():
    """One torch thread: the heads are tiny."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_every_source_is_a_valid_pair_setting_and_they_differ():
    demo = _load("companion_demo")
    settings = {
        name: pair_sources({"companion": {"pairs": pairs}}) for name, pairs in demo.SOURCES.items()
    }
    assert len(set(settings.values())) == len(settings)
    assert not settings["method"].taxonomy and settings["all"].taxonomy  # the method's own two


def test_each_source_trains_its_own_cells_and_the_table_has_a_row_each():
    demo, sanity = _load("companion_demo"), _load("companion_sanity")
    collection = sanity.make_collection(42)
    config = sanity.sanity_config(epochs=2, lr=1e-3, batch_size=32)
    frame = demo.run_sources(collection, config, sanity.DATASET, [42], ["boxes", "taxonomy"])
    assert list(zip(frame["source"], frame["arm"], strict=True)) == [
        ("-", "frozen"),
        ("boxes", "E_A"),
        ("boxes", "L_A"),
        ("taxonomy", "E_A"),
        ("taxonomy", "L_A"),
    ]
    assert config["companion"]["pairs"] == sanity.METHOD_PAIRS  # each source on its own copy
    by_cell = frame.set_index(["source", "arm"])["mean_hierarchy"]
    assert by_cell[("boxes", "E_A")] != by_cell[("taxonomy", "E_A")]  # the pairs differ
    table = demo.markdown(frame, "heading")
    assert table.count("\n| boxes | ") == 2 and table.count("\n| taxonomy | ") == 2
    assert "| boxes E_A | " in table  # pair geometry per source and arm
