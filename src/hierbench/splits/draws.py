"""Query/gallery draws and the rows of one (split, role) in the long split table: what the
sealed draws, the tuning validation and the outer splits share.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from hierbench.splits.sampling import SplitError, resolve_count, stratified_pick


@dataclass(frozen=True)
class QueryGallerySpec:
    """How many queries and gallery images each test perturbation draws, and their seeds."""

    seeds: Sequence[int]
    queries: int | float
    gallery: int | float


def rows_of(
    split: str, role: str, seed: int | None, sealed: bool, ids: Iterable[str]
) -> pd.DataFrame:
    """Rows of one (split, role) in the long split table."""
    ids = sorted(str(i) for i in ids)
    return pd.DataFrame(
        {
            "split": split,
            "role": role,
            "seed": pd.array([seed] * len(ids), dtype="Int64"),
            "sealed": sealed,
            "image_id": ids,
        }
    )


def sealed_query_gallery_rows(test: pd.DataFrame, spec: QueryGallerySpec) -> list[pd.DataFrame]:
    """One sealed query/gallery draw of the test images per seed, stratified by leaf."""
    return query_gallery_draws(test, spec, "qg", sealed=True)


def query_gallery_draws(
    test: pd.DataFrame, spec: QueryGallerySpec, prefix: str, *, sealed: bool
) -> list[pd.DataFrame]:
    """One query/gallery draw of ``test`` per seed (split ``<prefix>-<seed>``), stratified by leaf.

    Queries are shared out over leaf classes leaving at least one image of each class for
    the gallery where the class has two or more; the gallery is drawn from the rest.
    """
    n_test = len(test)
    queries = resolve_count(spec.queries, n_test, "query_gallery.queries")
    gallery = resolve_count(spec.gallery, n_test, "query_gallery.gallery")
    if queries + gallery > n_test:
        raise SplitError(
            f"query_gallery: {queries} queries + {gallery} gallery = {queries + gallery} "
            f"exceeds the {n_test} test images"
        )
    rows = []
    for seed in spec.seeds:
        rng = np.random.default_rng(seed)
        keep = 1 if queries <= n_test - test["leaf_code"].nunique() else 0
        query_index = stratified_pick(test, "leaf_code", queries, rng, keep=keep)
        rest = test.drop(query_index)
        gallery_index = stratified_pick(rest, "leaf_code", gallery, rng)
        split = f"{prefix}-{seed}"
        rows.append(rows_of(split, "query", seed, sealed, test.loc[query_index, "image_id"]))
        rows.append(rows_of(split, "gallery", seed, sealed, rest.loc[gallery_index, "image_id"]))
    return rows


def query_gallery_from(
    frame: pd.DataFrame, split: str, query_fraction: float, seed: int
) -> list[pd.DataFrame]:
    """A dev-side query/gallery division of ``frame`` (tuning validation), stratified by leaf."""
    rng = np.random.default_rng(seed)
    total = resolve_count(query_fraction, len(frame), f"{split}.query")
    keep = 1 if total <= len(frame) - frame["leaf_code"].nunique() else 0
    query_index = stratified_pick(frame, "leaf_code", total, rng, keep=keep)
    gallery_ids = frame.drop(query_index)["image_id"]
    return [
        rows_of(split, "query", seed, False, frame.loc[query_index, "image_id"]),
        rows_of(split, "gallery", seed, False, gallery_ids),
    ]
