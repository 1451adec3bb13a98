"""Warnings before a run (hierbench.data.quality): what makes a table dataset's queries
invalid or weak, in the user's level names, from a small crafted collection."""

from __future__ import annotations

from pathlib import Path

import pytest
from table_collections import FILES, IMAGES, TAXONOMY, table_dataset_folder

from hierbench.config import load_config
from hierbench.data.quality import (
    DatasetCheckError,
    check_table_splits,
    dataset_warnings,
    listed,
    query_count,
    unreadable_images,
)
from hierbench.data.table_reader import read_table_dataset

LEVELS = ("species", "genus", "family")


def _warnings(
    tmp_path: Path, taxonomy: str = TAXONOMY, images: str = IMAGES, files: tuple = FILES
) -> list[str]:
    root = table_dataset_folder(tmp_path / "mine", images=images, taxonomy=taxonomy, files=files)
    return dataset_warnings(read_table_dataset(root), LEVELS, 0.5)


def test_a_family_with_one_genus_is_named_with_the_users_level_names(tmp_path: Path):
    taxonomy = TAXONOMY + "owl,owls,raptors\n"
    images = IMAGES + "owl.jpg,owl,test,0,0,1,1\n"
    warnings = _warnings(tmp_path, taxonomy=taxonomy, images=images, files=(*FILES, "owl.jpg"))
    lonely = [w for w in warnings if "hold a single genus" in w]
    assert lonely == [
        "1 family group(s) hold a single genus ('raptors'): their queries have no strict "
        "positive at the family (high) level and are not scored there"
    ]


def test_a_genus_with_one_species_and_a_scarce_species_are_named(tmp_path: Path):
    warnings = _warnings(tmp_path)
    assert any(
        w.startswith("3 genus group(s) hold a single species ('gulls', 'terns', 'wrens')")
        for w in warnings
    )
    none = next(w for w in warnings if "no test image" in w)
    assert none.startswith("3 leaves (species) have no test image ('robin', 'tern', 'wren')")
    assert "zero of their images on the test side" in none
    single = next(w for w in warnings if "a single test image" in w)
    assert single.startswith("2 leaves (species) have a single test image ('blackbird', 'gull')")


def test_a_level_with_few_valid_queries_per_draw_is_weak(tmp_path: Path):
    weak = [w for w in _warnings(tmp_path) if "valid queries" in w]
    assert len(weak) == 3 and "at the species level" in weak[0]


def test_a_healthy_collection_gets_no_warning(tmp_path: Path):
    taxonomy = "class,middle,high\n" + "".join(
        f"c{c},m{c // 2},h{c // 4}\n" for c in range(8)
    )  # two classes per genus, two genera per family
    rows = [f"i{c}_{k}.jpg,c{c},test" for c in range(8) for k in range(6)]
    images = "path,class,split\n" + "\n".join(rows) + "\n"
    files = tuple(row.split(",")[0] for row in rows)
    root = table_dataset_folder(tmp_path / "ok", images=images, taxonomy=taxonomy, files=files)
    assert dataset_warnings(read_table_dataset(root), LEVELS, 0.5) == []


def test_a_query_draw_is_a_fraction_or_a_count():
    assert query_count(0.2, 50) == 10 and query_count(30, 12) == 12


def test_deep_checking_names_every_image_that_cannot_be_decoded(tmp_path: Path):
    root = table_dataset_folder(tmp_path / "mine")  # its image files are one byte each
    problems = unreadable_images(root, ["gull/1.jpg", "z.jpg"])
    assert len(problems) == 2 and problems[0].startswith(f"{root / 'gull/1.jpg'}: cannot be read")


def test_a_long_list_of_problems_shows_the_first_twenty_and_counts_the_rest():
    problems = [f"image {n}" for n in range(23)]
    assert listed(problems) == [*problems[:20], "... and 3 more"]
    assert listed(problems[:20]) == problems[:20]


def test_middle_groups_that_cannot_be_split_stop_the_plan_naming_the_datasets_key(tmp_path: Path):
    root = table_dataset_folder(tmp_path / "beetles")  # 4 middle groups hold images
    config = load_config_text(tmp_path, root, "{train: 3, validation: 1, test: 1}")
    with pytest.raises(DatasetCheckError) as error:
        check_table_splits(config, ["beetles"])
    assert str(error.value) == (
        "datasets.beetles.splits.middles: train 3 + validation 1 + test 1 = 5, but the image "
        "pool has 4 middle groups"
    )
    check_table_splits(
        load_config_text(tmp_path, root, "{train: 2, validation: 1, test: 1}"), ["beetles"]
    )


def load_config_text(tmp_path: Path, root: Path, middles: str) -> dict:
    """A validated config whose table dataset ``beetles`` splits its middles as given."""
    path = tmp_path / "beetles.yaml"
    path.write_text(
        "datasets:\n  cub: {enabled: false}\n  nabirds: {enabled: false}\n  beetles:\n"
        f"    kind: table\n    source: folder\n    root: {root}\n"
        "    levels: [species, genus, family]\n"
        f"    splits: {{protocol: middle-disjoint, middles: {middles}}}\n"
    )
    return load_config(path)
