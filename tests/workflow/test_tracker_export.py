"""The tracker export (#63) of a complete tiny run (configs/tiny.yaml: tracker: tensorboard),
read back with TensorBoard's own loaders: every cell's train log, every duration search and
every sealed per-seed results table, number for number, as a recorded folder that a rerun
writes byte for byte again."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from conftest import TINY, TINY_RUN, scheduled_rules, snakemake
from tensorboard.backend.event_processing.plugin_event_accumulator import EventAccumulator
from tensorboard.backend.event_processing.plugin_event_multiplexer import EventMultiplexer
from tensorboard.plugins.hparams import metadata as hparams_metadata
from tensorboard.util import tensor_util

from hierbench.config import load_config
from hierbench.controls.outer import outer_splits
from hierbench.controls.semantic import semantic_arms
from hierbench.layout import CELL_FILES, OUTER_DURATIONS, SEMANTIC_DURATION
from hierbench.paths import RunPaths
from hierbench.provenance.artifacts import provenance_path, read_provenance
from hierbench.provenance.hashing import sha256_file, sha256_tree
from hierbench.trackers.contents import row_name
from hierbench.trackers.tensorboard import EVENT_FILE

DATASETS = ("cub", "nabirds")
NOT_EXPORTED = {"epoch", "updates", "seconds"}  # the step, a counter, the wall seconds


def _paths(repo: Path) -> RunPaths:
    return RunPaths(TINY_RUN, load_config(repo / "configs/tiny.yaml"))


def _export(repo: Path, dataset: str) -> Path:
    return repo / TINY_RUN / dataset / "tensorboard"


def _read(run: Path) -> dict[str, list[tuple[float, int, float]]]:
    """Every scalar tag of one TensorBoard run: (wall time, step, value) per event."""
    accumulator = EventAccumulator(str(run), size_guidance={"tensors": 0}).Reload()
    return {
        tag: [
            (e.wall_time, e.step, float(tensor_util.make_ndarray(e.tensor_proto)))
            for e in accumulator.Tensors(tag)
        ]
        for tag in accumulator.Tags()["tensors"]
        if accumulator.SummaryMetadata(tag).plugin_data.plugin_name == "scalars"
    }


def _f32(value: float) -> float:
    """A number as TensorBoard keeps a scalar: float32."""
    return float(np.float32(value))


def test_every_train_log_reads_back_number_for_number(built_repo: Path):
    paths = _paths(built_repo)
    for dataset in DATASETS:
        export = _export(built_repo, dataset)
        logs = paths.cells(dataset, paths.curve_kinds(dataset), CELL_FILES["log"])
        assert len(logs) >= 12  # NABirds: the factorial and companion cells, two seeds
        for log in logs:
            frame = pd.read_parquet(built_repo / log)
            cell = Path(log).parent.relative_to(f"{TINY_RUN}/{dataset}/cells").as_posix()
            read = _read(export / "cells" / cell)
            # a level the loss never had (all NaN) has no curve
            columns = [c for c in frame.columns if c not in NOT_EXPORTED and frame[c].notna().any()]
            assert set(read) == {f"train/{column}" for column in columns}, log
            for column in columns:
                expected = [
                    (float(epoch), int(epoch), _f32(value))
                    for epoch, value in zip(frame["epoch"], frame[column], strict=True)
                    if not np.isnan(value)
                ]
                assert read[f"train/{column}"] == expected, (log, column)


def test_every_duration_search_reads_back_its_validation_scores(built_repo: Path):
    config = load_config(built_repo / "configs/tiny.yaml")
    export = _export(built_repo, "cub")
    for arm in semantic_arms(config, "cub"):
        record = json.loads(
            (
                built_repo / _paths(built_repo).at(SEMANTIC_DURATION, dataset="cub", arm=arm)
            ).read_text()
        )
        expected = [
            (float(e), e, _f32(s)) for e, s in enumerate(record["scores"], 1) if s is not None
        ]
        assert _read(export / "searches/semantic" / arm) == {"validation/score": expected}
    for split in outer_splits(config, "cub"):
        record = json.loads(
            (
                built_repo / _paths(built_repo).at(OUTER_DURATIONS, dataset="cub", outer=split)
            ).read_text()
        )
        for arm, entry in record["arms"].items():
            expected = [
                (float(e), e, _f32(s)) for e, s in enumerate(entry["scores"], 1) if s is not None
            ]
            assert _read(export / "searches" / split / arm) == {"validation/score": expected}


def _hparams(run: Path) -> dict[str, str | float]:
    """A run's trial hyperparameters, as the HParams dashboard reads them."""
    accumulator = EventAccumulator(str(run)).Reload()
    content = accumulator.PluginTagToContent("hparams")[hparams_metadata.SESSION_START_INFO_TAG]
    start = hparams_metadata.parse_session_start_info_plugin_data(content)
    assert start.group_name == run.relative_to(run.parents[2]).as_posix()
    return {name: getattr(value, value.WhichOneof("kind")) for name, value in start.hparams.items()}


