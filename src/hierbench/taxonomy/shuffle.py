"""The shuffled control taxonomy: a seeded, structure-preserving shuffle of the levels."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .errors import TaxonomyError
from .levels import add_level_codes, require_unique
from .matching import check_taxonomy_consistency

DEFAULT_SHUFFLE_SEED = 20260818


def shuffle_taxonomy(
    tax: pd.DataFrame, seed: int = DEFAULT_SHUFFLE_SEED
) -> tuple[pd.DataFrame, dict[str, int]]:
    """Structure-preserving shuffled taxonomy for the control arm.

    Leaf labels stay; every middle group keeps its size and every high group its number
    of middles; no leaf keeps its middle (new middle != old middle). Middles are then
    re-hung under highs by a seeded permutation (fixed points allowed, counted). Returns
    the generic columns only (dataset-specific ones like genus would be stale).
    """
    base = tax.sort_values("class_id", ignore_index=True)
    require_unique(base, "leaf", "taxonomy table")
    check_taxonomy_consistency(base)
    rng = np.random.default_rng(seed)
    old_middle = base["middle"].astype(str).to_numpy()
    new_middle = _derange_groups(old_middle, rng)
    mid_high = base.drop_duplicates("middle").set_index("middle")["high"].sort_index()
    permuted = rng.permutation(mid_high.to_numpy())
    new_high = dict(zip(mid_high.index, permuted, strict=True))
    out = base[["class_id", "class_name", "leaf"]].copy()
    out["middle"] = new_middle
    out["high"] = out["middle"].map(new_high)
    for level in ("middle", "high"):
        if f"{level}_id" in base.columns:
            ids = dict(zip(base[level], base[f"{level}_id"], strict=True))
            out[f"{level}_id"] = out[level].map(ids).astype("int64")
    report = {
        "seed": int(seed),
        "n_leaves": len(out),
        "n_middles": len(mid_high),
        "n_highs": int(mid_high.nunique()),
        "leaf_fixed_points": int((new_middle == old_middle).sum()),
        "middle_high_fixed_points": int((permuted == mid_high.to_numpy()).sum()),
    }
    return add_level_codes(out), report


def _derange_groups(groups: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Permute group labels over items so group sizes stay and no item keeps its group."""
    labels, sizes = np.unique(groups, return_counts=True)
    if sizes.max() * 2 > len(groups):
        big = labels[sizes.argmax()]
        raise TaxonomyError(
            f"cannot shuffle: middle group {big!r} holds {sizes.max()} of "
            f"{len(groups)} leaves, so some leaf must keep it (needs <= half)"
        )
    slots = rng.permutation(groups)
    for i in range(len(groups)):
        if slots[i] != groups[i]:
            continue
        ok = np.flatnonzero((slots != groups[i]) & (groups != groups[i]))
        j = ok[rng.integers(len(ok))]
        slots[i], slots[j] = slots[j], slots[i]
    return slots
