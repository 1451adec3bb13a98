"""What a person reads: the dataset's own level names in place of the stable level keys.

Tables keep ``leaf``, ``middle`` and ``high`` as keys (their parquet columns and values, the
CSV renderings, anything code reads); the Markdown and LaTeX renderings, ``summary.md``, the
figures and ``hierbench compare`` show the configured names (CUB class / genus / family,
NABirds leaf / parent / supergroup, a table dataset its own).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from hierbench.protocol import LEVELS

LEVEL_COLUMN = "level"
LEVELS_METADATA = "levels"  # the parquet metadata key that maps each level key to its name


def level_labels(names: Sequence[str] | None) -> dict[str, str]:
    """Each level key's name for readers (``names``: leaf, middle, high in order); the keys
    themselves when no names are given. Two levels with one name is an error."""
    if names is None:
        return {key: key for key in LEVELS}
    if len(names) != len(LEVELS) or len(set(names)) != len(LEVELS):
        raise ValueError(f"level names must be three distinct names, got {list(names)}")
    return dict(zip(LEVELS, (str(name) for name in names), strict=True))


def for_readers(frame: pd.DataFrame, labels: Mapping[str, str]) -> pd.DataFrame:
    """``frame`` as a person reads it: level-key columns renamed and the values of a ``level``
    column replaced by the level names (other values, such as ``mean_hierarchy``, kept)."""
    shown = frame.rename(columns={key: name for key, name in labels.items() if key != name})
    if LEVEL_COLUMN in shown.columns:
        shown[LEVEL_COLUMN] = [labels.get(value, value) for value in shown[LEVEL_COLUMN]]
    return shown


def legend_line(labels: Mapping[str, str]) -> str:
    """One sentence naming the levels, for a page's head: "Levels: class (leaf), ..."."""
    named = [f"{name} ({key})" if name != key else key for key, name in labels.items()]
    return "Levels: " + ", ".join(named) + "."
