"""NABirds' own tree (classes.txt + hierarchy.txt) as a Leaf / Parent / Supergroup table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .classlists import read_pairs
from .errors import TaxonomyError
from .levels import add_level_codes


def nabirds_taxonomy(
    classes_path: str | Path, hierarchy_path: str | Path, root_id: int = 0
) -> pd.DataFrame:
    """Leaf / Parent / Supergroup table from NABirds' classes.txt and hierarchy.txt.

    Leaves are nodes without children, middle is a leaf's parent, high is its ancestor
    directly under the root. Output is sorted by class_id (the leaf's node id).
    """
    pairs = read_pairs(Path(classes_path), r".+")
    names = {line.id: line.name for line in pairs}
    if len(names) != len(pairs):
        raise TaxonomyError(f"{classes_path}: duplicated node ids")
    if root_id not in names:
        raise TaxonomyError(f"{classes_path}: root node {root_id} is missing")
    parent = _read_parents(Path(hierarchy_path), names, root_id)
    high = _high_ancestors(parent, names, root_id, hierarchy_path)
    has_children = set(parent.values())
    rows = []
    for node in sorted(n for n in names if n not in has_children and n != root_id):
        mid = parent[node]
        if mid == root_id or high[node] == mid:
            raise TaxonomyError(
                f"{hierarchy_path}: leaf {node} ({names[node]!r}) sits less "
                "than two levels below the root; it has no parent group"
            )
        rows.append(
            (node, names[node], names[node], names[mid], names[high[node]], mid, high[node])
        )
    frame = pd.DataFrame(
        rows, columns=["class_id", "class_name", "leaf", "middle", "high", "middle_id", "high_id"]
    )
    for level in ("middle", "high"):
        if frame.groupby(level)[f"{level}_id"].nunique().max() > 1:
            raise TaxonomyError(
                f"{classes_path}: two {level} nodes share a name; codes "
                "are built from names, so names must be unique per level"
            )
    return add_level_codes(frame)


def _read_parents(path: Path, names: dict[int, str], root_id: int) -> dict[int, int]:
    """Parse 'child parent' lines; unknown ids, double parents and a parented root fail."""
    parent: dict[int, int] = {}
    for number, child, name in read_pairs(path, r"\d+"):
        par = int(name)
        for node in (child, par):
            if node not in names:
                raise TaxonomyError(f"{path}:{number}: node {node} is not in classes.txt")
        if child in parent or child == root_id:
            raise TaxonomyError(
                f"{path}:{number}: node {child} given a second parent (or the root given a parent)"
            )
        parent[child] = par
    return parent


def _high_ancestors(
    parent: dict[int, int], names: dict[int, str], root_id: int, path: str | Path
) -> dict[int, int]:
    """For each node, its ancestor directly under the root; orphans and cycles fail."""
    orphans = sorted(n for n in names if n != root_id and n not in parent)
    if orphans:
        raise TaxonomyError(
            f"{path}: node(s) with no parent, hence no path to root "
            f"{root_id}: {[(n, names[n]) for n in orphans[:10]]}"
        )
    high: dict[int, int] = {}
    for start in sorted(parent):
        chain, node = [], start
        while node not in high and node != root_id and parent[node] != root_id:
            if node in chain:
                cycle = chain[chain.index(node) :]
                raise TaxonomyError(f"{path}: cycle through nodes {[(n, names[n]) for n in cycle]}")
            chain.append(node)
            node = parent[node]
        top = high.get(node, node)
        for member in chain:
            high[member] = top
        high[node] = top
    return high
