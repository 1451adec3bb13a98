"""The generic levels of a taxonomy table: integer level codes and the uniqueness check."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from hierbench.protocol import LEVELS

from .errors import TaxonomyError

CODE_COLUMNS = ("leaf_code", "middle_code", "high_code")


def add_level_codes(df: pd.DataFrame) -> pd.DataFrame:
    """Add leaf_code/middle_code/high_code: dense 0..n-1 ranks of the sorted level names."""
    out = df.copy()
    for level, column in zip(LEVELS, CODE_COLUMNS, strict=True):
        names = sorted(out[level].astype(str).unique())
        out[column] = out[level].astype(str).map({n: i for i, n in enumerate(names)})
        out[column] = out[column].astype("int64")
    return out


def require_unique(frame: pd.DataFrame, column: str, path: str | Path) -> None:
    """Raise if a column that must identify rows repeats a value."""
    dup = sorted(frame.loc[frame[column].duplicated(), column].astype(str))
    if dup:
        raise TaxonomyError(f"{path}: duplicated {column} {dup[:5]}")
