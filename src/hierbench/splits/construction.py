"""Split construction: who trains, who tunes, who is sealed test, and query/gallery draws.

A split set is one long table with a row per (split, role, image): for example
(``final``, ``train``), (``tuning``, ``query``), (``qg-42``, ``gallery``), (``outer-1``, ``test``).
Rows whose role belongs to the sealed test set carry ``sealed = True`` and are written only
into sealed artifacts. Every (split, role) is identified by the SHA256 of its canonical id
list (``hierbench.splits.sampling.split_identity``). Sampling is stratified
(``hierbench.splits.sampling``).
Each outer split's test side has its own query/gallery draws (``outer-1-qg-42``), in the
sealed draws' proportions and seeds.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import pandas as pd

from hierbench.relations import LABEL_COLUMNS, valid_query_counts
from hierbench.splits.draws import (  # noqa: F401  (re-exported: the splits' public API)
    QueryGallerySpec,
    query_gallery_draws,
    query_gallery_from,
    rows_of,
    sealed_query_gallery_rows,
)
from hierbench.splits.outer_splits import group_disjoint_outer, proportional_draws
from hierbench.splits.partition import Partition, middle_partition, parent_counts
from hierbench.splits.sampling import (  # noqa: F401  (re-exported: the splits' public API)
    FRACTION_TOLERANCE,
    SplitError,
    allocate,
    canonical_id_text,
    resolve_count,
    split_identity,
    stratified_pick,
)

SPLIT_COLUMNS = ("split", "role", "seed", "sealed", "image_id")
OFFICIAL, MIDDLE_DISJOINT = "official", "middle-disjoint"  # the split protocols


class SplitPolicy(Protocol):
    """What a dataset kind decides about its splits (a hierbench.data.kinds.DatasetKind)."""

    default_protocol: str  # the split protocol unless the config names one
    sampled_pool: bool  # the study draws its images from a configured pool
    own_collection: bool  # a collection of the user's own (its split column is optional)
    middle_split_key: str  # the config key of the middle groups' shares, e.g. splits.parents
    middle_groups: str  # what the middle groups are called in an error


# --------------------------------------------------------------------------- split sets


def _assemble(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate split rows in canonical order and check no image has two roles in a split."""
    table = pd.concat(parts, ignore_index=True).sort_values(["split", "role", "image_id"])
    duplicated = table.duplicated(["split", "image_id"])
    if duplicated.any():
        first = table[duplicated].iloc[0]
        raise SplitError(f"image {first.image_id} has two roles in split {first.split}")
    return table.reset_index(drop=True)


# ----------------------------------------------------------------------------- datasets


def with_labels(images: pd.DataFrame, taxonomy: pd.DataFrame) -> pd.DataFrame:
    """Attach leaf/middle/high codes to every image; an unknown class is an error naming it."""
    labels = taxonomy[["class_id", *LABEL_COLUMNS]]
    merged = images.merge(labels, on="class_id", how="left", validate="many_to_one")
    missing = merged.loc[merged["leaf_code"].isna(), "class_id"].unique()
    if len(missing):
        raise SplitError(f"images of class id(s) {sorted(missing)[:10]} have no taxonomy row")
    return merged.astype({column: "int64" for column in LABEL_COLUMNS})


def cub_split_table(
    images: pd.DataFrame,
    *,
    seed: int,
    validation_fraction: float,
    validation_query_fraction: float,
    query_gallery: QueryGallerySpec,
    outer_count: int,
    outer_seed: int,
    outer_test_fraction: float,
    outer_validation_fraction: float = 0.2,
) -> pd.DataFrame:
    """CUB: official train/test, a tuning validation split inside train, test perturbations.

    ``images`` has image_id, is_train and the label codes. Tuning trains on the official train
    images minus a class-stratified validation share, which it divides into query and gallery.
    """
    train, test = images[images["is_train"]], images[~images["is_train"]]
    if train.empty or test.empty:
        raise SplitError(
            f"CUB needs official train and test images (got {len(train)} / {len(test)})"
        )
    rng = np.random.default_rng(seed)
    n_val = resolve_count(validation_fraction, len(train), "splits.validation_fraction")
    val_index = stratified_pick(train, "leaf_code", n_val, rng, keep=1)
    validation = train.loc[val_index]
    parts = [
        rows_of("final", "train", None, False, train["image_id"]),
        rows_of("final", "test", None, True, test["image_id"]),
        rows_of("tuning", "train", seed, False, train.drop(val_index)["image_id"]),
        *query_gallery_from(validation, "tuning", validation_query_fraction, seed),
        *sealed_query_gallery_rows(test, query_gallery),
        *group_disjoint_outer(
            train,
            "middle_code",
            outer_count,
            outer_seed,
            outer_test_fraction,
            lambda n: proportional_draws(query_gallery, len(test), n),
            outer_validation_fraction,
            validation_query_fraction,
        ),
    ]
    return _assemble(parts)


