"""Where a run's artifacts live (hierbench.layout, hierbench.paths): the patterns, each cell
kind's instances in the order the rules list them, and the path lists the rules take from them."""

from __future__ import annotations

import pytest
from conftest import REPO, TINY_SEEDS

from hierbench.cellkinds import (
    CELL_KINDS,
    cell_instances,
    evaluation_cells,
    locked_kinds,
    sealed_evaluation,
)
from hierbench.config import evaluation_config, load_config, split_config
from hierbench.controls.outer import outer_cells
from hierbench.layout import (
    cell_folder,
    evaluation_files,
    evaluation_stem,
    fill,
)
from hierbench.metrics.sealed_scoring import SealedCell, sealed_cells
from hierbench.paths import RunPaths, bundle_cells
from hierbench.protocol import GEOMETRIES, LOSSES, POINCARE, cell_name

CONFIG = load_config(REPO / "configs/tiny.yaml")
PATHS = RunPaths("runs/x", CONFIG)


def test_fill_sets_the_named_wildcards_and_keeps_the_others():
    assert fill("{dataset}/cells/{geometry}{loss}-{seed}", seed=7, loss="R") == (
        "{dataset}/cells/{geometry}R-7"
    )


def test_a_cells_evaluation_mirrors_its_folder():
    for kind in CELL_KINDS:
        assert cell_folder(kind).replace("/cells/", "/eval/") == evaluation_stem(kind)
    assert evaluation_stem("frozen") == "{dataset}/eval/frozen"
    assert evaluation_stem("companion", "angle") == "{dataset}/eval/angle/{head}A-{seed}"
    assert evaluation_files("s") == {"per_query": "s.parquet", "summary": "s_summary.parquet"}


def test_factorial_cells_come_in_geometry_loss_seed_order():
    names = [cell_name(**v) for v in cell_instances(CONFIG, "cub", "factorial")]
    assert names == [cell_name(g, x, s) for g in GEOMETRIES for x in LOSSES for s in TINY_SEEDS]


def test_every_kind_lists_one_instance_per_cell_it_trains():
    seeds = len(TINY_SEEDS)
    counts = {kind: len(list(cell_instances(CONFIG, "cub", kind))) for kind in CELL_KINDS}
    splits = CONFIG["datasets"]["cub"]["splits"]["outer"]["count"]
    assert counts == {
        "factorial": len(GEOMETRIES) * len(LOSSES) * seeds,
        "curvature": 4 * seeds,  # matched E_R, two points and the operating point
        "semantic": 4 * seeds,
        "hier": seeds,
        "outer": splits * len(outer_cells(CONFIG, "cub")),
        "companion": 2 * seeds,
    }
    assert not list(cell_instances(CONFIG, "nabirds", "hier"))  # baselines off there


