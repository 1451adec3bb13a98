"""The Geometry × Loss factorial's axes as a run configures them (``factorial.losses``,
``factorial.geometries``; the paper's ``[R, S]`` × ``[E, H]`` by default), and the arms and
simple effects they imply.

A loss beyond the paper's two (a plugin objective, :mod:`hierbench.losses.registry`) adds its
arms on every geometry, trained with every guarantee the paper's cells have, and its simple
effects against each of the paper's losses at each geometry (``loss_<X><Y>_<g>`` = g_X − g_Y)
and, with both geometries, its geometry effect (``geom_<X>`` = H_X − E_X); the paper's five
effects stay exactly as they are. Its cells train in a bundle of their own, so that editing the
plugin retrains only them. A geometry beyond the paper's two (a plugin geometry,
:mod:`hierbench.geometry.plain`) likewise adds its arms under every loss, its simple effects
against each of the paper's geometries under each loss (``geom_<G><B>_<l>`` = G_l − B_l) and its
loss effect (``loss_<G>`` = G_S − G_R); its cells, and the temperature search its
Taxonomy-SupCon cells read, train in bundles of their own.

The config names an added loss's objective under ``plugins.objectives`` by import path
(``package.module:NAME``), by file (``path/to/file.py:NAME``, relative to the working folder) or
by a Python entry point of the group ``hierbench.objectives`` (``entry-point:NAME``), as pytest
and Snakemake load their plugins. Planning the workflow needs only each plugin's source file
(its code hash is that of the jobs that train with it), found here without running the plugin:
the rules stay torch-free, and a plugin that cannot be found stops the run before it starts.
:mod:`hierbench.losses.registry` loads the objectives themselves. Geometries are named the same
way under ``plugins.geometries`` (entry points of ``hierbench.geometries``).
"""

from __future__ import annotations

import re
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
GEOMETRY_PLUGINS_KEY = "plugins.geometries"
# What an added level's effect name looks like (loss_TR_E, geom_T, geom_CE_R, loss_C); which
# names are effects is decided by added_effects itself.
ADDED_EFFECT_SHAPE = re.compile(r"(loss|geom)_[A-Z]{1,2}(_[A-Z])?")
GEOMETRY_ENTRY_POINT_GROUP = "hierbench.geometries"
# The losses whose cells read a temperature chosen on validation (the tuning stage's).
TUNED_TAU_LOSSES = (SUPCON,)


class ObjectiveError(PluginError):
    """An objective plugin cannot be found, loaded or used; the message names the config key."""


class GeometryError(PluginError):
    """A geometry plugin cannot be found, loaded or used; the message names the config key."""


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


def is_added_geometry(code: str) -> bool:
    """Whether ``code`` can name a geometry added to the factorial: one capital letter that no
    head of the study uses already (the paper's E and H, the companion's Lorentz L)."""
    return len(code) == 1 and code.isupper() and code not in (*GEOMETRIES, LORENTZ)


