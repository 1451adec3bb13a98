"""Figures as artifacts: the one publishing step every stage that draws shares, as
:mod:`hierbench.effects.table_files` is for tables."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from matplotlib.figure import Figure

from hierbench.effects.figures import figure_writer
from hierbench.provenance.artifacts import publish
from hierbench.provenance.records import JobContext


def publish_figure(figure: Figure, targets: Iterable[str | Path], job: JobContext) -> None:
    """A figure published at each target, in the format its suffix names (png, pdf), each with
    its provenance record."""
    for target in targets:
        publish(target, figure_writer(figure, Path(target).suffix.lstrip(".")), job)
