"""Each configured dataset's kind and what it decides (hierbench.data.kinds)."""

from __future__ import annotations

import re

import pytest

from hierbench.data.kinds import (
    DatasetKindError,
    dataset_kind,
    datasets_of_kind,
    layout_folder,
    level_names,
    name_constraint,
    registered_aggregation,
)

CONFIG = {
    "datasets": {
        "cub": {"enabled": True},
        "nabirds": {"enabled": True},
        "cub_small": {"kind": "cub"},
        "beetles": {
            "kind": "table",
            "levels": ["species", "genus", "family"],
            "aggregation": "group_macro",
        },
    }
}


def test_the_bird_entries_are_their_own_kind_and_others_say_theirs():
    assert [dataset_kind(CONFIG, n) for n in CONFIG["datasets"]] == [
        "cub",
        "nabirds",
        "cub",
        "table",
    ]
    assert datasets_of_kind(CONFIG, "cub", sorted(CONFIG["datasets"])) == ["cub", "cub_small"]


def test_levels_aggregation_and_layout_follow_the_kind():
    assert level_names(CONFIG, "cub_small") == ("class", "genus", "family")
    assert level_names(CONFIG, "nabirds") == ("leaf", "parent", "supergroup")
    assert level_names(CONFIG, "beetles") == ("species", "genus", "family")
    assert registered_aggregation(CONFIG, "cub") == "query_micro"
    assert registered_aggregation(CONFIG, "nabirds") == "group_macro"
    assert registered_aggregation(CONFIG, "beetles") == "group_macro"
    assert layout_folder(CONFIG, "cub_small") == "CUB_200_2011"
    assert layout_folder(CONFIG, "beetles") == "collection"


def test_unknown_names_and_kinds_are_named_errors():
    with pytest.raises(DatasetKindError, match=r"dataset 'moths' is not in the config.*beetles"):
        dataset_kind(CONFIG, "moths")
    broken = {"datasets": {"moths": {"levels": ["a", "b", "c"]}}}
    with pytest.raises(DatasetKindError, match=r"'datasets\.moths\.kind' is missing"):
        dataset_kind(broken, "moths")


def test_a_kind_without_datasets_gets_a_constraint_that_matches_nothing():
    assert re.fullmatch(name_constraint(["cub", "cub_small"]), "cub_small")
    assert not re.fullmatch(name_constraint(["cub", "cub_small"]), "nabirds")
    assert not any(re.fullmatch(name_constraint([]), name) for name in ("", "cub", "x"))
