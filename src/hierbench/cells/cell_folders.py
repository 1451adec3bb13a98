"""Where a cell lives in a run: its folder below ``cells/`` names its kind and its seed, and
this is the one place that reads them back from a path."""

from __future__ import annotations

from pathlib import Path

CELLS_FOLDER = "cells"


def cell_folder(log_path: str | Path) -> str:
    """A cell file's cell: its folder below the dataset's ``cells/`` (``ER-42``,
    ``semantic/full/ES-42``)."""
    parts = Path(log_path).parts
    if CELLS_FOLDER not in parts[:-2]:
        raise ValueError(f"{log_path} is not a train log below a run's {CELLS_FOLDER}/ folder")
    below = len(parts) - 1 - parts[::-1].index(CELLS_FOLDER)
    return "/".join(parts[below + 1 : -1])


def cell_key(log_path: str | Path) -> tuple[str, int]:
    """A cell file's cell as (kind, seed): its folder below ``cells/`` without the seed
    (``semantic/A/ES-42/train_log.parquet`` gives ``("semantic/A/ES", 42)``)."""
    folder = cell_folder(log_path)
    kind, _, seed = folder.rpartition("-")
    if not kind or not seed.isdigit():
        raise ValueError(f"cell folder {folder!r} of {log_path} does not end in -<seed>")
    return kind, int(seed)