def test_a_factorial_bundle_writes_its_manifest_and_each_cells_three_files():
    cells = bundle_cells(CONFIG, "factorial")
    assert list(cells) == [f"{g}_{x}_{s}" for g in GEOMETRIES for x in LOSSES for s in TINY_SEEDS]
    assert cells[f"H_S_{TINY_SEEDS[0]}"] == {"geometry": "H", "loss": "S", "seed": TINY_SEEDS[0]}
    outputs = PATHS.bundle_outputs("factorial")
    assert next(iter(outputs.items())) == (
        "manifest",
        "runs/x/{dataset}/cells/bundles/factorial.json",
    )
    assert len(outputs) == 1 + 3 * len(cells)
    seed = TINY_SEEDS[-1]
    assert outputs[f"record_E_R_{seed}"] == f"runs/x/{{dataset}}/cells/ER-{seed}/record.json"
    files = ("model.safetensors", "train_log.parquet", "record.json")
    every_file = [path for name in files for path in PATHS.cells("{dataset}", ["factorial"], name)]
    assert sorted(outputs.values()) == sorted([outputs["manifest"], *every_file])
    # an outer split's arms train alone, each for its own validation-chosen epochs
    outer = PATHS.cell_outputs("outer")
    assert (
        outer["model"]
        == "runs/x/{dataset}/cells/outer/{outer}/{geometry}{loss}-{seed}/model.safetensors"
    )
    with pytest.raises(KeyError, match="not bundled"):
        bundle_cells(CONFIG, "outer")
    seeds = {str(seed): {"seed": seed} for seed in TINY_SEEDS}
    assert bundle_cells(CONFIG, "curvature") == bundle_cells(CONFIG, "semantic") == seeds
    curvature = PATHS.bundle_outputs("curvature")
    assert (
        curvature["manifest"] == "runs/x/{dataset}/cells/bundles/curvature/{point}-{geometry}.json"
    )
    assert curvature[f"record_{TINY_SEEDS[0]}"] == (
        f"runs/x/{{dataset}}/cells/curvature/{{point}}/{{geometry}}R-{TINY_SEEDS[0]}/record.json"
    )
    semantic = PATHS.bundle_outputs("semantic")
    assert semantic[f"model_{TINY_SEEDS[1]}"] == (
        f"runs/x/{{dataset}}/cells/semantic/{{arm}}/ES-{TINY_SEEDS[1]}/model.safetensors"
    )
    with pytest.raises(KeyError, match="not bundled; bundled kinds"):
        bundle_cells(CONFIG, "hier")


def test_a_sealed_evaluation_job_scores_a_bundle_each_cell_into_its_own_files():
    inputs, outputs = PATHS.sealed_evaluation(sealed_evaluation("factorial"))
    labels = [f"{g}_{x}_{s}" for g in GEOMETRIES for x in LOSSES for s in TINY_SEEDS]
    assert list(evaluation_cells(CONFIG, "factorial")) == labels
    assert list(inputs) == [f"{key}_{label}" for label in labels for key in ("model", "record")]
    assert list(outputs) == [
        f"{key}_{label}" for label in labels for key in ("per_query", "summary")
    ]
    seed = TINY_SEEDS[1]
    assert inputs[f"record_H_S_{seed}"] == f"runs/x/{{dataset}}/cells/HS-{seed}/record.json"
    assert outputs[f"summary_H_S_{seed}"] == f"runs/x/{{dataset}}/eval/HS-{seed}_summary.parquet"
    # the very files a job per cell would write
    per_cell = PATHS.evaluation_outputs("factorial").values()
    cells = evaluation_cells(CONFIG, "factorial").values()
    assert list(outputs.values()) == [fill(path, **c) for c in cells for path in per_cell]
    # a curvature point's and a semantic arm's job: the seeds, the variant the job's wildcard
    _, curvature = PATHS.sealed_evaluation(sealed_evaluation("curvature"))
    assert curvature[f"per_query_{seed}"] == (
        f"runs/x/{{dataset}}/eval/curvature/{{point}}/{{geometry}}R-{seed}.parquet"
    )
    companion, angle = PATHS.sealed_evaluation(sealed_evaluation("companion"), "angle")
    assert list(evaluation_cells(CONFIG, "companion")) == [
        f"{h}_{s}" for h in "EL" for s in TINY_SEEDS
    ]
    assert angle[f"per_query_L_{seed}"] == f"runs/x/{{dataset}}/eval/angle/LA-{seed}.parquet"
    assert companion[f"model_L_{seed}"] == f"runs/x/{{dataset}}/cells/LA-{seed}/model.safetensors"
    # a seedless arm: its own two files
    scored, frozen = PATHS.sealed_evaluation(sealed_evaluation("frozen"))
    assert scored == {} and frozen == PATHS.evaluation_outputs("frozen")


