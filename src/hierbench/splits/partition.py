"""Which whole middle groups (NABirds Parents) go to train, validation and test.

The paper's NABirds partition is 242 / 81 / 81 Parents holding 328 / 114 / 113 leaf classes;
it does not say how it was drawn. A seeded permutation of the Parents cut at 242 and 323 gives
the Parent counts, but not the leaf counts. With target leaf counts (``splits.leaves``) the
partition is the first of the seeded permutations ``seed``, ``seed + 1``, … whose groups hold
exactly those leaves: a documented, deterministic search, the same on every machine (NumPy's
PCG64 streams do not depend on the platform). On the real NABirds tree, from seed 42, it is
found within a thousand tries. Without targets it is the first permutation, as before.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from hierbench.splits.sampling import FRACTION_TOLERANCE, SplitError, allocate

ROLES = ("train", "validation", "test")
SEARCH_LIMIT = 100_000  # seeded permutations tried before the targets count as unreachable


def parent_counts(
    spec: dict[str, int | float],
    n_parents: int,
    key: str = "splits.parents",
    groups: str = "parents",
) -> dict[str, int]:
    """Middle groups per split (train/validation/test) from counts or fractions, checked; an
    error names the config ``key`` and the ``groups`` in the dataset's own words."""
    values = [spec[name] for name in ROLES]
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        if sum(values) != n_parents:
            raise SplitError(
                f"{key}: train {values[0]} + validation {values[1]} + test {values[2]} "
                f"= {sum(values)}, but the image pool has {n_parents} {groups}"
            )
        return dict(zip(ROLES, values, strict=True))
    if any(isinstance(v, int) for v in values) or abs(sum(values) - 1) > FRACTION_TOLERANCE:
        raise SplitError(f"{key}: give three counts or three fractions summing to 1, got {values}")
    sizes = pd.Series(values, index=list(ROLES))
    counts = allocate(sizes, n_parents, np.random.default_rng(0)).to_dict()
    if min(counts.values()) < 1:
        raise SplitError(
            f"{key}: {n_parents} {groups} cannot be split as {values} (each split needs one)"
        )
    return {name: int(count) for name, count in counts.items()}


@dataclass(frozen=True)
class Partition:
    """The role of each middle group, the seed whose permutation made it, and how many
    permutations were tried (1: the first)."""

    role_of: dict[int, str]
    seed: int
    tries: int

    def counts(self, images: pd.DataFrame) -> dict[str, dict[str, int]]:
        """Middle groups, leaf classes and images per role of ``images`` (middle and leaf
        codes), for the split's report."""
        role = images["middle_code"].map(self.role_of)
        return {
            name: {
                "middles": int(images.loc[role == name, "middle_code"].nunique()),
                "leaves": int(images.loc[role == name, "leaf_code"].nunique()),
                "images": int((role == name).sum()),
            }
            for name in ROLES
        }


def middle_partition(
    images: pd.DataFrame,
    counts: dict[str, int],
    seed: int,
    leaves: dict[str, int] | None = None,
    key: str = "splits.leaves",
) -> Partition:
    """Whole middle groups of ``images`` to train, validation and test in ``counts``; with
    ``leaves``, the first seeded permutation (from ``seed``) whose groups hold exactly that
    many leaf classes per role, else an error naming ``key`` and both numbers."""
    per_middle = images.groupby("middle_code")["leaf_code"].nunique().sort_index()
    names = per_middle.index.to_numpy()
    sizes = per_middle.to_numpy()
    cut = np.cumsum([counts["train"], counts["validation"]])
    if leaves is not None:
        total = int(sizes.sum())
        if sum(leaves[name] for name in ROLES) != total:
            raise SplitError(
                f"{key}: train {leaves['train']} + validation {leaves['validation']} + test "
                f"{leaves['test']} = {sum(leaves.values())} leaf classes, but the image pool "
                f"has {total}"
            )
    for attempt in range(SEARCH_LIMIT if leaves is not None else 1):
        order = np.random.default_rng(seed + attempt).permutation(len(names))
        held = np.split(sizes[order], cut)
        found = dict(zip(ROLES, (int(part.sum()) for part in held), strict=True))
        if leaves is None or found == {name: int(leaves[name]) for name in ROLES}:
            chosen = np.split(names[order], cut)
            role_of = {
                int(code): name for name, part in zip(ROLES, chosen, strict=True) for code in part
            }
            return Partition(role_of, seed + attempt, attempt + 1)
    raise SplitError(
        f"{key}: no seeded partition of seeds {seed}..{seed + SEARCH_LIMIT - 1} puts "
        f"{leaves['train']} / {leaves['validation']} / {leaves['test']} leaf classes in the "
        f"{counts['train']} / {counts['validation']} / {counts['test']} parents; check the "
        "counts against the taxonomy, or drop splits.leaves"
    )
