"""Split construction: disjoint roles, exact counts, seeded identity, sealing, errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hierbench.data.kinds import BUILTIN_KINDS as KINDS
from hierbench.relations import valid_query_counts
from hierbench.splits.construction import (
    QueryGallerySpec,
    SplitError,
    allocate,
    canonical_id_text,
    cub_split_table,
    development_candidates,
    nabirds_split_table,
    parent_counts,
    proportional_draws,
    resolve_count,
    sample_pool,
    sealed_query_gallery_rows,
    split_identity,
    split_manifest,
    study_pool,
)

CUB_QG = QueryGallerySpec(seeds=(42, 2024, 3407), queries=870, gallery=4924)


def _images(counts_per_leaf: dict[int, int], train_share: float = 0.5) -> pd.DataFrame:
    """Synthetic images: leaf l belongs to middle l // 3 and high l // 9."""
    rows = []
    for leaf, count in sorted(counts_per_leaf.items()):
        for k in range(count):
            rows.append(
                (f"{leaf:04d}-{k:03d}", leaf, leaf // 3, leaf // 9, k < count * train_share)
            )
    frame = pd.DataFrame(
        rows, columns=["image_id", "leaf_code", "middle_code", "high_code", "is_train"]
    )
    return frame


def _cub_like() -> pd.DataFrame:
    """200 classes, 5,994 official train and 5,794 test images, as in CUB-200-2011."""
    rows = []
    for leaf in range(200):
        n_train = 30 if leaf < 194 else 29  # 194*30 + 6*29 = 5994
        n_test = 29 if leaf < 194 else 28
        for k in range(n_train + n_test):
            rows.append((f"{leaf:03d}{k:03d}", leaf, leaf // 2, leaf // 6, k < n_train))
    frame = pd.DataFrame(
        rows, columns=["image_id", "leaf_code", "middle_code", "high_code", "is_train"]
    )
    return frame


def _cub_table(frame: pd.DataFrame, qg: QueryGallerySpec = CUB_QG) -> pd.DataFrame:
    return cub_split_table(
        frame,
        seed=42,
        validation_fraction=0.2,
        validation_query_fraction=0.2,
        query_gallery=qg,
        outer_count=3,
        outer_seed=42,
        outer_test_fraction=0.2,
    )


def _roles(table: pd.DataFrame, split: str) -> dict[str, set[str]]:
    part = table[table["split"] == split]
    return {role: set(ids) for role, ids in part.groupby("role")["image_id"]}


def test_identity_is_order_and_encoding_independent(tmp_path):
    ids = ["b", "a", "c"]
    assert canonical_id_text(ids) == "a\nb\nc\n"
    assert split_identity(ids) == split_identity(sorted(ids))
    frame = pd.DataFrame({"image_id": ids})
    frame.to_csv(tmp_path / "s.csv", index=False)
    frame.to_parquet(tmp_path / "s.parquet")
    from_csv = pd.read_csv(tmp_path / "s.csv", dtype=str)["image_id"]
    from_parquet = pd.read_parquet(tmp_path / "s.parquet")["image_id"]
    assert split_identity(from_csv) == split_identity(from_parquet) == split_identity(ids)


def test_cub_counts_match_the_paper():
    frame = _cub_like()
    assert (frame["is_train"].sum(), (~frame["is_train"]).sum()) == (5994, 5794)
    table = _cub_table(frame)
    manifest = split_manifest(table, frame).set_index(["split", "role"])
    assert manifest.loc[("final", "train"), "count"] == 5994
    assert manifest.loc[("final", "test"), "count"] == 5794
    for seed in (42, 2024, 3407):
        assert manifest.loc[(f"qg-{seed}", "query"), "count"] == 870
        assert manifest.loc[(f"qg-{seed}", "gallery"), "count"] == 4924
    tuning = _roles(table, "tuning")
    assert len(tuning["query"]) + len(tuning["gallery"]) == round(0.2 * 5994)


def test_no_image_in_two_roles_and_tuning_inside_train():
    frame = _cub_like()
    table = _cub_table(frame)
    assert not table.duplicated(["split", "image_id"]).any()
    final = _roles(table, "final")
    assert not final["train"] & final["test"]
    for split, roles in ((s, _roles(table, s)) for s in table["split"].unique()):
        members = set().union(*roles.values())
        if split == "tuning" or split.startswith("outer"):
            assert members <= final["train"], split
        if split.startswith("qg-"):
            assert members <= final["test"], split


def test_only_test_side_roles_are_sealed():
    table = _cub_table(_cub_like())
    sealed = table[table["sealed"]]
    assert set(sealed["split"]) == {"final", "qg-42", "qg-2024", "qg-3407"}
    assert set(sealed.loc[sealed["split"] == "final", "role"]) == {"test"}
    test_ids = set(table.loc[(table["split"] == "final") & (table["role"] == "test"), "image_id"])
    assert not set(table.loc[~table["sealed"], "image_id"]) & test_ids


def test_same_seed_same_identity_other_seed_other_identity():
    frame = _cub_like()
    one = split_manifest(_cub_table(frame), frame).set_index(["split", "role"])["sha256"]
    two = split_manifest(_cub_table(frame), frame).set_index(["split", "role"])["sha256"]
    pd.testing.assert_series_equal(one, two)
    assert one[("qg-42", "query")] != one[("qg-2024", "query")]


def test_queries_are_stratified_by_class_and_leave_a_gallery_image():
    frame = _cub_like()
    table = _cub_table(frame)
    queries = table[(table["split"] == "qg-42") & (table["role"] == "query")]
    per_class = frame.set_index("image_id").loc[queries["image_id"], "leaf_code"].value_counts()
    assert per_class.max() - per_class.min() <= 1
    assert per_class.max() < 28


def test_manifest_valid_counts_match_brute_force():
    frame = _cub_like()
    table = _cub_table(frame)
    manifest = split_manifest(table, frame).set_index(["split", "role"])
    labels = frame.set_index("image_id")[["leaf_code", "middle_code", "high_code"]]
    roles = _roles(table, "qg-2024")
    expected = valid_query_counts(
        labels.loc[sorted(roles["query"])].to_numpy(),
        labels.loc[sorted(roles["gallery"])].to_numpy(),
    )
    row = manifest.loc[("qg-2024", "query")]
    assert {level: row[f"valid_{level}"] for level in expected} == expected
    assert pd.isna(manifest.loc[("final", "train"), "valid_leaf"])


def _nabirds_like(seed: int = 0) -> pd.DataFrame:
    """404 parents in 22 supergroups with 555 leaves and ~60 images per parent."""
    rng = np.random.default_rng(seed)
    rows, leaf = [], 0
    for parent in range(404):
        for _ in range(1 + (parent < 151)):
            for k in range(int(rng.integers(20, 40))):
                rows.append((f"{leaf:04d}-{k:02d}", leaf, parent, parent % 22, bool(k % 2)))
            leaf += 1
    return pd.DataFrame(
        rows, columns=["image_id", "leaf_code", "middle_code", "high_code", "is_train"]
    )


def _nabirds_table(frame: pd.DataFrame, parents=None) -> pd.DataFrame:
    return nabirds_split_table(
        frame,
        seed=42,
        parents=parents or {"train": 242, "validation": 81, "test": 81},
        validation_query_fraction=0.2,
        query_gallery=QueryGallerySpec((42, 2024, 3407), 0.2, 0.8),
        outer_count=3,
        outer_seed=42,
        outer_test_fraction=0.2,
    )


def test_nabirds_parent_disjoint_counts_and_no_leaf_or_parent_in_two_splits():
    frame = _nabirds_like()
    assert frame["leaf_code"].nunique() == 555
    table = _nabirds_table(frame)
    labels = frame.set_index("image_id")
    tuning, final = _roles(table, "tuning"), _roles(table, "final")
    partitions = {
        "train": tuning["train"],
        "validation": tuning["query"] | tuning["gallery"],
        "test": final["test"],
    }
    parents = {k: set(labels.loc[sorted(v), "middle_code"]) for k, v in partitions.items()}
    leaves = {k: set(labels.loc[sorted(v), "leaf_code"]) for k, v in partitions.items()}
    assert {k: len(v) for k, v in parents.items()} == {"train": 242, "validation": 81, "test": 81}
    for a, b in (("train", "validation"), ("train", "test"), ("validation", "test")):
        assert not parents[a] & parents[b] and not leaves[a] & leaves[b]
    assert final["train"] == partitions["train"] | partitions["validation"]


def test_query_gallery_counts_exact_for_the_nabirds_protocol():
    frame = _nabirds_like().iloc[:5017]
    rows = pd.concat(sealed_query_gallery_rows(frame, QueryGallerySpec((42,), 1003, 4014)))
    assert rows.groupby("role").size().to_dict() == {"gallery": 4014, "query": 1003}


def test_parent_counts_that_do_not_add_up_are_an_error_with_the_numbers():
    with pytest.raises(
        SplitError, match=r"train 242 \+ validation 81 \+ test 81 = 404, but the image pool has 400"
    ):
        parent_counts({"train": 242, "validation": 81, "test": 81}, 400)
    with pytest.raises(SplitError, match="fractions summing to 1"):
        parent_counts({"train": 0.5, "validation": 0.2, "test": 0.2}, 400)
    assert parent_counts({"train": 0.6, "validation": 0.2, "test": 0.2}, 404) == {
        "train": 242,
        "validation": 81,
        "test": 81,
    }


def test_more_queries_than_test_images_is_an_error_with_the_numbers():
    frame = _cub_like()
    with pytest.raises(SplitError, match="asked for 6000 but only 5794"):
        _cub_table(frame, QueryGallerySpec((42,), 6000, 10))
    with pytest.raises(SplitError, match="870 queries \\+ 4925 gallery = 5795 exceeds the 5794"):
        _cub_table(frame, QueryGallerySpec((42,), 870, 4925))


def test_resolve_count_rejects_bad_specs():
    assert resolve_count(0.15, 5794, "q") == 869
    with pytest.raises(SplitError, match="not a positive"):
        resolve_count(0, 10, "q")


def test_allocate_is_proportional_capped_and_exact():
    sizes = pd.Series([10, 5, 1], index=["a", "b", "c"])
    share = allocate(sizes, 8, np.random.default_rng(0), sizes - 1)
    assert share.sum() == 8 and share["c"] == 0 and (share <= sizes - 1).all()


def test_pool_sample_is_stratified_by_class_and_seeded():
    frame = _images({leaf: 20 for leaf in range(10)}).assign(class_id=lambda f: f["leaf_code"] + 1)
    pool = sample_pool(frame, 100, seed=3)
    assert len(pool) == 100 and pool["class_id"].value_counts().eq(10).all()
    assert pool["image_id"].tolist() == sample_pool(frame, 100, seed=3)["image_id"].tolist()
    with pytest.raises(SplitError, match="exceeds the 200 images"):
        sample_pool(frame, 201, seed=3)


def test_the_pool_and_the_development_candidates_need_no_taxonomy():
    """Drawn from the image table alone: without a single label column they are the same."""
    frame = _images({leaf: 8 for leaf in range(6)}).assign(class_id=lambda f: f["leaf_code"] + 1)
    unlabelled = frame.drop(columns=["leaf_code", "middle_code", "high_code"])
    pooled = {"image_pool": {"size": 24, "seed": 1}, "splits": {}}
    for kind, config in ((KINDS["nabirds"], pooled), (KINDS["cub"], {"splits": {}})):
        for choose in (study_pool, development_candidates):
            assert choose(kind, frame, config)["image_id"].tolist() == (
                choose(kind, unlabelled, config)["image_id"].tolist()
            )
    assert len(study_pool(KINDS["nabirds"], frame, pooled)) == 24
    assert development_candidates(KINDS["cub"], frame, {"splits": {}})["is_train"].all()
    middle_disjoint = {"splits": {"protocol": "middle-disjoint"}}
    assert len(development_candidates(KINDS["table"], frame, middle_disjoint)) == len(frame)
    assert (
        len(development_candidates(KINDS["table"], frame, {"splits": {"protocol": "official"}}))
        == 24
    )


def assert_outer_splits_disjoint(table: pd.DataFrame, labels: pd.DataFrame, count: int) -> None:
    """Each outer split's train and test share no middle group and no leaf; its draws lie in its
    test side, query and gallery apart; nothing of it is sealed. (Used on artifacts too.)"""
    labels = labels.set_index("image_id")
    for k in range(1, count + 1):
        roles = _roles(table, f"outer-{k}")
        assert roles["train"] and roles["test"] and not roles["train"] & roles["test"]
        for column in ("middle_code", "leaf_code"):
            train = set(labels.loc[sorted(roles["train"]), column])
            test = set(labels.loc[sorted(roles["test"]), column])
            assert not train & test, (k, column, sorted(train & test)[:3])
        draws = sorted(s for s in table["split"].unique() if s.startswith(f"outer-{k}-qg-"))
        assert draws, f"outer-{k} has no query/gallery draws"
        for draw in draws:
            drawn = _roles(table, draw)
            assert drawn["query"] and drawn["gallery"] and not drawn["query"] & drawn["gallery"]
            assert drawn["query"] | drawn["gallery"] <= roles["test"], draw
        # its validation side: whole middle groups of its train side, none in its test side
        tuning = _roles(table, f"outer-{k}-tuning")
        held = tuning["query"] | tuning["gallery"]
        assert held and tuning["train"] and not held & tuning["train"]
        assert tuning["train"] | held == roles["train"]
        middles = {
            name: set(labels.loc[sorted(ids), "middle_code"])
            for name, ids in (("train", tuning["train"]), ("validation", held))
        }
        assert not middles["train"] & middles["validation"]
    assert not table.loc[table["split"].str.startswith("outer"), "sealed"].any()


def test_outer_splits_hold_out_whole_genera_with_the_sealed_draws_proportions():
    frame = _cub_like()
    table = _cub_table(frame)
    assert_outer_splits_disjoint(table, frame, 3)
    manifest = split_manifest(table, frame).set_index(["split", "role"])["count"]
    for k in (1, 2, 3):
        n_test = manifest[(f"outer-{k}", "test")]
        for seed in (42, 2024, 3407):
            queries = manifest[(f"outer-{k}-qg-{seed}", "query")]
            gallery = manifest[(f"outer-{k}-qg-{seed}", "gallery")]
            assert queries == round(870 / 5794 * n_test)
            assert queries + gallery == n_test  # 870 + 4924 is the whole sealed test


def test_nabirds_outer_splits_hold_out_whole_parents():
    frame = _nabirds_like()
    table = _nabirds_table(frame)
    assert_outer_splits_disjoint(table, frame, 3)
    manifest = split_manifest(table, frame).set_index(["split", "role"])["count"]
    n_test = manifest[("outer-1", "test")]
    assert manifest[("outer-1-qg-42", "query")] == round(0.2 * n_test)


def test_proportional_draws_never_exceed_the_test_side():
    spec = proportional_draws(QueryGallerySpec((1,), 870, 4924), 5794, 7)
    assert spec.queries + spec.gallery <= 7 and spec.queries >= 1 and spec.gallery >= 1
    fractions = proportional_draws(QueryGallerySpec((1,), 0.5, 0.5), 10, 3)
    assert (fractions.queries, fractions.gallery) == (2, 1)


def _table_block(protocol: str) -> dict:
    """A table dataset's resolved splits block (the schema's defaults) with a protocol."""
    return {
        "splits": {
            "protocol": protocol,
            "seed": 42,
            "validation_fraction": 0.2,
            "middles": {"train": 0.6, "validation": 0.2, "test": 0.2},
            "validation_query_fraction": 0.2,
            "query_gallery": {"seeds": [42, 2024, 3407], "queries": 0.2, "gallery": 0.8},
            "outer": {"count": 2, "seed": 42, "test_fraction": 0.2, "validation_fraction": 0.2},
        }
    }


def test_a_table_dataset_splits_by_its_protocol():
    from hierbench.splits.construction import make_split_table

    frame = _nabirds_like()
    disjoint, partition = make_split_table(KINDS["table"], frame, _table_block("middle-disjoint"))
    assert partition["tries"] == 1 and partition["test"]["middles"] == round(0.2 * 404)
    tuning, final = _roles(disjoint, "tuning"), _roles(disjoint, "final")
    labels = frame.set_index("image_id")
    middles = {
        name: set(labels.loc[sorted(ids), "middle_code"])
        for name, ids in (("train", tuning["train"]), ("test", final["test"]))
    }
    assert len(middles["test"]) == round(0.2 * 404) and not middles["train"] & middles["test"]
    official, none = make_split_table(KINDS["table"], frame, _table_block("official"))
    assert none is None
    test_ids = _roles(official, "final")["test"]
    assert test_ids == set(frame.loc[~frame["is_train"], "image_id"])


def test_the_official_protocol_needs_the_split_column():
    from hierbench.splits.construction import make_split_table
    from hierbench.splits.sampling import SplitError

    frame = _nabirds_like().assign(is_train=False)  # images.csv without a split column
    with pytest.raises(SplitError, match=r"needs images\.csv's split column"):
        make_split_table(KINDS["table"], frame, _table_block("official"))