def test_a_jobs_inputs_and_outputs_pair_up_by_cell():
    scored, outputs = PATHS.sealed_evaluation(sealed_evaluation("factorial"))
    sealed = {"lock": "L", "sealed_features": "F", "sealed_splits": "S"}
    cells = sealed_cells({**sealed, **scored}, outputs)
    assert len(cells) == len(evaluation_cells(CONFIG, "factorial"))
    label = f"H_S_{TINY_SEEDS[-1]}"
    record, model = scored[f"record_{label}"], scored[f"model_{label}"]
    assert cells[-1] == (
        SealedCell(record, model, "L", "F", "S"),
        {"per_query": outputs[f"per_query_{label}"], "summary": outputs[f"summary_{label}"]},
    )
    frozen = PATHS.evaluation_outputs("frozen")
    assert sealed_cells(sealed, frozen) == []  # a seedless arm scores no cell


def test_a_kind_no_dataset_trains_has_no_evaluation_job():
    off = {**CONFIG, "companion": {**CONFIG["companion"], "enabled": False}}
    assert evaluation_cells(off, "companion") == {}
    assert RunPaths("runs/x", off).sealed_evaluation(sealed_evaluation("companion")) == ({}, {})


def test_an_unknown_kind_is_an_error_naming_the_known_ones():
    with pytest.raises(KeyError, match="no cell kind 'moth'"):
        list(cell_instances(CONFIG, "cub", "moth"))


def test_cells_fill_every_wildcard_and_can_keep_a_subset():
    models = PATHS.cells("cub", locked_kinds(), "model.safetensors")
    first = cell_name(GEOMETRIES[0], LOSSES[0], TINY_SEEDS[0])
    assert models[0] == f"runs/x/cub/cells/{first}/model.safetensors"
    assert not any("{" in path for path in models)
    poincare = PATHS.cells("cub", ["factorial"], "record.json", geometry=POINCARE)
    assert len(poincare) == len(LOSSES) * len(TINY_SEEDS)
    assert all(f"/cells/{POINCARE}" in path for path in poincare)


def test_summaries_cover_cells_and_seedless_arms():
    summaries = PATHS.summaries("cub", ["frozen", "hier"])
    assert summaries == ["runs/x/cub/eval/frozen_summary.parquet"] + [
        f"runs/x/cub/eval/hier/hier-{seed}_summary.parquet" for seed in TINY_SEEDS
    ]


def test_a_controls_outputs_are_named_in_the_rules_order():
    outputs = PATHS.control_outputs("curvature", ("curvature", "curvature_contrasts"))
    assert list(outputs) == ["per_seed", "table", "contrasts", "figure"]
    assert outputs["per_seed"] == ["runs/x/{dataset}/tables/controls/curvature_per_seed.parquet"]
    assert outputs["figure"] == [
        "runs/x/{dataset}/figures/curvature.png",
        "runs/x/{dataset}/figures/curvature.pdf",
    ]


def test_the_split_and_evaluation_params_hold_only_what_their_stages_read():
    assert set(split_config(CONFIG, "cub")) <= {"splits", "image_pool"}
    sealed = evaluation_config(CONFIG, "cub")
    assert set(sealed) == {"evaluation", "training", "datasets"}
    assert set(sealed["datasets"]["cub"]["splits"]) == {"query_gallery"}
    assert "training" not in evaluation_config(CONFIG, "cub", distance_clip=False)


def test_a_run_targets_each_datasets_summary_and_every_switched_on_control():
    targets = PATHS.final_targets(["cub", "nabirds"])
    assert "runs/x/cub/tables/summary.md" in targets
    assert "runs/x/nabirds/taxonomy/shuffled_paper.parquet" in targets  # the paper's 15
    # CUB's semantic control trains on its shuffle: CUB's default setting is the minimum
    assert [p for p in targets if "cub/taxonomy/shuffled" in p] == [
        "runs/x/cub/taxonomy/shuffled_minimum.parquet"
    ]
    assert "runs/x/cub/outer/outer.md" in targets  # outer splits on for cub only
    assert not any(path.startswith("runs/x/nabirds/outer/") for path in targets)
    assert len(targets) == len(set(targets))
