"""The taxonomy's `<id> <name>` inputs: CUB's class list, and the line reader that NABirds'
class list and tree share (the one parser, hierbench.idnames, with the taxonomy's messages)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from hierbench.idnames import IdNameLine, read_id_name_file

from .errors import TaxonomyInputError
from .levels import require_unique


def read_cub_classes(path: str | Path) -> pd.DataFrame:
    """Read CUB's classes.txt ('1 001.Black_footed_Albatross') into class_id, class_name."""
    rows = [(line.id, line.name) for line in read_pairs(Path(path), r"\S+")]
    frame = pd.DataFrame(rows, columns=["class_id", "class_name"])
    require_unique(frame, "class_id", path)
    require_unique(frame, "class_name", path)
    return frame.sort_values("class_id", ignore_index=True)


def read_pairs(path: Path, name_pattern: str) -> list[IdNameLine]:
    """Parse '<id> <name>' lines whose name fully matches ``name_pattern``; blank lines are
    skipped, repeats are the caller's to check, and malformed lines name file:line."""
    return read_id_name_file(
        path,
        name_pattern=name_pattern,
        malformed="malformed line {line!r}",
        duplicate=None,
        empty=None,
        error=TaxonomyInputError,
    )
