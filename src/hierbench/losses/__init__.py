"""The training objectives of the factorial, one module each, keyed by their loss code.

Every objective takes the batch's (B, B) sanitised distances, the (B, 3) integer labels and the
cell's spec, and returns the loss and its per-level values for the log. A new objective is a
new module beside these and one entry in ``OBJECTIVES`` (its code in ``hierbench.protocol``).
"""

from collections.abc import Callable
from typing import Any

import torch

from hierbench.losses.common import LEVEL_CODES, LEVEL_NAMES
from hierbench.losses.regression import (
    DEFAULT_REGRESSION_TARGETS,
    regression_loss,
    regression_objective,
)
from hierbench.losses.supcon import NoPositiveError, supcon_objective, taxonomy_supcon_loss
from hierbench.protocol import REGRESSION, SUPCON

LevelValues = dict[str, float | None]
Objective = Callable[[torch.Tensor, torch.Tensor, Any], tuple[torch.Tensor, LevelValues]]
OBJECTIVES: dict[str, Objective] = {REGRESSION: regression_objective, SUPCON: supcon_objective}

__all__ = [
    "DEFAULT_REGRESSION_TARGETS",
    "LEVEL_CODES",
    "LEVEL_NAMES",
    "OBJECTIVES",
    "NoPositiveError",
    "Objective",
    "regression_loss",
    "taxonomy_supcon_loss",
]