def added_geometries(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The run's geometries beyond the paper's two (each trained in its own bundle)."""
    return tuple(g for g in factorial_geometries(config) if g not in GEOMETRIES)


def added_losses(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The run's losses beyond the paper's two (each trained in its own bundle)."""
    return tuple(loss for loss in factorial_losses(config) if loss not in LOSSES)


def added_arms(losses: tuple[str, ...], geometries: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The arms beyond the paper's four: each added loss on every geometry (the paper's, E
    first, then the added ones), then each added geometry with the paper's losses."""
    every_geometry = (*GEOMETRIES, *(g for g in geometries if g not in GEOMETRIES))
    by_loss = [f"{g}_{loss}" for loss in losses if loss not in LOSSES for g in every_geometry]
    by_geometry = [f"{g}_{loss}" for g in every_geometry[len(GEOMETRIES) :] for loss in LOSSES]
    return (*by_loss, *by_geometry)


Formula = Callable[[Any], Any]


def added_effects(
    losses: tuple[str, ...], geometries: tuple[str, ...] = ()
) -> dict[str, tuple[Formula, str]]:
    """The simple effects of each added level, by name, with its formula (over a mapping with
    one entry per arm) and definition. An added loss X: against each paper loss Y at each
    geometry g (``loss_XY_g``), then its geometry effect (``geom_X`` = H_X - E_X). An added
    geometry G: against each paper geometry B under each loss l (``geom_GB_l``), then its loss
    effect (``loss_G`` = G_S - G_R)."""
    added_losses_ = tuple(loss for loss in losses if loss not in LOSSES)
    added_geometries_ = tuple(g for g in geometries if g not in GEOMETRIES)
    effects: dict[str, tuple[Formula, str]] = {}
    for loss in added_losses_:
        for base in LOSSES:
            for g in (*GEOMETRIES, *added_geometries_):
                effects[f"loss_{loss}{base}_{g}"] = _effect(f"{g}_{loss}", f"{g}_{base}")
        effects[f"geom_{loss}"] = _effect(f"{GEOMETRIES[1]}_{loss}", f"{GEOMETRIES[0]}_{loss}")
    for geometry in added_geometries_:
        for base in GEOMETRIES:
            for loss in (*LOSSES, *added_losses_):
                effects[f"geom_{geometry}{base}_{loss}"] = _effect(
                    f"{geometry}_{loss}", f"{base}_{loss}"
                )
        effects[f"loss_{geometry}"] = _effect(f"{geometry}_{LOSSES[1]}", f"{geometry}_{LOSSES[0]}")
    return effects


def added_levels_named(effect: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The added losses and geometries an added effect's name involves (``loss_TR_C``:
    (T,), (C,)), from the naming rule of :func:`added_effects`."""
    kind, _, rest = effect.partition("_")
    codes, _, at = rest.partition("_")
    if kind == "loss" and len(codes) == 2:  # loss_XY_g
        return (codes[0],), ((at,) if at not in GEOMETRIES else ())
    if kind == "geom" and len(codes) == 2:  # geom_GB_l
        return ((at,) if at not in LOSSES else ()), (codes[0],)
    return ((codes,), ()) if kind == "geom" else ((), (codes,))


def is_added_effect(effect: str) -> bool:
    """Whether ``effect`` names an added loss's or geometry's effect, by the naming rule of
    :func:`added_effects` (read back by :func:`added_levels_named`)."""
    if not ADDED_EFFECT_SHAPE.fullmatch(effect):
        return False
    losses, geometries = added_levels_named(effect)
    valid = all(map(is_added_loss, losses)) and all(map(is_added_geometry, geometries))
    return valid and effect in added_effects(losses, geometries)


def _effect(first: str, second: str) -> tuple[Formula, str]:
    """The formula ``arm[first] - arm[second]`` and its definition."""
    return (lambda arm: arm[first] - arm[second]), f"{first} - {second}"


def is_paper_effect(effect: str) -> bool:
    """Whether an effect is one of the paper's five (a planned endpoint)."""
    return effect in FACTORIAL_EFFECTS


def check_factorial(config: Mapping[str, Any]) -> None:
    """Refuse a factorial without the paper's losses and geometries, or with an added loss or
    geometry that no plugin names, naming the key."""
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
    _check_geometries(config)


def _check_geometries(config: Mapping[str, Any]) -> None:
    """Refuse a factorial without the paper's geometries, or an added geometry that is
    reserved, spells a loss code (its cells' names would read as two losses) or that no plugin
    names."""
    geometries = factorial_geometries(config)
    missing = [g for g in GEOMETRIES if g not in geometries]
    if missing:
        raise ValueError(
            f"{FACTORIAL_KEY}.geometries {list(geometries)} lacks the paper's {missing}: the "
            "study's effects need them; add a geometry beside them"
        )
    named = geometry_references(config)
    losses = factorial_losses(config)
    for geometry in added_geometries(config):
        if not is_added_geometry(geometry) or geometry in losses:
            raise ValueError(
                f"{FACTORIAL_KEY}.geometries: {geometry!r} is taken by another head or loss of "
                "the study; give the added geometry another capital letter"
            )
        if geometry not in named:
            raise ValueError(
                f"{FACTORIAL_KEY}.geometries has {geometry!r}, but {GEOMETRY_PLUGINS_KEY} names "
                f"no {geometry!r}: add {GEOMETRY_PLUGINS_KEY}.{geometry}: "
                "'package.module:NAME' (or file.py:NAME)"
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
    return any(pinned.get(geometry) is None for geometry in geometries)


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


def geometry_references(config: Mapping[str, Any]) -> dict[str, str]:
    """The config's geometry plugins by geometry code, checked: one capital letter each, none
    a head the study has already."""
    plugins = configured(config, "geometries")
    for code in plugins:
        if not is_added_geometry(code):
            raise GeometryError(
                f"{GEOMETRY_PLUGINS_KEY}.{code}: a plugin's geometry code is one capital letter "
                f"that no head uses already (the paper's {list(GEOMETRIES)}, the Lorentz "
                f"{LORENTZ})"
            )
    return plugins


def geometry_reference(config: Mapping[str, Any], geometry: str) -> str | None:
    """The plugin reference an added geometry's cells are built from (None for a built-in)."""
    if geometry in GEOMETRIES or geometry == LORENTZ:
        return None
    references = geometry_references(config)
    if geometry not in references:
        raise GeometryError(
            f"no geometry {geometry!r}: built in {[*GEOMETRIES, LORENTZ]}, plugins "
            f"({GEOMETRY_PLUGINS_KEY}) {sorted(references)}"
        )
    return references[geometry]


def geometry_sources(config: Mapping[str, Any]) -> dict[str, Path]:
    """Each added geometry's plugin source file (what its jobs' code hash covers)."""
    references = geometry_references(config)
    return {
        geometry: plugin_source(
            references[geometry],
            f"{GEOMETRY_PLUGINS_KEY}.{geometry}",
            GEOMETRY_ENTRY_POINT_GROUP,
            GeometryError,
        )
        for geometry in added_geometries(config)
    }
