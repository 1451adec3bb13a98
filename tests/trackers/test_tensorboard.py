"""TensorBoard export: event files written from a run's numbers read back with TensorBoard's
own loader equal those numbers (as float32), carry a results row's hyperparameters, and are
the same bytes in every process."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from conftest import REPO
from tensorboard.backend.event_processing.plugin_event_accumulator import EventAccumulator
from tensorboard.plugins.hparams import metadata as hparams_metadata
from tensorboard.util import tensor_util

from hierbench.trackers.contents import cell_run, result_runs, search_runs
from hierbench.trackers.tensorboard import EVENT_FILE, event_file, write_export

LOG = pd.DataFrame(
    {
        "epoch": [1, 2, 3],
        "updates": [4, 8, 12],
        "loss": [2.5, 1.75, 1.1234567891],
        "loss_c": [1.0, np.nan, 0.5],  # NaN: the level was inactive that epoch
        "grad_norm": [10.0, 8.0, 6.5],
        "seconds": [0.11, 0.12, 0.13],
        "validation_score": [0.1, 0.2, 0.3],
    }
)
TABLE = pd.DataFrame(
    {
        "dataset": ["cub"] * 4,
        "geometry": ["E", "E", "frozen", "frozen"],
        "loss": ["R", "R", "frozen", "frozen"],
        "seed": [42, 42, -1, -1],
        "level": ["leaf", "all", "leaf", "all"],
        "metric": ["map", "ot@5", "map", "ot@5"],
        "value": [0.123456789, 1.5, 0.25, 2.0],
    }
)


def _read(folder: Path) -> EventAccumulator:
    """A run folder read whole by TensorBoard's own loader."""
    accumulator = EventAccumulator(str(folder), size_guidance={"tensors": 0})
    return accumulator.Reload()


def _scalars(accumulator: EventAccumulator, tag: str) -> list[tuple[float, int, float]]:
    """A tag's (wall time, step, value) as TensorBoard reads them."""
    return [
        (event.wall_time, event.step, float(tensor_util.make_ndarray(event.tensor_proto)))
        for event in accumulator.Tensors(tag)
    ]


def test_a_train_log_reads_back_as_scalars_per_epoch(tmp_path: Path):
    (path,) = write_export(tmp_path, [cell_run("semantic/full/ES-42", LOG)])
    assert path == tmp_path / "cells/semantic/full/ES-42" / EVENT_FILE
    read = _read(path.parent)
    tags = set(read.Tags()["tensors"])
    exported = {"train/loss", "train/loss_c", "train/grad_norm", "train/validation_score"}
    assert tags == exported  # not the epoch, the update count, nor the wall seconds
    for tag in exported:
        assert read.SummaryMetadata(tag).plugin_data.plugin_name == "scalars"
        column = LOG[tag.removeprefix("train/")]
        expected = [
            (float(epoch), int(epoch), float(np.float32(value)))
            for epoch, value in zip(LOG["epoch"], column, strict=True)
            if not np.isnan(value)
        ]
        assert _scalars(read, tag) == expected, tag
    assert [step for _, step, _ in _scalars(read, "train/loss_c")] == [1, 3]
    run = cell_run("ES-42", LOG.iloc[::-1])  # the events go epoch by epoch, whatever the rows
    assert [s.step for s in run.scalars] == sorted(s.step for s in run.scalars)


def test_a_results_table_reads_back_as_trials_with_their_numbers(tmp_path: Path):
    runs = result_runs("per_seed", TABLE)
    assert [run.name for run in runs] == ["results/per_seed/E_R-42", "results/per_seed/frozen"]
    write_export(tmp_path, runs)
    read = _read(tmp_path / "results/per_seed/E_R-42")
    assert _scalars(read, "sealed/leaf/map") == [(0.0, 0, float(np.float32(0.123456789)))]
    assert _scalars(read, "sealed/all/ot@5") == [(0.0, 0, 1.5)]
    content = read.PluginTagToContent("hparams")[hparams_metadata.SESSION_START_INFO_TAG]
    start = hparams_metadata.parse_session_start_info_plugin_data(content)
    assert start.group_name == "results/per_seed/E_R-42"
    values = {name: value.WhichOneof("kind") for name, value in start.hparams.items()}
    assert values == {
        "table": "string_value",
        "dataset": "string_value",
        "geometry": "string_value",
        "loss": "string_value",
        "seed": "number_value",
    }
    assert start.hparams["geometry"].string_value == "E"
    assert start.hparams["seed"].number_value == 42
    assert start.start_time_secs == 0


def test_a_duration_search_reads_back_as_its_validation_scores(tmp_path: Path):
    (run,) = search_runs("semantic", {"leaf": [0.5, None, 0.25]})
    write_export(tmp_path, [run])
    read = _read(tmp_path / "searches/semantic/leaf")
    assert _scalars(read, "validation/score") == [(1.0, 1, 0.5), (3.0, 3, 0.25)]


PROBE = """
import hashlib
import pandas as pd
from tensorboard_probe import TABLE
from hierbench.trackers.contents import result_runs
from hierbench.trackers.tensorboard import event_file
print(hashlib.sha256(b"".join(event_file(r) for r in result_runs("per_seed", TABLE))).hexdigest())
"""


def test_the_same_numbers_give_the_same_bytes_in_every_process(tmp_path: Path):
    """No time, host or process in the bytes, and the hyperparameters' map serialised in one
    order (protobuf's own order can differ between processes)."""
    here = hashlib.sha256(b"".join(event_file(r) for r in result_runs("per_seed", TABLE)))
    (tmp_path / "tensorboard_probe.py").write_text(
        f"import pandas as pd\nTABLE = {TABLE.to_dict('list')!r}\nTABLE = pd.DataFrame(TABLE)\n"
    )
    found = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(REPO / "src")])
        result = subprocess.run(
            [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
        )
        found.add(result.stdout.strip())
    assert found == {here.hexdigest()}
    assert EVENT_FILE == "events.out.tfevents.0.hierbench"
