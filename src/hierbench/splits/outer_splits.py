"""The outer hierarchy-disjoint splits of the development data: each holds out whole middle
groups as its test side (with query/gallery draws in the sealed draws' proportions) and another
share of its train side's groups as its validation side (``outer-k-tuning``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from hierbench.splits.draws import (
    QueryGallerySpec,
    query_gallery_draws,
    query_gallery_from,
    rows_of,
)
from hierbench.splits.sampling import SplitError, resolve_count

TUNING_SUFFIX = "tuning"  # an outer split's validation side: outer-k-tuning


def proportional_draws(spec: QueryGallerySpec, n_sealed: int, n_test: int) -> QueryGallerySpec:
    """The sealed draws' shares of the sealed test, as counts of another test side of ``n_test``
    images (the outer splits' draws take what the sealed draws take, in proportion)."""
    shares = [
        value / n_sealed if isinstance(value, int) else value
        for value in (spec.queries, spec.gallery)
    ]
    queries = max(1, round(shares[0] * n_test))
    gallery = min(max(1, round(shares[1] * n_test)), n_test - queries)
    return QueryGallerySpec(spec.seeds, queries, gallery)


def group_disjoint_outer(
    dev: pd.DataFrame,
    group: str,
    count: int,
    seed: int,
    test_fraction: float,
    draws: Callable[[int], QueryGallerySpec],
    validation_fraction: float = 0.2,
    validation_query_fraction: float = 0.2,
) -> list[pd.DataFrame]:
    """``count`` outer splits of the development images, disjoint in ``group`` (e.g. genus),
    each test side with its query/gallery draws (``draws(n_test)``, splits ``outer-k-qg-<seed>``)
    and each train side with a validation side of its own, ``validation_fraction`` of its groups
    (split ``outer-k-tuning``: ``train`` the other groups, ``query`` and ``gallery`` the held-out
    groups' images), on which the outer arms choose their epochs.

    Drawn inside the development data so that the sealed test set stays sealed.
    """
    groups = np.array(sorted(dev[group].unique()))
    n_test = resolve_count(test_fraction, len(groups), f"outer.test_fraction of {group} groups")
    if n_test >= len(groups):
        raise SplitError(f"outer split: {n_test} test groups leave no {group} group to train on")
    n_validation = resolve_count(
        validation_fraction, len(groups) - n_test, f"outer.validation_fraction of {group} groups"
    )
    if n_validation >= len(groups) - n_test:
        raise SplitError(
            f"outer split: {n_validation} validation groups leave no {group} group to train on"
        )
    rows = []
    for k in range(count):
        rng = np.random.default_rng(seed + k)
        order = groups[rng.permutation(len(groups))]
        held_out, validation = set(order[:n_test]), set(order[n_test : n_test + n_validation])
        is_test = dev[group].isin(held_out)
        name = f"outer-{k + 1}"
        rows.append(rows_of(name, "train", seed + k, False, dev.loc[~is_test, "image_id"]))
        rows.append(rows_of(name, "test", seed + k, False, dev.loc[is_test, "image_id"]))
        test = dev[is_test]
        rows.extend(query_gallery_draws(test, draws(len(test)), f"{name}-qg", sealed=False))
        is_validation = dev[group].isin(validation)
        tuning = f"{name}-{TUNING_SUFFIX}"
        rows.append(
            rows_of(
                tuning, "train", seed + k, False, dev.loc[~is_test & ~is_validation, "image_id"]
            )
        )
        rows.extend(
            query_gallery_from(dev[is_validation], tuning, validation_query_fraction, seed + k)
        )
    return rows
