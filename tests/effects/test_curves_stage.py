"""The training-curves stage: cells keyed from their folders, figures published with provenance."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from hierbench.cells.cell_folders import cell_key
from hierbench.provenance.hashing import sha256_file
from hierbench.provenance.records import JobContext
from hierbench.stages.curves import (
    build_duration_curves,
    build_tau_curves,
    build_training_curves,
    duration_searches,
)

JOB = JobContext(rule="unit")


def test_a_cell_is_its_folder_below_cells_without_the_seed():
    assert cell_key("runs/tiny/cub/cells/RE-42/train_log.parquet") == ("RE", 42)
    assert cell_key("r/cub/cells/semantic/A/ES-2024/train_log.parquet") == ("semantic/A/ES", 2024)
    with pytest.raises(ValueError, match="does not end in -<seed>"):
        cell_key("r/cub/cells/hier/train_log.parquet")
    with pytest.raises(ValueError, match="not a train log below"):
        cell_key("r/cub/RE-42/train_log.parquet")


def _write_logs(root) -> list[str]:
    """Train logs of two HR cells, one of them flat, below ``root``'s cells folder."""
    paths = []
    for seed, loss in ((42, [1.0, 0.8, 0.6]), (2024, [0.5, 0.5, 0.5])):
        folder = root / "cub" / "cells" / f"HR-{seed}"
        folder.mkdir(parents=True)
        frame = pd.DataFrame({"epoch": [1, 2, 3], "loss": loss})
        frame.to_parquet(folder / "train_log.parquet")
        paths.append(str(folder / "train_log.parquet"))
    return paths


def test_the_stage_publishes_both_formats_the_same_bytes_twice(tmp_path, caplog):
    logs = _write_logs(tmp_path)
    hashes = []
    for run in range(2):
        outputs = [str(tmp_path / f"out{run}" / f"curves.{kind}") for kind in ("png", "pdf")]
        (tmp_path / f"out{run}").mkdir()
        problems = tmp_path / f"out{run}" / "problems.rst"
        with caplog.at_level("WARNING"):
            build_training_curves("cub", "factorial", logs, outputs, problems, JOB)
        hashes.append([sha256_file(path) for path in [*outputs, problems]])
        assert all(
            (tmp_path / f"out{run}" / f"curves.{k}.prov.json").exists() for k in ("png", "pdf")
        )
    assert hashes[0] == hashes[1]
    assert "HR seed 2024: loss flat over 3 epochs" in caplog.text
    caption = (tmp_path / "out0" / "problems.rst").read_text()
    named = "HR seed 2024: flat over 3 epochs"
    assert caption == f"**Cells whose loss went non-finite or flat: {named}.**\n"


def test_the_tau_stage_reads_score_files_with_a_null_score(tmp_path):
    scores = []
    for geometry, tau, score in (("E", 0.1, 0.3), ("E", 0.5, None), ("H", 0.1, 0.2)):
        path = tmp_path / f"{geometry}-{tau}.json"
        path.write_text(json.dumps({"geometry": geometry, "tau": tau, "score": score}))
        scores.append(str(path))
    output = str(tmp_path / "tau_search.png")
    build_tau_curves("cub", scores, [output], JOB)
    record = json.loads((tmp_path / "tau_search.png.prov.json").read_text())
    assert record["sha256"] == sha256_file(output)


def _duration_files(root) -> tuple[list[str], list[str]]:
    """Two semantic arms' duration files and one outer split's, as the tuning stage writes."""
    semantic = []
    for arm, scores, epochs in (("full", [0.1, 0.3, 0.2], 2), ("leaf", [0.2, None, 0.2], 1)):
        path = root / f"{arm}.json"
        path.write_text(json.dumps({"arm": arm, "epochs": epochs, "scores": scores}))
        semantic.append(str(path))
    outer = root / "durations.json"
    arms = {"E_R": {"epochs": 3, "scores": [0.1, 0.2, 0.4]}, "H_S": {"epochs": 1, "scores": [0.5]}}
    outer.write_text(json.dumps({"outer": "outer-1", "arms": arms}))
    return semantic, [str(outer)]


def test_duration_searches_are_read_by_panel_and_arm(tmp_path):
    semantic, outer = _duration_files(tmp_path)
    searches = duration_searches(semantic, outer)
    assert sorted(searches) == ["outer-1", "semantic"]
    assert searches["semantic"]["leaf"] == ([0.2, None, 0.2], 1)
    assert searches["outer-1"]["E_R"] == ([0.1, 0.2, 0.4], 3)


def test_the_duration_stage_publishes_the_same_bytes_twice(tmp_path):
    semantic, outer = _duration_files(tmp_path)
    hashes = []
    for run in range(2):
        output = tmp_path / f"duration{run}.png"
        build_duration_curves("cub", semantic, outer, [str(output)], JOB)
        assert json.loads(Path(f"{output}.prov.json").read_text())["sha256"] == sha256_file(output)
        hashes.append(sha256_file(output))
    assert hashes[0] == hashes[1]
    with pytest.raises(ValueError, match="no semantic or outer control"):
        build_duration_curves("cub", [], [], [str(tmp_path / "none.png")], JOB)
