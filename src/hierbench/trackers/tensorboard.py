"""TensorBoard event files, written with TensorBoard's own library (the ``tracker`` extra).

One event file per TensorBoard run, holding scalars (TensorBoard keeps them as float32) and,
for a run that is one trial of a comparison, its hyperparameters for the HParams dashboard.
TensorBoard's own writer names a file by time, host and process and stamps each event with the
wall clock; here the file name is fixed, each event's ``wall_time`` is its step (an epoch, or 0
for a final number) and every message is serialised deterministically, so equal numbers give
equal bytes on every rerun.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Mapping
from pathlib import Path

from tensorboard.compat.proto.event_pb2 import Event
from tensorboard.compat.proto.summary_pb2 import Summary
from tensorboard.plugins.hparams import plugin_data_pb2
from tensorboard.plugins.hparams.summary_v2 import hparams_pb
from tensorboard.plugins.scalar.summary_v2 import scalar_pb
from tensorboard.summary.writer.record_writer import RecordWriter

from hierbench.trackers.contents import HParamValue, Scalar, TrackerRun

# TensorBoard reads every file whose name holds "tfevents"; its own writer's pattern is
# events.out.tfevents.<time>.<host>: here a fixed time and host.
EVENT_FILE = "events.out.tfevents.0.hierbench"
FILE_VERSION = "brain.Event:2"  # the first event of every event file


def _deterministic(summary: Summary) -> Summary:
    """``summary`` with each plugin's content re-serialised deterministically: the HParams
    plugin's message holds a map, whose order protobuf otherwise leaves to its hash table."""
    for value in summary.value:
        data = value.metadata.plugin_data
        if data.plugin_name == "hparams":
            content = plugin_data_pb2.HParamsPluginData.FromString(data.content)
            data.content = content.SerializeToString(deterministic=True)
    return summary


def _record(event: Event) -> bytes:
    """An event's serialised bytes, the same on every run."""
    return event.SerializeToString(deterministic=True)


def scalar_events(scalars: Iterable[Scalar]) -> list[Event]:
    """One event per finite-or-infinite scalar (a missing number, NaN, is left out), stamped
    with its step as its wall time."""
    return [
        Event(wall_time=float(s.step), step=s.step, summary=scalar_pb(s.tag, s.value))
        for s in scalars
        if not math.isnan(s.value)
    ]


def hparams_event(hparams: Mapping[str, HParamValue], trial: str) -> Event:
    """The event that makes a run one trial of the HParams dashboard, named ``trial``."""
    summary = hparams_pb(dict(hparams), trial_id=trial, start_time_secs=0)
    return Event(wall_time=0.0, step=0, summary=_deterministic(summary))


def event_file(run: TrackerRun) -> bytes:
    """The bytes of one run's event file: its hyperparameters (a trial named after the run),
    then its scalars in their order."""
    events = [Event(wall_time=0.0, file_version=FILE_VERSION)]
    if run.hparams:
        events.append(hparams_event(run.hparams, run.name))
    events += scalar_events(run.scalars)
    buffer = io.BytesIO()
    writer = RecordWriter(buffer)
    for event in events:
        writer.write(_record(event))
    return buffer.getvalue()


def write_export(folder: Path, runs: Iterable[TrackerRun]) -> list[Path]:
    """Write each run's event file below ``folder`` (``<folder>/<run>/`` + EVENT_FILE, the
    layout ``tensorboard --logdir FOLDER`` reads), returning the files written."""
    written = []
    for run in runs:
        path = folder / run.name / EVENT_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(event_file(run))
        written.append(path)
    return written
