"""The simple effects as formulas over the arms: each computed from a mapping with one entry
per arm (a frame's columns, rows being seeds, or per-query arrays: the formulas are linear),
the factorial's five, then the companion method's three contrasts (only where its cells ran)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
