"""Each configured dataset's kind, and what the kind decides.

A dataset is an entry under ``datasets:`` whose name (letters, digits, ``_``, ``-``) appears in
paths and wildcards. Its ``kind`` says how it is read: ``cub`` (the CUB-200-2011 layout, its
taxonomy matched against a bird checklist), ``nabirds`` (the NABirds layout and its own tree) or
``table`` (a folder with ``images.csv`` and ``taxonomy.csv``, :mod:`hierbench.data.table_reader`).
The entries named ``cub`` and ``nabirds`` are of their own kind and need no ``kind`` key, so the
bird datasets' configs, paths and artifacts are those they always were.
"""

from __future__ import annotations

from typing import Any

from hierbench.protocol import DATASETS, LAYOUT_FOLDERS, LEVEL_NAMES, REGISTERED_AGGREGATION
from hierbench.runs import run_folder

CUB_KIND, NABIRDS_KIND, TABLE_KIND = "cub", "nabirds", "table"
KINDS: tuple[str, ...] = (CUB_KIND, NABIRDS_KIND, TABLE_KIND)
TABLE_LAYOUT_FOLDER = "collection"  # where the demo renders a table dataset under demo/
NEVER = "(?!)"  # a wildcard constraint that matches no name (a kind without datasets)


class DatasetKindError(ValueError):
    """A dataset is unknown to the config or its entry lacks what its kind needs."""


def dataset_entry(config: dict[str, Any], name: str) -> dict[str, Any]:
    """The config entry of a dataset; an unknown name is an error listing the configured ones."""
    datasets = config.get("datasets", {})
    if name not in datasets:
        raise DatasetKindError(
            f"dataset {name!r} is not in the config's datasets; configured: {sorted(datasets)}"
        )
    return datasets[name]


def dataset_kind(config: dict[str, Any], name: str) -> str:
    """The kind of a dataset: its ``kind`` key, or its own name for the entries cub/nabirds."""
    entry = dataset_entry(config, name)
    kind = entry.get("kind", name if name in DATASETS else None)
    if kind not in KINDS:
        raise DatasetKindError(
            f"config key 'datasets.{name}.kind' is missing or unknown ({kind!r}); use one of "
            f"{list(KINDS)}"
        )
    return kind


def datasets_of_kind(config: dict[str, Any], kind: str, names: list[str]) -> list[str]:
    """The datasets among ``names`` that are of ``kind``, in the given order."""
    return [name for name in names if dataset_kind(config, name) == kind]


def level_names(config: dict[str, Any], name: str) -> tuple[str, str, str]:
    """The dataset's own names of its three levels, leaf first."""
    kind = dataset_kind(config, name)
    if kind == TABLE_KIND:
        leaf, middle, high = dataset_entry(config, name)["levels"]
        return (leaf, middle, high)
    return LEVEL_NAMES[kind]


def registered_aggregation(config: dict[str, Any], name: str) -> str:
    """The dataset's registered endpoint aggregation (query_micro or group_macro)."""
    kind = dataset_kind(config, name)
    if kind == TABLE_KIND:
        return dataset_entry(config, name)["aggregation"]
    return REGISTERED_AGGREGATION[kind]


def layout_folder(config: dict[str, Any], name: str) -> str:
    """The folder name the dataset's layout has (the demo renders into the same name)."""
    kind = dataset_kind(config, name)
    return TABLE_LAYOUT_FOLDER if kind == TABLE_KIND else LAYOUT_FOLDERS[kind]


def table_folder(config: dict[str, Any], name: str) -> str:
    """The folder a table dataset is read from: its ``root``, or (source ``demo``) where the
    pipeline renders its example collection inside the config's run folder."""
    entry = dataset_entry(config, name)
    if entry.get("source") == "demo":
        return f"{run_folder(config)}/{name}/demo/{TABLE_LAYOUT_FOLDER}"
    if not entry.get("root"):
        raise DatasetKindError(f"config key 'datasets.{name}.root' is not set; name the folder")
    return entry["root"]


def images_subfolder(kind: str) -> str:
    """Where a kind's image paths start inside its folder: ``images/`` in the bird layouts,
    the folder itself for a table dataset (images.csv paths are relative to it)."""
    if kind not in KINDS:
        raise DatasetKindError(f"unknown dataset kind {kind!r}; use one of {list(KINDS)}")
    return "" if kind == TABLE_KIND else "images"


def name_constraint(names: list[str]) -> str:
    """A wildcard constraint accepting exactly ``names`` (none: a pattern that matches none)."""
    return "|".join(names) if names else NEVER
