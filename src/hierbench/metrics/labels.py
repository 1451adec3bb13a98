"""Label arrays the metric engine takes: (n, 3) integer codes (leaf, middle, high), checked to
form one tree across queries and gallery."""

from __future__ import annotations

from typing import Any

import numpy as np

from hierbench.relations import LEVELS


def check_labels(labels: Any, rows: int | None, name: str) -> np.ndarray:
    """Labels as an int64 (n, 3) array (leaf, middle, high), ``rows`` long when given."""
    array = np.asarray(labels)
    if array.ndim != 2 or array.shape[1] != len(LEVELS):
        raise ValueError(
            f"{name} must have shape (n, 3) with columns leaf, middle, high; got {array.shape}"
        )
    if array.dtype == bool or not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"{name} must hold integer label codes, got dtype {array.dtype}")
    if rows is not None and len(array) != rows:
        raise ValueError(f"{name} has {len(array)} rows but the embeddings have {rows}")
    return array.astype(np.int64, copy=False)


def label_codes(
    query_labels: Any, gallery_labels: Any, n_queries: int, n_gallery: int
) -> tuple[np.ndarray, np.ndarray]:
    """Dense int32 codes of both label arrays, checked to form one tree."""
    query = check_labels(query_labels, n_queries, "query_labels")
    gallery = check_labels(gallery_labels, n_gallery, "gallery_labels")
    both = np.concatenate([query, gallery])
    codes = np.stack(
        [np.unique(both[:, level], return_inverse=True)[1] for level in range(len(LEVELS))]
    ).T  # column-contiguous
    codes = codes.astype(np.int32, order="F")
    for child, parent in ((0, 1), (1, 2)):
        child_codes, parent_codes = codes[:, child].astype(np.int64), codes[:, parent]
        pairs = np.unique(child_codes * (int(parent_codes.max()) + 1) + parent_codes)
        if len(pairs) != codes[:, child].max() + 1:
            raise ValueError(
                f"labels do not form a tree: some {LEVELS[child]} label has more than one "
                f"{LEVELS[parent]} label across query_labels and gallery_labels"
            )
    return codes[:n_queries], codes[n_queries:]
