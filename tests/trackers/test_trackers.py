"""The tracker registry, its missing-package error, the runs an export holds and the stage that
publishes them as one recorded folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO

from hierbench.cells.cell_folders import cell_folder
from hierbench.config import load_config, missing_inputs
from hierbench.paths import RunPaths
from hierbench.provenance.artifacts import provenance_path, read_provenance
from hierbench.provenance.hashing import sha256_tree
from hierbench.provenance.records import JobContext
from hierbench.stages.tracker import build_tracker_export, export_runs
from hierbench.trackers import (
    TrackerError,
    configured_tracker,
    missing_package,
    tracker_module,
)
from hierbench.trackers.contents import duration_search_runs, row_name
from hierbench.trackers.tensorboard import EVENT_FILE

JOB = JobContext(rule="unit")
EXTRA = "pip install 'hierbench[tracker]'"


def test_the_export_is_off_unless_the_config_names_a_known_tracker():
    assert configured_tracker({}) is None
    assert configured_tracker({"tracker": None}) is None
    assert configured_tracker({"tracker": "tensorboard"}) == "tensorboard"
    with pytest.raises(TrackerError, match="unknown tracker 'wandb'; known: tensorboard"):
        configured_tracker({"tracker": "wandb"})


def test_a_missing_tracker_package_is_named_with_the_extra_to_install(monkeypatch):
    assert missing_package("tensorboard") is None  # in the lock: installed here
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # as if not installed
    problem = missing_package("tensorboard")
    assert problem is not None and EXTRA in problem and "tracker: null" in problem
    with pytest.raises(TrackerError, match=r"hierbench\[tracker\]"):
        tracker_module("tensorboard")
    config = load_config(REPO / "configs/tiny.yaml")
    assert problem in missing_inputs(config, REPO)
    assert problem not in missing_inputs({**config, "tracker": None}, REPO)


def test_the_tiny_config_exports_every_dataset_and_the_demo_none():
    tiny = RunPaths("runs/tiny", load_config(REPO / "configs/tiny.yaml"))
    targets = tiny.final_targets(["cub", "nabirds"])
    assert [t for t in targets if t.endswith("/tensorboard")] == [
        "runs/tiny/cub/tensorboard",
        "runs/tiny/nabirds/tensorboard",
    ]
    demo = RunPaths("results", load_config(REPO / "config.yaml"))
    assert demo.tracker_exports("cub") == []
    tables = tiny.result_tables("cub")
    assert tables[0] == "runs/tiny/cub/tables/per_seed.parquet"
    assert "runs/tiny/cub/outer/outer_per_split.parquet" in tables
    names = [Path(table).name for table in tables[1:]]
    controls = ("curvature_per_seed", "semantic_per_seed", "baselines_per_seed")
    others = ("outer_per_split", "companion_angle_per_seed")
    assert names == [f"{name}.parquet" for name in (*controls, *others)]
    assert all(table in targets for table in tables[1:])  # the effect tables' is not a target
    assert tiny.result_tables("nabirds") == [
        "runs/tiny/nabirds/tables/per_seed.parquet",
        "runs/tiny/nabirds/tables/companion_angle_per_seed.parquet",
    ]


def test_a_results_row_is_named_by_its_arm_and_seed():
    assert row_name({"dataset": "cub", "geometry": "E", "loss": "R", "seed": 42}) == "E_R-42"
    assert row_name({"geometry": "frozen", "loss": "frozen", "seed": -1}) == "frozen"
    assert row_name({"variant": "c1_r0.4", "geometry": "H", "seed": 7}) == "c1_r0.4_H-7"
    with pytest.raises(ValueError, match="cannot name a tracker run"):
        row_name({"variant": "a/b", "seed": 1})


def test_duration_searches_give_a_run_per_arm():
    records = [
        {"arm": "leaf", "scores": [0.1, 0.2]},
        {"arm": "full", "scores": [0.3]},
        {"outer": "outer-1", "arms": {"E_R": {"scores": [0.4], "epochs": 1}}},
    ]
    runs = duration_search_runs(records)
    assert [run.name for run in runs] == [
        "searches/semantic/full",
        "searches/semantic/leaf",
        "searches/outer-1/E_R",
    ]
    assert [s.value for s in runs[1].scalars] == [0.1, 0.2]


def test_a_cell_is_its_folder_below_cells():
    assert cell_folder("runs/tiny/cub/cells/semantic/full/ES-42/train_log.parquet") == (
        "semantic/full/ES-42"
    )
    with pytest.raises(ValueError, match="not a train log below"):
        cell_folder("runs/tiny/cub/ES-42/train_log.parquet")


def _inputs(root: Path) -> tuple[list[Path], list[Path], list[Path]]:
    """Two cells' train logs, a semantic arm's duration record and a per-seed table."""
    logs = []
    for seed in (42, 2024):
        path = root / f"cub/cells/ER-{seed}/train_log.parquet"
        path.parent.mkdir(parents=True)
        pd.DataFrame({"epoch": [1, 2], "loss": [1.0, 0.5], "seconds": [0.1, 0.2]}).to_parquet(path)
        logs.append(path)
    search = root / "cub/controls/semantic/leaf/duration.json"
    search.parent.mkdir(parents=True)
    search.write_text(json.dumps({"arm": "leaf", "scores": [0.2, 0.3], "epochs": 2}))
    table = root / "cub/tables/per_seed.parquet"
    table.parent.mkdir(parents=True)
    pd.DataFrame(
        {"geometry": ["E"], "loss": ["R"], "seed": [42], "level": ["leaf"], "metric": ["map"]}
        | {"value": [0.5]}
    ).to_parquet(table)
    return logs, [search], [table]


def test_the_stage_publishes_one_recorded_folder_of_event_files(tmp_path: Path):
    logs, searches, tables = _inputs(tmp_path)
    out = tmp_path / "cub/tensorboard"
    build_tracker_export("tensorboard", "cub", logs, searches, tables, out, JOB)
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert files == [
        f"cells/ER-2024/{EVENT_FILE}",
        f"cells/ER-42/{EVENT_FILE}",
        f"results/per_seed/E_R-42/{EVENT_FILE}",
        f"searches/semantic/leaf/{EVENT_FILE}",
    ]
    record = read_provenance(out)
    assert record["sha256"] == sha256_tree(out)
    assert record["facts"] == {"tracker": "tensorboard", "runs": 4, "scalars": 7}
    assert not list(tmp_path.glob("cub/.tensorboard.*"))  # no temporary folder left
    first = sha256_tree(out)
    build_tracker_export("tensorboard", "cub", logs, searches, tables, out, JOB)  # again
    assert sha256_tree(out) == first and provenance_path(out).is_file()


def test_a_failed_export_leaves_the_previous_folder_and_no_temporary(tmp_path: Path):
    logs, searches, tables = _inputs(tmp_path)
    out = tmp_path / "cub/tensorboard"
    build_tracker_export("tensorboard", "cub", logs, searches, tables, out, JOB)
    before = sha256_tree(out)
    pd.DataFrame({"level": ["leaf"]}).to_parquet(tables[0])  # no metric, no value
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['metric', 'value'\]"):
        build_tracker_export("tensorboard", "cub", logs, searches, tables, out, JOB)
    assert sha256_tree(out) == before == read_provenance(out)["sha256"]
    assert not list(tmp_path.glob("cub/.tensorboard.*"))


def test_two_runs_of_one_name_are_refused(tmp_path: Path):
    logs, searches, tables = _inputs(tmp_path)
    with pytest.raises(ValueError, match="share a name"):
        export_runs(logs, searches, tables + tables)
