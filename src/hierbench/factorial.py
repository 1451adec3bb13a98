"""The Geometry × Loss factorial's axes as a run configures them (``factorial.losses``,
``factorial.geometries``; the paper's ``[R, S]`` × ``[E, H]`` by default), and the arms and
simple effects they imply.

A loss beyond the paper's two (a plugin objective, :mod:`hierbench.losses.registry`) adds its
arms on every geometry, trained with every guarantee the paper's cells have, and its simple
effects against each of the paper's losses at each geometry (``loss_<X><Y>_<g>`` = g_X − g_Y)
and, with both geometries, its geometry effect (``geom_<X>`` = H_X − E_X); the paper's five
effects stay exactly as they are. Its cells train in a bundle of their own, so that editing the
plugin retrains only them.

The config names an added loss's objective under ``plugins.objectives`` by import path
(``package.module:NAME``), by file (``path/to/file.py:NAME``, relative to the working folder) or
by a Python entry point of the group ``hierbench.objectives`` (``entry-point:NAME``), as pytest
and Snakemake load their plugins. Planning the workflow needs only each plugin's source file
(its code hash is that of the jobs that train with it), found here without running the plugin:
the rules stay torch-free, and a plugin that cannot be found stops the run before it starts.
:mod:`hierbench.losses.registry` loads the objectives themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hierbench.plugins import PluginError, configured, plugin_source
from hierbench.protocol import (
    COMPANION_LOSS,
    FACTORIAL_EFFECTS,
    GEOMETRIES,
    LORENTZ,
    LOSSES,
    SUPCON,
)

FACTORIAL_KEY = "factorial"
PLUGINS_KEY = "plugins.objectives"
ENTRY_POINT_GROUP = "hierbench.objectives"
# The losses whose cells read a temperature chosen on validation (the tuning stage's).
TUNED_TAU_LOSSES = (SUPCON,)


class ObjectiveError(PluginError):
    """An objective plugin cannot be found, loaded or used; the message names the config key."""


def factorial_losses(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The loss codes of the run's factorial, in the config's order."""
    return tuple(config.get(FACTORIAL_KEY, {}).get("losses", LOSSES))


def factorial_geometries(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The geometry codes of the run's factorial, in the config's order."""
    return tuple(config.get(FACTORIAL_KEY, {}).get("geometries", GEOMETRIES))


def is_added_loss(code: str) -> bool:
    """Whether ``code`` can name a loss added to the factorial: one capital letter that no cell
    of the study uses already (the paper's R and S, the companion's A, the Lorentz head's L)."""
    return len(code) == 1 and code.isupper() and code not in (*LOSSES, COMPANION_LOSS, LORENTZ)


def added_losses(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The run's losses beyond the paper's two (each trained in its own bundle)."""
    return tuple(loss for loss in factorial_losses(config) if loss not in LOSSES)


def added_arms(losses: tuple[str, ...]) -> tuple[str, ...]:
    """The arms of added losses on the paper's geometries, loss by loss (E first)."""
    return tuple(f"{g}_{loss}" for loss in losses if loss not in LOSSES for g in GEOMETRIES)


Formula = Callable[[Any], Any]


def added_effects(losses: tuple[str, ...]) -> dict[str, tuple[Formula, str]]:
    """Each added loss's simple effects, by name: against each paper loss at each geometry,
    then its geometry effect; the formula (over a mapping with one entry per arm) and its
    definition."""
    effects: dict[str, tuple[Formula, str]] = {}
    for loss in (code for code in losses if code not in LOSSES):
        for base in LOSSES:
            for g in GEOMETRIES:
                effects[f"loss_{loss}{base}_{g}"] = _effect(f"{g}_{loss}", f"{g}_{base}")
        effects[f"geom_{loss}"] = _effect(f"{GEOMETRIES[1]}_{loss}", f"{GEOMETRIES[0]}_{loss}")
    return effects


def _effect(first: str, second: str) -> tuple[Formula, str]:
    """The formula ``arm[first] - arm[second]`` and its definition."""
    return (lambda arm: arm[first] - arm[second]), f"{first} - {second}"


def is_paper_effect(effect: str) -> bool:
    """Whether an effect is one of the paper's five (a planned endpoint)."""
    return effect in FACTORIAL_EFFECTS


def check_factorial(config: Mapping[str, Any]) -> None:
    """Refuse a factorial without the paper's losses, or with an added loss that no plugin
    names, naming the key."""
    losses = factorial_losses(config)
    missing = [loss for loss in LOSSES if loss not in losses]
    if missing:
        raise ValueError(
            f"{FACTORIAL_KEY}.losses {list(losses)} lacks the paper's {missing}: the study's "
            "effects need them; add a loss beside them"
        )
    named = plugin_references(config)
    for loss in added_losses(config):
        if not is_added_loss(loss):
            raise ValueError(
                f"{FACTORIAL_KEY}.losses: {loss!r} is taken by another cell of the study; "
                "give the added loss another capital letter"
            )
        if loss not in named:
            raise ValueError(
                f"{FACTORIAL_KEY}.losses has {loss!r}, but plugins.objectives names no {loss!r}: "
                f"add plugins.objectives.{loss}: 'package.module:NAME' (or file.py:NAME)"
            )


def reads_tuned_tau(loss: str) -> bool:
    """Whether the cells of ``loss`` read the temperature the tuning stage selects (an added
    loss never does: :func:`hierbench.losses.registry.load_reference` refuses one that asks)."""
    return loss in TUNED_TAU_LOSSES


def waits_for_tau(
    config: Mapping[str, Any], dataset: str, loss: str | None, geometries: Sequence[str]
) -> bool:
    """Whether a job waits for the tuning stage's temperature: it trains cells that read one
    (any loss's, when the job has none of its own, as the temperature search does) on a
    geometry whose temperature the dataset's config does not pin."""
    if loss is not None and not reads_tuned_tau(loss):
        return False
    pinned = config["datasets"][dataset]["tau"]
    return any(pinned[geometry] is None for geometry in geometries)


def plugin_references(config: Mapping[str, Any]) -> dict[str, str]:
    """The config's objective plugins by loss code, checked: one capital letter each, none a
    built-in or reserved code."""
    plugins = configured(config, "objectives")
    for code in plugins:
        if not is_added_loss(code):
            raise ObjectiveError(
                f"{PLUGINS_KEY}.{code}: a plugin's loss code is one capital letter that no cell "
                f"uses already (the paper's {list(LOSSES)}, the companion's {COMPANION_LOSS}, "
                f"the Lorentz {LORENTZ})"
            )
    return plugins


def plugin_sources(config: Mapping[str, Any]) -> dict[str, Path]:
    """Each added loss's plugin source file (what its training jobs' code hash covers)."""
    references = plugin_references(config)
    return {
        loss: plugin_source(
            references[loss], f"{PLUGINS_KEY}.{loss}", ENTRY_POINT_GROUP, ObjectiveError
        )
        for loss in added_losses(config)
    }
