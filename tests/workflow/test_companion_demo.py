"""benchmarks/companion_demo.py: the A cells trained once per pair source on a run's development
features, scored on the validation images beside the frozen features (issue #33, item 9)."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import REPO, TINY_RUN, TINY_SEEDS

from hierbench.cells.companion import pair_sources
from hierbench.metrics.scoring import l2_normalised


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


def test_strict_middle_partners_share_the_middle_group_and_never_the_leaf():
    demo = _load("companion_demo")
    # leaf, middle, high: middle 0 holds leaves 0 and 1, middle 1 a single leaf (2)
    labels = np.array([[0, 0, 0]] * 3 + [[1, 0, 0]] * 2 + [[2, 1, 0]] * 3)
    partners = demo.strict_middle_partners(labels, 2, torch.Generator().manual_seed(0))
    for row, chosen in enumerate(partners.tolist()):
        found = [c for c in chosen if c != demo.NO_PARTNER]
        assert len(found) == len(set(found))
        assert all(labels[c, 1] == labels[row, 1] and labels[c, 0] != labels[row, 0] for c in found)
    assert [len([c for c in chosen if c >= 0]) for chosen in partners.tolist()] == [2] * 5 + [0] * 3


def test_the_variants_train_their_arms_and_the_frozen_features_are_scored_as_sealed():
    demo, sanity = _load("companion_demo"), _load("companion_sanity")
    collection = sanity.make_collection(42)
    config = sanity.sanity_config(epochs=2, lr=1e-3, batch_size=32)
    sources = ["method", "no_scale", "middle_partners"]
    frame = demo.run_sources(collection, config, sanity.DATASET, [42], sources)
    assert list(zip(frame["source"], frame["arm"], strict=True)) == [
        ("-", "frozen"),
        ("method", "E_A"),
        ("method", "L_A"),
        ("no_scale", "L_A"),
        ("middle_partners", "E_A"),
        ("middle_partners", "L_A"),
    ]
    by_cell = frame.set_index(["source", "arm"])["mean_hierarchy"]
    assert by_cell[("no_scale", "L_A")] != by_cell[("method", "L_A")]
    assert by_cell[("middle_partners", "E_A")] != by_cell[("method", "E_A")]
    raw = sanity.retrieval(collection, collection.query, collection.gallery)
    sealed = sanity.retrieval(
        collection, l2_normalised(collection.query), l2_normalised(collection.gallery)
    )
    assert raw["leaf"] != sealed["leaf"]  # the two scorings differ on this collection
    assert by_cell[("-", "frozen")] == pytest.approx(sealed["mean_hierarchy"])
    # outside the variant's block, the tangent scale and the partner draw are the pipeline's
    from hierbench.geometry.lorentz import LorentzHead
    from hierbench.losses import entailment_objective, entailment_pairs

    assert LorentzHead.__dict__["tangent_scale"].fget.__name__ == "tangent_scale"
    assert entailment_objective.cross_image_partners is entailment_pairs.cross_image_partners


@pytest.mark.slow  # reads the tiny run's development features
def test_the_pipeline_and_the_diagnostic_train_the_same_cell_on_the_same_rows(built_repo, tmp_path):
    """Issue #50: the pipeline's A cells and the diagnostic disagreed by a factor of two. One
    A cell trained through the pipeline's stage code and through the diagnostic's path on the
    pipeline's rows (final/train) has the same weights, bit for bit: the training is the same.
    The step that differs is the rows: final/train holds the validation images the diagnostic
    scores, so the diagnostic trains on tuning/train, which holds none of them."""
    import json

    from safetensors.torch import load_file

    from hierbench.config import load_config
    from hierbench.provenance.records import JobContext
    from hierbench.stages.companion import train_companion_cell
    from hierbench.training.trainer import PROJECTOR_PREFIX

    demo, sanity = _load("companion_demo"), _load("companion_sanity")
    config = load_config(
        built_repo / "configs/tiny.yaml", built_repo / "schemas/config.schema.yaml"
    )
    run, dataset, seed = built_repo / TINY_RUN, "cub", TINY_SEEDS[0]
    folder = run / dataset / "features"
    outputs = {"model": tmp_path / "model.safetensors", "log": tmp_path / "log.parquet"}
    outputs["record"] = tmp_path / "record.json"
    train_companion_cell(
        dataset,
        "E",
        seed,
        folder / "dev.parquet",
        folder / "dev_crops.parquet",
        run / dataset / "splits/dev.parquet",
        config,
        outputs,
        JobContext(rule="test"),
    )
    pipeline = load_file(outputs["model"])
    collection = demo.development_collection(run, dataset, ("final", "train"))
    spec, objective = sanity.arm_spec("E_A", collection, seed, config, dataset)
    result = sanity.train_arm("E_A", collection, spec, objective)
    diagnostic = {
        name: tensor for name, tensor in result.model.state_dict().items() if name in pipeline
    }
    assert set(diagnostic) == set(pipeline) and any(
        k.startswith(PROJECTOR_PREFIX) for k in pipeline
    )
    for name, tensor in pipeline.items():
        assert torch.equal(diagnostic[name], tensor), name
    assert json.loads(outputs["record"].read_text())["train_examples"] == len(collection.train)
    # the diagnostic's own rows hold none of the validation images it scores
    dev = pd.read_parquet(run / dataset / "splits/dev.parquet")
    rows = {
        role: set(dev.loc[(dev["split"] == s) & (dev["role"] == r), "image_id"])
        for role, (s, r) in {
            "final": ("final", "train"),
            "train": demo.TRAIN_ROLE,
            "query": demo.QUERY_ROLE,
            "gallery": demo.GALLERY_ROLE,
        }.items()
    }
    scored = rows["query"] | rows["gallery"]
    assert scored <= rows["final"]  # what made the factor of two
    assert not scored & rows["train"]
