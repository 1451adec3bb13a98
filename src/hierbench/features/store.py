"""Feature tables and their parquet form: ids, label codes (in the labelled slices; a backbone
pass has none) and a FixedSizeList<float32> column.

Kept apart from :mod:`hierbench.features.extraction` so that training and evaluation jobs can read
features without importing timm and torchvision (seconds of start-up per job).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from hierbench import jobcost
from hierbench.provenance.artifacts import METADATA_KEY, PARQUET_WRITE_OPTIONS, publish
from hierbench.provenance.hashing import canonical_json
from hierbench.provenance.records import JobContext
from hierbench.splits.construction import role_ids, rows_for_ids

LABEL_COLUMNS = ("leaf_code", "middle_code", "high_code")
FEATURE_COLUMN = "feature"


class FeatureError(ValueError):
    """Backbone weights, images or feature tables are unusable; the message says what to fix."""


# ---------------------------------------------------------------------------------------------
# Feature tables and their parquet form
# ---------------------------------------------------------------------------------------------


def feature_table(
    images: pd.DataFrame, features: np.ndarray, *, labelled: bool = True
) -> pd.DataFrame:
    """One row per image: its id, its leaf/middle/high codes (when ``labelled``; a backbone
    pass has none) and its float32 feature vector."""
    needed = ["image_id", *(LABEL_COLUMNS if labelled else ())]
    missing = [column for column in needed if column not in images.columns]
    if missing:
        raise FeatureError(f"image table lacks column(s) {missing}")
    matrix = _check_matrix(features, len(images))
    frame = pd.DataFrame({"image_id": images["image_id"].astype(str).to_numpy()})
    for column in needed[1:]:
        frame[column] = images[column].to_numpy(np.int64)
    frame[FEATURE_COLUMN] = list(matrix)
    return frame


def _check_matrix(features: np.ndarray, rows: int) -> np.ndarray:
    """A finite float32 (rows, dim) matrix, or an error saying what is wrong."""
    matrix = np.asarray(features)
    if matrix.ndim != 2 or matrix.shape[0] != rows or matrix.shape[1] == 0:
        raise FeatureError(f"features have shape {matrix.shape}; expected ({rows}, dim)")
    if matrix.dtype != np.float32:
        raise FeatureError(f"features are {matrix.dtype}; expected float32")
    if not np.isfinite(matrix).all():
        raise FeatureError("features hold NaN or infinite values")
    return matrix


def features_to_arrow(table: pd.DataFrame, metadata: dict[str, Any] | None = None) -> pa.Table:
    """A feature table as Arrow, the vectors as ``FixedSizeList<float32, dim>``, rows kept.

    ``pa.Table.from_pandas`` would make a variable-length ``list<float>`` column instead.
    """
    if table.empty:
        raise FeatureError("feature table is empty")
    try:
        matrix = np.stack(table[FEATURE_COLUMN].to_numpy())
    except ValueError as error:
        raise FeatureError(f"feature vectors differ in length: {error}") from error
    matrix = _check_matrix(matrix, len(table))
    values = pa.array(matrix.reshape(-1), type=pa.float32())
    columns = {
        "image_id": pa.array(table["image_id"].astype(str).tolist(), type=pa.string()),
        **{
            c: pa.array(table[c].to_numpy(np.int64), type=pa.int64())
            for c in LABEL_COLUMNS
            if c in table.columns
        },
        FEATURE_COLUMN: pa.FixedSizeListArray.from_arrays(values, matrix.shape[1]),
    }
    arrow = pa.table(columns)
    return arrow.replace_schema_metadata({METADATA_KEY: canonical_json(metadata or {}).encode()})


def write_feature_parquet(
    table: pa.Table | pd.DataFrame,
    target: str | os.PathLike[str],
    job: JobContext,
    metadata: dict[str, Any] | None = None,
) -> Path:
    """Publish a feature table as deterministic parquet (rows as given) with provenance."""
    arrow = features_to_arrow(table) if isinstance(table, pd.DataFrame) else table
    feature_type = arrow.schema.field(FEATURE_COLUMN).type
    if not pa.types.is_fixed_size_list(feature_type) or feature_type.value_type != pa.float32():
        raise FeatureError(f"column {FEATURE_COLUMN} is {feature_type}, not a FixedSizeList")
    arrow = arrow.replace_schema_metadata({METADATA_KEY: canonical_json(metadata or {}).encode()})
    facts = {"rows": arrow.num_rows, "columns": arrow.column_names, "dim": feature_type.list_size}
    return publish(
        target, lambda tmp: pq.write_table(arrow, tmp, **PARQUET_WRITE_OPTIONS), job, extra=facts
    )


@jobcost.charged(jobcost.LOADING)
def read_feature_matrix(path: str | os.PathLike[str]) -> tuple[pd.DataFrame, np.ndarray]:
    """Ids and label codes (a DataFrame) and the float32 (n, dim) matrix of a feature parquet."""
    table = pq.read_table(path)
    if FEATURE_COLUMN not in table.column_names:
        raise FeatureError(f"{path} has no '{FEATURE_COLUMN}' column")
    column = table.column(FEATURE_COLUMN)
    kind = column.type
    if not pa.types.is_fixed_size_list(kind) or kind.value_type != pa.float32():
        raise FeatureError(f"{path}: column '{FEATURE_COLUMN}' is {kind}, not fixed_size_list")
    if column.null_count:
        raise FeatureError(f"{path}: {column.null_count} feature vector(s) are null")
    chunks = [chunk.flatten().to_numpy(zero_copy_only=False) for chunk in column.chunks]
    values = np.concatenate(chunks) if chunks else np.empty(0, np.float32)
    matrix = values.reshape(table.num_rows, kind.list_size)  # concatenate made a writable copy
    frame = table.drop_columns([FEATURE_COLUMN]).to_pandas()
    return frame, matrix


def read_labelled_features(
    path: str | os.PathLike[str],
) -> tuple[pd.Series, np.ndarray, np.ndarray]:
    """Image ids, (n, 3) int64 label codes (leaf, middle, high) and the float32 matrix."""
    frame, matrix = read_feature_matrix(path)
    return frame["image_id"].astype(str), frame[list(LABEL_COLUMNS)].to_numpy(np.int64), matrix


@jobcost.charged(jobcost.LOADING)
def role_arrays(
    features: str | Path, splits: str | Path, roles: list[tuple[str, str]]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Feature matrix and label codes of each development (split, role), reading files once."""
    ids, labels, matrix = read_labelled_features(features)
    table = pd.read_parquet(splits)
    arrays = []
    for split, role in roles:
        rows = rows_for_ids(ids, role_ids(table, split, role), f"{split}/{role}")
        arrays.append((matrix[rows], labels[rows]))
    return arrays


def role_data(
    features: str | Path, splits: str | Path, split: str, role: str
) -> tuple[np.ndarray, np.ndarray]:
    """Feature matrix and label codes of one development (split, role)."""
    return role_arrays(features, splits, [(split, role)])[0]
