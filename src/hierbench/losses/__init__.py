"""The training objectives, one module each, all meeting ``objective.Objective``.

The plain objectives of the factorial (R, S) take the batch's (B, B) sanitised distances, the
(B, 3) integer labels and the cell's spec, and return the loss and its per-level values for the
log; ``DistanceObjective`` puts them behind the one interface the trainable objectives (HIER-style,
angle entailment) implement themselves. A new plain objective is a module beside these and one
``PlainObjective`` (``registry``): a built-in one is an entry of ``registry.BUILT_IN``, a
researcher's a plugin named in the config (``plugins.objectives``); a trainable one subclasses
``Objective``.
"""

from hierbench.losses.common import LEVEL_CODES, LEVEL_NAMES
from hierbench.losses.objective import (
    DistanceObjective,
    LevelValues,
    Objective,
    level_floats,
)
from hierbench.losses.regression import DEFAULT_REGRESSION_TARGETS, regression_loss
from hierbench.losses.supcon import NoPositiveError, taxonomy_supcon_loss

__all__ = [
    "DEFAULT_REGRESSION_TARGETS",
    "LEVEL_CODES",
    "LEVEL_NAMES",
    "DistanceObjective",
    "LevelValues",
    "NoPositiveError",
    "Objective",
    "level_floats",
    "regression_loss",
    "taxonomy_supcon_loss",
]
