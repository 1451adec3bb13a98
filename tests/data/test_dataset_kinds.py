"""Each configured dataset's kind and what it decides (hierbench.data.kinds)."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from hierbench.config import SCHEMA_PATH, ConfigError, load_yaml, validate_config
from hierbench.data.fingerprint import part_files
from hierbench.data.kinds import (
    DatasetKindError,
    dataset_kind,
    datasets_of_kind,
    kind_of,
    kind_sources,
    layout_folder,
    level_names,
    name_constraint,
    registered_aggregation,
)
from hierbench.data.table_csv import TableDatasetError
from hierbench.plugins import PluginError

REPO = Path(__file__).resolve().parents[2]

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


# A dataset kind of one's own: the example (examples/lineage.py), named under plugins.datasets.
LINEAGE = {
    "plugins": {"datasets": {"lineage": "examples/lineage.py:KIND"}},
    "datasets": {
        "owls": {
            "kind": "lineage",
            "source": "folder",
            "levels": ["species", "genus", "family"],
            "aggregation": "query_micro",
        }
    },
}
LABELS = """file,species,genus,family,split
a/1.jpg,wren,wrens,songbirds,train
a/2.jpg,robin,thrushes,songbirds,test
b/3.jpg,gull,gulls,seabirds,train
b/4.jpg,tern,terns,seabirds,test
"""


def _lineage(tmp_path, labels: str = LABELS) -> tuple[dict, Path]:
    """The lineage config with its folder (labels.csv and stand-in images) under tmp_path."""
    root = tmp_path / "owls"
    root.mkdir(parents=True)
    (root / "labels.csv").write_text(labels)
    for line in labels.splitlines()[1:]:
        (root / line.split(",")[0]).parent.mkdir(exist_ok=True)
        (root / line.split(",")[0]).write_bytes(b"x")
    config = copy.deepcopy(LINEAGE)
    config["datasets"]["owls"]["root"] = str(root)
    return config, root


def test_a_kind_of_ones_own_is_read_into_the_table_layouts_checked_tables(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    config, root = _lineage(tmp_path)
    kind = kind_of(config, "owls")
    assert (kind.name, kind.own_collection, kind.source) == (
        "lineage",
        True,
        (REPO / "examples/lineage.py").resolve(),
    )
    assert level_names(config, "owls") == ("species", "genus", "family")
    assert part_files(root, kind, "layout") == part_files(root, kind, "taxonomy") == ["labels.csv"]
    assert part_files(root, kind, "images") == ["a/1.jpg", "a/2.jpg", "b/3.jpg", "b/4.jpg"]
    images = kind.read_images(root)
    assert images["is_train"].tolist() == [True, False, True, False]
    taxonomy = kind.read_dataset(root).taxonomy
    assert dict(zip(taxonomy["class_name"], taxonomy["middle"], strict=True))["robin"] == "thrushes"
    assert kind_sources(config) == {"lineage": kind.source}


def test_a_kind_of_ones_owns_flaws_name_its_file_and_line(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    config, root = _lineage(
        tmp_path,
        LABELS.replace("b/4.jpg,tern,terns,seabirds,test", "b/4.jpg,tern,terns,seabirds,dev"),
    )
    with pytest.raises(TableDatasetError, match=r"owls/labels\.csv:5: split 'dev' is neither"):
        kind_of(config, "owls").read_images(root)
    moved = LABELS.replace("robin,thrushes", "robin,gulls")
    config, root = _lineage(tmp_path / "again", moved)
    with pytest.raises(
        TableDatasetError,
        match=r"labels\.csv:4: middle 'gulls' sits in high 'songbirds' \(line 3\)",
    ):
        kind_of(config, "owls").read_dataset(root)


def test_a_plugin_that_is_not_a_kind_or_renders_a_demo_is_a_named_problem(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    config, _ = _lineage(tmp_path)
    config["plugins"]["datasets"]["lineage"] = "examples/lineage.py:read_labels"
    with pytest.raises(PluginError, match=r"plugins\.datasets\.lineage: .* not a .*CollectionKind"):
        kind_of(config, "owls")
    unknown = copy.deepcopy(LINEAGE)
    unknown["datasets"]["owls"]["kind"] = "ledger"
    with pytest.raises(
        DatasetKindError, match=r"datasets\.owls\.kind.*'ledger'.*plugins\.datasets"
    ):
        kind_of(unknown, "owls")


def test_a_kind_of_ones_own_reads_a_folder_and_takes_no_built_in_name(monkeypatch):
    monkeypatch.chdir(REPO)
    schema = load_yaml(SCHEMA_PATH)
    owls = {"kind": "lineage", "source": "demo", "levels": ["species", "genus", "family"]}
    config = {
        "datasets": {"cub": {"enabled": False}, "nabirds": {"enabled": False}, "owls": owls},
        "plugins": {"datasets": {"lineage": "examples/lineage.py:KIND"}},
    }
    with pytest.raises(ConfigError, match=r"datasets\.owls\.source: 'demo' renders the table"):
        validate_config(copy.deepcopy(config), schema)
    config["plugins"]["datasets"] = {"table": "examples/lineage.py:KIND"}
    with pytest.raises(ConfigError, match=r"plugins\.datasets"):
        validate_config(copy.deepcopy(config), schema)
