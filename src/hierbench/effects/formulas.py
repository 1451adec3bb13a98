"""The simple effects as formulas over the arms: each computed from a mapping with one entry
per arm (a frame's columns, rows being seeds, or per-query arrays: the formulas are linear),
the factorial's five, then the companion method's three contrasts (only where its cells ran),
then each added loss's and geometry's (:mod:`hierbench.factorial`: only where its arms are).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from hierbench.factorial import (
    added_arms,
    added_effects,
    added_levels_named,
    is_added_geometry,
)
from hierbench.protocol import COMPANION_ARMS, COMPANION_LOSS, FACTORIAL_ARMS, GEOMETRIES, LOSSES

EFFECT_FORMULAS: dict[str, Callable[[Any], Any]] = {
    "geom_R": lambda arm: arm["H_R"] - arm["E_R"],
    "geom_S": lambda arm: arm["H_S"] - arm["E_S"],
    "loss_E": lambda arm: arm["E_S"] - arm["E_R"],
    "loss_H": lambda arm: arm["H_S"] - arm["H_R"],
    "int": lambda arm: (arm["H_S"] - arm["E_S"]) - (arm["H_R"] - arm["E_R"]),
    "loss_AS_E": lambda arm: arm["E_A"] - arm["E_S"],
    "loss_AS_hyp": lambda arm: arm["L_A"] - arm["H_S"],
    "geom_A": lambda arm: arm["L_A"] - arm["E_A"],
}
EFFECT_DEFINITIONS: dict[str, str] = {
    "geom_R": "H_R - E_R",
    "geom_S": "H_S - E_S",
    "loss_E": "E_S - E_R",
    "loss_H": "H_S - H_R",
    "int": "(H_S - E_S) - (H_R - E_R)",
    "loss_AS_E": "E_A - E_S",
    "loss_AS_hyp": "L_A - H_S",
    "geom_A": "L_A - E_A",
}


def added_levels_of(arms: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The added losses and geometries among ``arms`` (``E_T``: loss T; ``C_R``: geometry C),
    each in sorted order: a loss beyond the paper's (and the companion's) with an arm on each
    of the paper's geometries, a geometry beyond the paper's with an arm under each of the
    paper's losses."""
    arms = {arm for arm in arms if arm.count("_") == 1}
    pairs = [arm.split("_") for arm in arms]
    losses = sorted({loss for _, loss in pairs} - {*LOSSES, COMPANION_LOSS})
    geometries = sorted({g for g, _ in pairs if is_added_geometry(g)})
    return (
        tuple(loss for loss in losses if all(f"{g}_{loss}" in arms for g in GEOMETRIES)),
        tuple(g for g in geometries if all(f"{g}_{loss}" in arms for loss in LOSSES)),
    )


def effect_formulas(arms: Iterable[str]) -> dict[str, Callable[[Any], Any]]:
    """Every effect the arms support: the built-in ones whose arms are all present (the
    factorial's five need its four cells), then each added loss's and geometry's."""
    arms = set(arms)
    formulas = {}
    for name, formula in EFFECT_FORMULAS.items():
        try:
            formula(dict.fromkeys(arms, 0.0))
        except KeyError:
            continue
        formulas[name] = formula
    return formulas | {
        name: formula for name, (formula, _) in added_effects(*added_levels_of(arms)).items()
    }


def effect_definition(effect: str) -> str:
    """An effect's definition in arms (``H_R - E_R``); an added level's from its name."""
    if effect in EFFECT_DEFINITIONS:
        return EFFECT_DEFINITIONS[effect]
    return added_effects(*added_levels_named(effect))[effect][1]


def effect_arms(arms: Iterable[str]) -> tuple[str, ...]:
    """The arms among ``arms`` that the effect formulas read: the factorial's, the companion
    method's and any added loss's or geometry's."""
    arms = list(dict.fromkeys(str(arm) for arm in arms))
    read = {*FACTORIAL_ARMS, *COMPANION_ARMS, *added_arms(*added_levels_of(arms))}
    return tuple(arm for arm in arms if arm in read)
