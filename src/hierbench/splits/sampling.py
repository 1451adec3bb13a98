"""Stratified sampling for the splits: counts and fractions checked, totals shared out over
groups by the largest-remainder method (ties in a seeded order), members drawn by a seeded
permutation; and the SHA256 identity of an id list.

An id list's canonical text is its sorted image ids, one per line, each line ending in a
newline (UTF-8), so the identifier does not depend on how the split is stored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np
import pandas as pd

FRACTION_TOLERANCE = 1e-9


class SplitError(ValueError):
    """A split cannot be made as configured; the message gives the numbers."""


# ------------------------------------------------------------------------------ identity


def canonical_id_text(image_ids: Iterable[str]) -> str:
    """The canonical text form of an id list: sorted ids, one per line, newline-terminated."""
    return "".join(f"{image_id}\n" for image_id in sorted(str(i) for i in image_ids))


def split_identity(image_ids: Iterable[str]) -> str:
    """SHA256 of an id list's canonical text: the split's identifier."""
    return hashlib.sha256(canonical_id_text(image_ids).encode("utf-8")).hexdigest()


# ----------------------------------------------------------------------------- counting


def resolve_count(spec: int | float, available: int, what: str) -> int:
    """A configured count (integer) or fraction (0 < x < 1) of ``available``, checked."""
    if isinstance(spec, bool) or spec <= 0:
        raise SplitError(f"{what}: {spec!r} is not a positive count or fraction")
    count = spec if isinstance(spec, int) else round(spec * available)
    if isinstance(spec, float) and spec >= 1:
        raise SplitError(f"{what}: fraction {spec} must be below 1 (give an integer for a count)")
    if count > available:
        raise SplitError(f"{what}: asked for {count} but only {available} are available")
    return int(count)


def allocate(
    weights: pd.Series, total: int, rng: np.random.Generator, capacity: pd.Series | None = None
) -> pd.Series:
    """Share ``total`` over groups in proportion to ``weights`` (largest remainder).

    No group gets more than its ``capacity`` (default: unlimited); remainders are handed out
    largest first, ties in a seeded order.
    """
    if capacity is None:
        capacity = pd.Series(total, index=weights.index)
    if total > capacity.sum():
        raise SplitError(f"cannot share out {total} items: only {int(capacity.sum())} available")
    exact = weights / weights.sum() * total
    share = np.minimum(np.floor(exact), capacity).astype(int)
    order = pd.DataFrame(
        {"remainder": exact - share, "tiebreak": rng.permutation(len(weights))},
        index=weights.index,
    ).sort_values(["remainder", "tiebreak"], ascending=[False, True])
    left = total - int(share.sum())
    while left > 0:
        for group in order.index:
            if left and share[group] < capacity[group]:
                share[group] += 1
                left -= 1
    return share


def stratified_pick(
    frame: pd.DataFrame, by: str, total: int, rng: np.random.Generator, *, keep: int = 0
) -> pd.Index:
    """Index labels of ``total`` rows drawn from ``frame``, stratified by column ``by``."""
    ordered = frame.sort_values(["image_id"])
    sizes = ordered.groupby(by, sort=True).size()
    capacity = (sizes - keep).clip(lower=0)
    if total > capacity.sum():
        raise SplitError(
            f"cannot draw {total} of {len(frame)} images while leaving {keep} per {by} group "
            f"({int(capacity.sum())} can be drawn)"
        )
    share = allocate(sizes, total, rng, capacity)
    picked: list = []
    for group, members in ordered.groupby(by, sort=True):
        count = int(share[group])
        if count:
            picked.extend(members.index[rng.permutation(len(members))[:count]])
    return pd.Index(sorted(picked, key=lambda label: frame.at[label, "image_id"]))