def sample_pool(images: pd.DataFrame, size: int | None, seed: int) -> pd.DataFrame:
    """The protocol's image pool: every image, or a seeded sample stratified by class.

    Drawn from the image table alone (a leaf is a class), so that the pool, and the features
    computed for it, do not depend on the taxonomy.
    """
    if size is None:
        return images
    if size > len(images):
        raise SplitError(f"image_pool.size {size} exceeds the {len(images)} images available")
    return images.loc[stratified_pick(images, "class_id", size, np.random.default_rng(seed))]


def split_protocol(kind: SplitPolicy, splits: dict[str, Any]) -> str:
    """The split protocol of a dataset: ``official`` (the images' own train/test flags, CUB's
    default) or ``middle-disjoint`` (whole middle groups, the default of the others)."""
    return splits.get("protocol", kind.default_protocol)


def study_pool(kind: SplitPolicy, images: pd.DataFrame, config: dict[str, Any]) -> pd.DataFrame:
    """Every image a dataset's study may use (``config``: its ``image_pool`` and ``splits``
    blocks), known before any taxonomy: NABirds' sampled pool, otherwise every image."""
    if kind.sampled_pool:
        pool = config["image_pool"]
        return sample_pool(images, pool["size"], pool["seed"])
    return images


def development_candidates(
    kind: SplitPolicy, images: pd.DataFrame, config: dict[str, Any]
) -> pd.DataFrame:
    """The pool's images that may become development images whatever the taxonomy: the
    train-flagged ones under the official protocol, the whole pool when whole middle groups
    are held out (which groups, only the taxonomy says)."""
    pool = study_pool(kind, images, config)
    if split_protocol(kind, config["splits"]) == OFFICIAL:
        return pool[pool["is_train"]]
    return pool


def nabirds_split_table(
    images: pd.DataFrame,
    *,
    seed: int,
    parents: dict[str, int | float],
    validation_query_fraction: float,
    query_gallery: QueryGallerySpec,
    outer_count: int,
    outer_seed: int,
    outer_test_fraction: float,
    groups_key: tuple[str, str] = ("splits.parents", "parents"),
    leaves: dict[str, int] | None = None,
    outer_validation_fraction: float = 0.2,
) -> pd.DataFrame:
    """NABirds Parent-disjoint: whole parents to train / validation / test (official flags
    unused), the partition of :func:`hierbench.splits.partition.middle_partition` (``leaves``:
    its target leaf counts, if any). ``groups_key``: the config key and the name of the groups,
    for an error."""
    counts = parent_counts(parents, images["middle_code"].nunique(), *groups_key)
    partition = middle_partition(images, counts, seed, leaves)
    return middle_disjoint_table(
        images,
        partition,
        seed=seed,
        validation_query_fraction=validation_query_fraction,
        query_gallery=query_gallery,
        outer_count=outer_count,
        outer_seed=outer_seed,
        outer_test_fraction=outer_test_fraction,
        outer_validation_fraction=outer_validation_fraction,
    )


def middle_disjoint_table(
    images: pd.DataFrame,
    partition: Partition,
    *,
    seed: int,
    validation_query_fraction: float,
    query_gallery: QueryGallerySpec,
    outer_count: int,
    outer_seed: int,
    outer_test_fraction: float,
    outer_validation_fraction: float = 0.2,
) -> pd.DataFrame:
    """The split table of a middle-group ``partition``. The development data is train +
    validation; tuning trains on the train parents and scores on the validation parents'
    images divided into query and gallery."""
    role = images["middle_code"].map(partition.role_of)
    train, validation, test = (images[role == name] for name in ("train", "validation", "test"))
    dev = images[role != "test"]
    parts = [
        rows_of("final", "train", seed, False, dev["image_id"]),
        rows_of("final", "test", seed, True, test["image_id"]),
        rows_of("tuning", "train", seed, False, train["image_id"]),
        *query_gallery_from(validation, "tuning", validation_query_fraction, seed),
        *sealed_query_gallery_rows(test, query_gallery),
        *group_disjoint_outer(
            dev,
            "middle_code",
            outer_count,
            outer_seed,
            outer_test_fraction,
            lambda n: proportional_draws(query_gallery, len(test), n),
            outer_validation_fraction,
            validation_query_fraction,
        ),
    ]
    return _assemble(parts)


