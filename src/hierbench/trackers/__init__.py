"""Export a run's numbers to an experiment tracker a lab already uses (issue #63).

The config's ``tracker`` key names one tracker, or none (``null``, the default). Each tracker
is one module of this package that turns a run's numbers into the tracker's own files, written
with the tracker's own library: an optional dependency, installed with hierbench's ``tracker``
extra. Planning a run only asks whether that library is installed (never imports it), so a
config that names a tracker the environment lacks stops before any job, naming the extra.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from types import ModuleType
from typing import Any

TRACKER_KEY = "tracker"
TRACKER_EXTRA = "tracker"  # pip install 'hierbench[tracker]'
# Each tracker by its config name: the Python package its files are written with.
TRACKERS: dict[str, str] = {"tensorboard": "tensorboard"}


class TrackerError(ValueError):
    """A tracker cannot export: unknown, or its optional package is not installed."""


def configured_tracker(config: Mapping[str, Any]) -> str | None:
    """The tracker a config exports to (``tracker``), or None when the export is off."""
    name = config.get(TRACKER_KEY)
    if name is not None and name not in TRACKERS:
        known = ", ".join(sorted(TRACKERS))
        raise TrackerError(f"config key 'tracker': unknown tracker {name!r}; known: {known}")
    return name


def missing_package(name: str) -> str | None:
    """What to do when the package tracker ``name`` writes with is not installed (one line
    naming the extra), or None when it is."""
    package = TRACKERS[name]
    if importlib.util.find_spec(package) is not None:
        return None
    return (
        f"tracker: {name} export needs the Python package {package!r}, which is not "
        f"installed; install hierbench's {TRACKER_EXTRA} extra "
        f"(pip install 'hierbench[{TRACKER_EXTRA}]') or set tracker: null"
    )


def tracker_problems(config: Mapping[str, Any]) -> list[str]:
    """What keeps a config's tracker export from running here: its package, not installed."""
    name = configured_tracker(config)
    problem = None if name is None else missing_package(name)
    return [] if problem is None else [problem]


def tracker_module(name: str) -> ModuleType:
    """The module of this package that writes tracker ``name``'s files, its package checked."""
    configured_tracker({TRACKER_KEY: name})
    problem = missing_package(name)
    if problem is not None:
        raise TrackerError(problem)
    return importlib.import_module(f"{__name__}.{name}")