def test_every_sealed_results_table_reads_back_row_for_row(built_repo: Path):
    paths = _paths(built_repo)
    for dataset in DATASETS:
        export = _export(built_repo, dataset)
        tables = paths.result_tables(dataset)
        assert len(tables) == (6 if dataset == "cub" else 2)
        for table in tables:
            frame = pd.read_parquet(built_repo / table)
            name = Path(table).stem
            keys = [c for c in frame.columns if c not in ("level", "metric", "value")]
            groups = list(frame.groupby(keys, dropna=False))
            runs = sorted(p.parent for p in (export / "results" / name).rglob(EVENT_FILE))
            assert len(runs) == len(groups) > 0, table
            for values, rows in groups:
                identity = dict(zip(keys, values, strict=True))
                run = export / "results" / name / row_name(identity)
                expected = {
                    f"sealed/{row.level}/{row.metric}": [(0.0, 0, _f32(row.value))]
                    for row in rows.itertuples()
                    if not np.isnan(row.value)
                }
                assert _read(run) == expected, run
                assert _hparams(run) == {"table": name, **identity}, run


def test_tensorboard_sees_every_run_of_the_export(built_repo: Path):
    """What `tensorboard --logdir <dataset>/tensorboard` lists: a run per cell and per results
    row (NABirds runs no duration search), and nothing else."""
    paths = _paths(built_repo)
    logs = paths.cells("nabirds", paths.curve_kinds("nabirds"), CELL_FILES["log"])
    expected = {f"cells/{Path(log).parent.name}" for log in logs}
    for table in paths.result_tables("nabirds"):
        frame = pd.read_parquet(built_repo / table)
        keys = [c for c in frame.columns if c not in ("level", "metric", "value")]
        for values, _ in frame.groupby(keys):
            name = row_name(dict(zip(keys, values, strict=True)))
            expected.add(f"results/{Path(table).stem}/{name}")
    export = _export(built_repo, "nabirds")
    multiplexer = EventMultiplexer().AddRunsFromDirectory(str(export))
    multiplexer.Reload()
    assert set(multiplexer.Runs()) == expected
    assert len(expected) == len(logs) + 13 + 8  # per_seed: 12 cells + frozen; companion: 8


def test_the_export_is_a_recorded_folder_written_again_byte_for_byte(built_repo: Path):
    exports = [_export(built_repo, dataset) for dataset in DATASETS]
    for export in exports:
        record = read_provenance(export)
        assert record["rule"] == "tensorboard_export"
        assert record["sha256"] == sha256_tree(export)
        assert record["facts"]["tracker"] == "tensorboard"
    before = [(sha256_tree(e), sha256_file(provenance_path(e))) for e in exports]
    snakemake(built_repo, *TINY, "--forcerun", "tensorboard_export")
    assert [(sha256_tree(e), sha256_file(provenance_path(e))) for e in exports] == before


def test_retraining_one_kind_of_cell_exports_its_dataset_again(built_repo: Path):
    rules = scheduled_rules(built_repo, *TINY, "--forcerun", "train_hier_cell")
    assert rules["tensorboard_export"] == 1, rules  # CUB's: only CUB trains the HIER cells
