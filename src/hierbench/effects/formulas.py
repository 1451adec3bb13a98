"""The simple effects as formulas over the arms: each computed from a mapping with one entry
per arm (a frame's columns, rows being seeds, or per-query arrays: the formulas are linear),
the factorial's five, then the companion method's three contrasts (only where its cells ran),
then each added loss's (:mod:`hierbench.factorial`: only where its arms are).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from hierbench.factorial import added_arms, added_effects
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


def added_losses_of(arms: Iterable[str]) -> tuple[str, ...]:
    """The losses beyond the paper's (and the companion's) among ``arms`` (``E_T``: ``T``), in
    sorted order, each with an arm on every geometry of the factorial."""
    found = {arm.split("_")[1] for arm in arms if arm.count("_") == 1}
    added = sorted(found - {*LOSSES, COMPANION_LOSS})
    return tuple(loss for loss in added if all(f"{g}_{loss}" in set(arms) for g in GEOMETRIES))


def effect_formulas(arms: Iterable[str]) -> dict[str, Callable[[Any], Any]]:
    """Every effect the arms support: the built-in ones whose arms are all present (the
    factorial's five need its four cells), then each added loss's."""
    arms = set(arms)
    formulas = {}
    for name, formula in EFFECT_FORMULAS.items():
        try:
            formula(dict.fromkeys(arms, 0.0))
        except KeyError:
            continue
        formulas[name] = formula
    return formulas | {
        name: formula for name, (formula, _) in added_effects(added_losses_of(arms)).items()
    }


def effect_definition(effect: str) -> str:
    """An effect's definition in arms (``H_R - E_R``); an added loss's from its name."""
    if effect in EFFECT_DEFINITIONS:
        return EFFECT_DEFINITIONS[effect]
    loss = effect.removeprefix("geom_") if effect.startswith("geom_") else effect[5]
    return added_effects((loss,))[effect][1]


def effect_arms(arms: Iterable[str]) -> tuple[str, ...]:
    """The arms among ``arms`` that the effect formulas read: the factorial's, the companion
    method's and any added loss's."""
    arms = list(dict.fromkeys(str(arm) for arm in arms))
    read = {*FACTORIAL_ARMS, *COMPANION_ARMS, *added_arms(added_losses_of(arms))}
    return tuple(arm for arm in arms if arm in read)
