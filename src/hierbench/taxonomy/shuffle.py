"""The shuffled control taxonomy: a seeded, structure-preserving shuffle of the levels.

How many middle groups keep their high group is a setting (``fixed_points``): ``paper``, the 15
Parent-to-Supergroup fixed points of the paper's NABirds shuffle, which "necessarily retains 15
Parent-to-Supergroup fixed points under the group-size constraints" (its supplement, S9; its
own procedure is not given, so we match its count); ``minimum``,
the fewest any count-preserving permutation allows (6 on NABirds: the largest Supergroup holds
205 of 404 Parents); or a number. Fewer fixed points make a stronger shuffle, and so a larger
Full − Shuffle contrast for that reason alone.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .errors import TaxonomyError
from .levels import add_level_codes, require_unique
from .matching import check_taxonomy_consistency

DEFAULT_SHUFFLE_SEED = 20260818
PAPER_FIXED_POINTS = 15  # the paper's NABirds shuffle: Parents that keep their Supergroup
FIXED_POINT_SETTINGS = ("paper", "minimum")
REHANG_TRIES = 100  # seeded orders tried by rehang_keeping before a count is unreachable


def shuffle_taxonomy(
    tax: pd.DataFrame, seed: int = DEFAULT_SHUFFLE_SEED, fixed_points: str | int = "minimum"
) -> tuple[pd.DataFrame, dict[str, int | str]]:
    """Structure-preserving shuffled taxonomy for the control arm.

    Leaf labels stay; every middle group keeps its size and every high group its number
    of middles; no leaf keeps its middle (new middle != old middle). Middles are then
    re-hung under highs keeping exactly the ``fixed_points`` setting's number of middles
    under their own high (:func:`rehang_keeping`). Returns the generic columns only
    (dataset-specific ones like genus would be stale) and a report of both fixed-point counts,
    the setting and the bound.
    """
    base = tax.sort_values("class_id", ignore_index=True)
    require_unique(base, "leaf", "taxonomy table")
    check_taxonomy_consistency(base)
    rng = np.random.default_rng(seed)
    old_middle = base["middle"].astype(str).to_numpy()
    new_middle = _derange_groups(old_middle, rng)
    mid_high = base.drop_duplicates("middle").set_index("middle")["high"].sort_index()
    kept = fixed_point_count(fixed_points, mid_high.to_numpy())
    permuted = rehang_keeping(mid_high.to_numpy(), kept, rng)
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
        "middle_high_fixed_point_setting": fixed_points,
        "middle_high_fixed_point_bound": fixed_point_bound(mid_high.to_numpy()),
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


def fixed_point_bound(labels: np.ndarray) -> int:
    """The fewest fixed points of any count-preserving permutation of ``labels``: the items of
    the largest group beyond half of all items must keep their label, max(0, 2·n_max − N)."""
    _, sizes = np.unique(labels, return_counts=True)
    return max(0, 2 * int(sizes.max()) - len(labels)) if len(labels) else 0


def rehang_with_fewest_fixed_points(labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A seeded permutation of ``labels`` (counts kept) with exactly :func:`fixed_point_bound`
    items keeping their label.

    The items are laid out group by group, the largest group first and the others in a seeded
    order, each group's items in a seeded order; item i then takes the label n_max places
    further along the layout (cyclically). A group's items receive labels from a stretch that
    starts n_max ≥ its size later, so only the largest group can wrap onto itself, and then on
    exactly 2·n_max − N of its items.
    """
    groups, sizes = np.unique(labels, return_counts=True)
    if not len(labels):
        return labels.copy()
    largest = int(sizes.argmax())
    others = [int(g) for g in rng.permutation(len(groups)) if g != largest]
    layout = np.concatenate(
        [rng.permutation(np.flatnonzero(labels == groups[g])) for g in [largest, *others]]
    )
    result = np.empty_like(labels)
    result[layout] = np.roll(labels[layout], -int(sizes.max()))
    return result


def fixed_point_count(setting: str | int, labels: np.ndarray) -> int:
    """How many items keep their label under ``setting`` (``paper``, ``minimum`` or a count),
    checked against what a count-preserving permutation of ``labels`` allows."""
    bound = fixed_point_bound(labels)
    if isinstance(setting, str):
        if setting not in FIXED_POINT_SETTINGS:
            raise TaxonomyError(
                f"shuffle fixed points {setting!r}: give one of {list(FIXED_POINT_SETTINGS)} "
                "or a number"
            )
        count = bound if setting == "minimum" else PAPER_FIXED_POINTS
    else:
        count = int(setting)
    if not bound <= count <= len(labels):
        raise TaxonomyError(
            f"shuffle fixed points {setting!r} ({count}): the {len(labels)} middle groups allow "
            f"between {bound} (the bound the largest high group sets) and {len(labels)}"
        )
    return count


def rehang_keeping(labels: np.ndarray, kept: int, rng: np.random.Generator) -> np.ndarray:
    """A seeded count-preserving permutation of ``labels`` in which exactly ``kept`` items keep
    their label: :func:`rehang_with_fewest_fixed_points`, then, in a seeded order, items given
    back their own label (:func:`_give_back`), a new seeded order where one ends a single item
    short with only pairs left to swap. Every count from the bound up is reachable but one
    fewer than all (the last item would have nowhere else to go)."""
    start = rehang_with_fewest_fixed_points(labels, rng)
    for _ in range(REHANG_TRIES):  # a seeded order can end one short with only pairs left
        result, fixed = start.copy(), int((start == labels).sum())
        order = rng.permutation(len(labels))
        while fixed < kept:
            gain = _give_back(labels, result, order, most=kept - fixed)
            if not gain:
                break
            fixed += gain
        if fixed == kept:
            return result
    raise TaxonomyError(f"cannot keep exactly {kept} of {len(labels)} items in place")


def _give_back(labels: np.ndarray, result: np.ndarray, order: np.ndarray, most: int) -> int:
    """Give the first item (in ``order``) that lacks its label its own label back, by a swap
    with an item holding it; a swap that fixes one item is preferred, one that fixes two (the
    partner gets its own label too) is taken when ``most`` allows. Returns the gain (0: none)."""
    for allowed in (1, 2):
        if allowed > most:
            break
        for i in order:
            if result[i] == labels[i]:
                continue
            partners = np.flatnonzero((result == labels[i]) & (labels != labels[i]))
            if allowed == 1:
                partners = partners[labels[partners] != result[i]]
            if len(partners):
                j = int(partners[0])
                result[i], result[j] = result[j], result[i]
                return allowed
    return 0
