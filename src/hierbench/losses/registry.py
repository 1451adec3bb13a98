"""The factorial's objectives by loss code: the two built in (R, S) and any a researcher adds.

A plain objective turns a batch's sanitised (…, B, B) distances and (…, B, 3) labels into a loss
per leading index (one per bundled cell) and its per-level values for the training log; it is
all a loss needs to join the Geometry × Loss factorial, whose bundles stack every cell's
distances. A researcher's objective is one module (a :class:`PlainObjective` named in it) and
one config entry (``plugins.objectives.<CODE>``, :mod:`hierbench.factorial` reads it); the code
joins ``factorial.losses``. Loading runs the plugin's module, so only the jobs that train do it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hierbench.factorial import (
    ENTRY_POINT_GROUP,
    PLUGINS_KEY,
    ObjectiveError,
    plugin_references,
    reads_tuned_tau,
)
from hierbench.losses.regression import regression_objective
from hierbench.losses.supcon import supcon_objective
from hierbench.plugins import load_plugin
from hierbench.protocol import LOSS_NAMES, REGRESSION, SUPCON

__all__ = ["BUILT_IN", "ObjectiveError", "PlainObjective", "load_reference", "objective"]


@dataclass(frozen=True)
class PlainObjective:
    """A plain objective of the factorial: ``loss(distances, labels, spec)`` returns the losses
    (one per leading index of the distances: a bundle stacks its cells) and the per-level
    values for the training log (a dict, possibly empty); ``needs_tau`` says whether its cells
    read a temperature chosen on validation, as Taxonomy-SupCon's do; ``source`` is the file
    that defines it, for a plugin (the built-in ones are library modules the rules declare)."""

    name: str
    loss: Callable[[Any, Any, Any], tuple[Any, dict[str, Any]]]
    needs_tau: bool = False
    source: Path | None = None


BUILT_IN: dict[str, PlainObjective] = {
    REGRESSION: PlainObjective(LOSS_NAMES[REGRESSION], regression_objective),
    SUPCON: PlainObjective(LOSS_NAMES[SUPCON], supcon_objective, needs_tau=True),
}
if any(entry.needs_tau != reads_tuned_tau(code) for code, entry in BUILT_IN.items()):
    raise RuntimeError("hierbench.factorial.TUNED_TAU_LOSSES disagrees with BUILT_IN")


def load_reference(reference: str, key: str) -> PlainObjective:
    """The objective a config entry names: ``package.module:NAME``, ``file.py:NAME`` or
    ``entry-point:NAME``; an error naming ``key`` when it is not a usable plain objective."""
    found = load_plugin(reference, key, ENTRY_POINT_GROUP, ObjectiveError)
    if not isinstance(found, PlainObjective):
        raise ObjectiveError(
            f"{key}: {reference!r} is a {type(found).__name__}, not a "
            "hierbench.losses.registry.PlainObjective"
        )
    if found.needs_tau:
        raise ObjectiveError(
            f"{key}: {reference!r} asks for a temperature chosen on validation (needs_tau), "
            "which the tuning stage selects for Taxonomy-SupCon alone; give the objective a "
            "fixed temperature of its own"
        )
    if found.source is None:
        found = PlainObjective(found.name, found.loss, found.needs_tau, _source_of(found.loss))
    return found


def _source_of(function: Callable[..., Any]) -> Path | None:
    """The file that defines a plugin's loss."""
    source = inspect.getsourcefile(function)
    return Path(source).resolve() if source else None


def objectives(config: Mapping[str, Any]) -> dict[str, PlainObjective]:
    """Every objective a run may train: the built-in ones and the config's plugins, loaded."""
    loaded = dict(BUILT_IN)
    for code, reference in sorted(plugin_references(config).items()):
        loaded[code] = load_reference(reference, f"{PLUGINS_KEY}.{code}")
    return loaded


def objective(code: str, config: Mapping[str, Any] | None = None) -> PlainObjective:
    """The objective of loss ``code`` (a plugin's only with the ``config`` that names it)."""
    if code in BUILT_IN:
        return BUILT_IN[code]
    references = plugin_references(config or {})
    if code not in references:
        raise ObjectiveError(
            f"no objective for loss {code!r}: built in {sorted(BUILT_IN)}, plugins "
            f"({PLUGINS_KEY}) {sorted(references)}"
        )
    return load_reference(references[code], f"{PLUGINS_KEY}.{code}")