def make_split_table(
    kind: SplitPolicy, images: pd.DataFrame, config: dict[str, Any]
) -> tuple[pd.DataFrame, dict[str, Any] | None]:
    """The full split table of a dataset of ``kind`` from its labelled images and config block,
    and, for a middle-disjoint protocol, the partition's report (its seed, how many seeded
    permutations were tried, middle groups, leaves and images per role).

    CUB and a table dataset with protocol ``official`` split by the images' train/test flag
    (validation drawn inside train); NABirds and protocol ``middle-disjoint`` assign whole
    middle groups to train, validation and test.
    """
    splits = config["splits"]
    qg = splits["query_gallery"]
    common = {
        "seed": splits["seed"],
        "validation_query_fraction": splits["validation_query_fraction"],
        "query_gallery": QueryGallerySpec(qg["seeds"], qg["queries"], qg["gallery"]),
        "outer_count": splits["outer"]["count"],
        "outer_seed": splits["outer"]["seed"],
        "outer_test_fraction": splits["outer"]["test_fraction"],
        "outer_validation_fraction": splits["outer"]["validation_fraction"],
    }
    protocol = split_protocol(kind, splits)
    if kind.own_collection and protocol == OFFICIAL and not images["is_train"].any():
        raise SplitError(
            "split protocol 'official' needs images.csv's split column (a kind of your own: its "
            "images' split) with train images; add it, or set splits.protocol to "
            "'middle-disjoint'"
        )
    if protocol == OFFICIAL:
        table = cub_split_table(images, validation_fraction=splits["validation_fraction"], **common)
        return table, None
    images = study_pool(kind, images, config)
    key, groups = kind.middle_split_key, kind.middle_groups
    counts = parent_counts(splits[key.split(".")[1]], images["middle_code"].nunique(), key, groups)
    partition = middle_partition(images, counts, splits["seed"], splits.get("leaves"))
    report = {"seed": partition.seed, "tries": partition.tries, **partition.counts(images)}
    return middle_disjoint_table(images, partition, **common), report


# ----------------------------------------------------------------------------- manifest


def split_manifest(table: pd.DataFrame, images: pd.DataFrame) -> pd.DataFrame:
    """One row per (split, role): seed, count, SHA256, group counts, valid queries per level."""
    labels = images.set_index("image_id")[list(LABEL_COLUMNS)]
    rows = []
    for (split, role), members in table.groupby(["split", "role"], sort=True):
        codes = labels.loc[members["image_id"]]
        row = {
            "split": split,
            "role": role,
            "seed": members["seed"].iloc[0],
            "sealed": bool(members["sealed"].iloc[0]),
            "count": len(members),
            "sha256": split_identity(members["image_id"]),
            **{f"n_{c.removesuffix('_code')}": int(codes[c].nunique()) for c in LABEL_COLUMNS},
        }
        if role == "query":
            gallery_ids = table.loc[
                (table["split"] == split) & (table["role"] == "gallery"), "image_id"
            ]
            valid = valid_query_counts(codes.to_numpy(), labels.loc[gallery_ids].to_numpy())
            row |= {f"valid_{level}": count for level, count in valid.items()}
        rows.append(row)
    manifest = pd.DataFrame(rows)
    for level in ("leaf", "middle", "high"):
        column = f"valid_{level}"
        manifest[column] = pd.array(
            manifest.get(column, pd.Series([None] * len(manifest))), dtype="Int64"
        )
    return manifest


def role_ids(table: pd.DataFrame, split: str, role: str) -> list[str]:
    """Sorted image ids of one (split, role); an absent role is an error listing those present."""
    ids = table.loc[(table["split"] == split) & (table["role"] == role), "image_id"]
    if ids.empty:
        present = sorted(set(zip(table["split"], table["role"], strict=True)))
        raise SplitError(f"split {split!r} has no role {role!r}; present: {present}")
    return sorted(ids.astype(str))


def rows_for_ids(image_ids: pd.Series, wanted: list[str], what: str) -> np.ndarray:
    """Positions of ``wanted`` ids in ``image_ids``; ids not present are an error naming them."""
    positions = pd.Index(image_ids.astype(str)).get_indexer(wanted)
    missing = [wanted[i] for i in np.flatnonzero(positions < 0)]
    if missing:
        raise SplitError(f"{what}: {len(missing)} image id(s) have no row, first {missing[:3]}")
    return positions
