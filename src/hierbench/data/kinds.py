"""The dataset kinds, each one :class:`DatasetKind`, and which kind each configured dataset is.

A dataset is an entry under ``datasets:`` whose name (letters, digits, ``_``, ``-``) appears in
paths and wildcards. Its ``kind`` says how it is read: ``cub`` (the CUB-200-2011 layout, its
taxonomy matched against a bird checklist), ``nabirds`` (the NABirds layout and its own tree),
``table`` (a folder with ``images.csv`` and ``taxonomy.csv``, :mod:`hierbench.data.table_reader`)
or a kind of one's own, named under ``plugins.datasets`` (a :class:`CollectionKind`: the files
of a folder that describe a collection, read into the table layout's two tables and checked as
those are). The entries named ``cub`` and ``nabirds`` are of their own kind and need no ``kind``
key, so the bird datasets' configs, paths and artifacts are those they always were.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from hierbench.data.layouts import (
    CUB_FILES,
    IMAGES_DIR,
    NABIRDS_FILES,
    listed_layout_images,
    read_cub,
    read_nabirds,
)
from hierbench.data.table_csv import frame_table
from hierbench.data.table_reader import (
    BOX_COLUMNS,
    IMAGE_COLUMNS,
    IMAGES_FILE,
    SPLIT_COLUMN,
    TAXONOMY_COLUMNS,
    TAXONOMY_FILE,
    TableDataset,
    checked_dataset,
    checked_images,
    listed_table_images,
    read_table_dataset,
    read_table_images,
)
from hierbench.plugins import PluginError, configured, load_plugin, plugin_source
from hierbench.protocol import DATASETS, LAYOUT_FOLDERS, LEVEL_NAMES, REGISTERED_AGGREGATION
from hierbench.runs import run_folder
from hierbench.splits.construction import MIDDLE_DISJOINT, OFFICIAL

ENTRY_POINT_GROUP = "hierbench.datasets"
TABLE_LAYOUT_FOLDER = "collection"  # where the demo renders a collection under demo/
NEVER = "(?!)"  # a wildcard constraint that matches no name (a kind without datasets)


class DatasetKindError(ValueError):
    """A dataset is unknown to the config or its entry lacks what its kind needs."""


@dataclass(frozen=True)
class DatasetKind:
    """Everything the study needs to know about one way of laying a dataset out on disk.

    ``layout_files`` and ``taxonomy_files`` are the tables (inside the folder) its image table
    and its taxonomy are read from: their content is the dataset's identity, so an edit reruns
    what reads them. A kind whose ``read_dataset`` is set keeps its taxonomy in its folder (a
    collection of one's own: the config entry gives ``root``, ``levels`` and ``aggregation``);
    the bird kinds' taxonomies come from shipped files and their levels are the papers'.
    """

    name: str
    folder_hint: str  # what the folder given as `root` must hold
    layout_files: tuple[str, ...]
    taxonomy_files: tuple[str, ...]
    listed_images: Callable[[Path], list[str]]  # the image files the layout lists, sorted
    read_images: Callable[[Path], pd.DataFrame]  # the checked per-image table
    read_dataset: Callable[[Path], TableDataset] | None = None
    images_folder: str = ""  # where image paths start inside the folder
    layout_folder: str = TABLE_LAYOUT_FOLDER  # the layout's folder name (the demo renders there)
    levels: tuple[str, str, str] | None = None  # None: the config entry's `levels`
    aggregation: str | None = None  # None: the config entry's `aggregation`
    default_protocol: str = MIDDLE_DISJOINT  # the split protocol unless the config names one
    sampled_pool: bool = False  # the study draws its images from a configured pool (NABirds)
    middle_split_key: str = "splits.middles"  # the key of its middle-disjoint split's counts
    middle_groups: str = "middle groups"  # what its middle groups are called in messages
    always_shuffled: bool = False  # the shuffled control taxonomies are always built
    source: Path | None = None  # a plugin's file: its code hash is that of the jobs reading it

    @property
    def own_collection(self) -> bool:
        """Whether the kind reads its taxonomy from its folder (a collection of one's own)."""
        return self.read_dataset is not None


@dataclass(frozen=True)
class CollectionKind:
    """A dataset kind of one's own (``plugins.datasets``): the files of a folder that describe
    a collection, and ``read`` turning the folder into two tables in the table layout's columns,
    images (``path, class`` and optionally ``split``, ``x, y, w, h``) and taxonomy (``class,
    middle, high``), checked here as ``images.csv`` and ``taxonomy.csv`` are (row k named as line
    k + 2 of the first layout file)."""

    layout_files: tuple[str, ...]
    read: Callable[[Path], tuple[pd.DataFrame, pd.DataFrame]]


BUILTIN_KINDS: dict[str, DatasetKind] = {
    "cub": DatasetKind(
        name="cub",
        folder_hint="the CUB_200_2011 folder (images.txt, classes.txt, images/ ...)",
        layout_files=CUB_FILES,
        taxonomy_files=(),
        listed_images=listed_layout_images,
        read_images=read_cub,
        images_folder=IMAGES_DIR,
        layout_folder=LAYOUT_FOLDERS["cub"],
        levels=LEVEL_NAMES["cub"],
        aggregation=REGISTERED_AGGREGATION["cub"],
        default_protocol=OFFICIAL,
    ),
    "nabirds": DatasetKind(
        name="nabirds",
        folder_hint="the NABirds folder (images.txt, classes.txt, hierarchy.txt, images/ ...)",
        layout_files=NABIRDS_FILES,
        taxonomy_files=(),
        listed_images=listed_layout_images,
        read_images=read_nabirds,
        images_folder=IMAGES_DIR,
        layout_folder=LAYOUT_FOLDERS["nabirds"],
        levels=LEVEL_NAMES["nabirds"],
        aggregation=REGISTERED_AGGREGATION["nabirds"],
        sampled_pool=True,
        middle_split_key="splits.parents",
        middle_groups="parents",
        always_shuffled=True,
    ),
    "table": DatasetKind(
        name="table",
        folder_hint="your collection's folder (images.csv, taxonomy.csv and the images they list)",
        layout_files=(IMAGES_FILE,),
        taxonomy_files=(TAXONOMY_FILE,),
        listed_images=listed_table_images,
        read_images=read_table_images,
        read_dataset=read_table_dataset,
    ),
}
TABLE_KIND = BUILTIN_KINDS["table"].name  # the kind `hierbench init-dataset` writes


def builtin_kind(name: str, error: type[ValueError] = DatasetKindError) -> DatasetKind:
    """A kind the package ships, by name."""
    if name not in BUILTIN_KINDS:
        raise error(f"unknown dataset kind {name!r}; built-in kinds: {list(BUILTIN_KINDS)}")
    return BUILTIN_KINDS[name]


def plugin_kinds(config: dict[str, Any]) -> dict[str, str]:
    """The dataset kinds of one's own a config names, by kind name."""
    return configured(config, "datasets")


def kind_sources(config: dict[str, Any]) -> dict[str, Path]:
    """Each plugin kind's source file, found without running it (its code hash)."""
    return {
        name: plugin_source(reference, f"plugins.datasets.{name}", ENTRY_POINT_GROUP)
        for name, reference in sorted(plugin_kinds(config).items())
    }


@functools.cache
def _loaded_kind(name: str, reference: str) -> DatasetKind:
    """A plugin's :class:`CollectionKind` as a registry entry (loaded once per process)."""
    key = f"plugins.datasets.{name}"
    collection = load_plugin(reference, key, ENTRY_POINT_GROUP)
    if not isinstance(collection, CollectionKind):
        raise PluginError(
            f"{key}: {reference!r} is a {type(collection).__name__}, not a "
            "hierbench.data.kinds.CollectionKind"
        )
    if name in BUILTIN_KINDS:
        raise PluginError(f"{key}: {name!r} is a built-in dataset kind; name yours otherwise")
    return DatasetKind(
        name=name,
        folder_hint=f"your collection's folder ({', '.join(collection.layout_files)} ...)",
        layout_files=collection.layout_files,
        taxonomy_files=collection.layout_files,  # its taxonomy is read from the same tables
        listed_images=lambda root: sorted(set(_image_frame(collection, root)["path"].astype(str))),
        read_images=functools.partial(_collection_images, collection),
        read_dataset=functools.partial(_collection_dataset, collection),
        source=plugin_source(reference, key, ENTRY_POINT_GROUP),
    )


def _image_frame(collection: CollectionKind, root: Path) -> pd.DataFrame:
    """The plugin's image table (an unreadable folder lists no images: its reader says why)."""
    try:
        return collection.read(Path(root))[0]
    except (OSError, ValueError):
        return pd.DataFrame({"path": []})


def _named(collection: CollectionKind, root: Path) -> Path:
    """The file a collection's errors name: its first layout file."""
    return Path(root) / collection.layout_files[0]


def _collection_images(collection: CollectionKind, root: Path) -> pd.DataFrame:
    """A collection's checked per-image table (as :func:`read_table_images`)."""
    images, _ = collection.read(Path(root))
    named = _named(collection, root)
    table = frame_table(named, images, IMAGE_COLUMNS, (SPLIT_COLUMN, *BOX_COLUMNS))
    return checked_images(Path(root), named, table)


def _collection_dataset(collection: CollectionKind, root: Path) -> TableDataset:
    """A collection's checked images and taxonomy (as :func:`read_table_dataset`)."""
    images, taxonomy = collection.read(Path(root))
    named = _named(collection, root)
    image_table = frame_table(named, images, IMAGE_COLUMNS, (SPLIT_COLUMN, *BOX_COLUMNS))
    taxonomy_table = frame_table(named, taxonomy, TAXONOMY_COLUMNS, ())
    return checked_dataset(Path(root), (named, image_table), (named, taxonomy_table))


def kind_problems(config: dict[str, Any], names: list[str]) -> list[str]:
    """What keeps the datasets ``names`` from being read: a kind that is neither built in nor
    a plugin that loads, or a kind of one's own asked to render a demo (each naming its key)."""
    try:
        kind_sources(config)
        kinds = {name: kind_of(config, name) for name in names}
    except ValueError as error:
        return [str(error)]
    return [
        f"datasets.{name}.source: 'demo' renders the table kind's example collection; kind "
        f"{kind.name!r} reads a folder of yours: set source: folder and root: to it"
        for name, kind in kinds.items()
        if kind.source is not None and config["datasets"][name].get("source") == "demo"
    ]


def dataset_entry(config: dict[str, Any], name: str) -> dict[str, Any]:
    """The config entry of a dataset; an unknown name is an error listing the configured ones."""
    datasets = config.get("datasets", {})
    if name not in datasets:
        raise DatasetKindError(
            f"dataset {name!r} is not in the config's datasets; configured: {sorted(datasets)}"
        )
    return datasets[name]


def kind_of(config: dict[str, Any], name: str) -> DatasetKind:
    """The kind of a dataset: its ``kind`` key (a built-in kind or one named under
    ``plugins.datasets``), or its own name for the entries cub/nabirds."""
    entry = dataset_entry(config, name)
    kind = entry.get("kind", name if name in DATASETS else None)
    plugins = plugin_kinds(config)
    if kind in BUILTIN_KINDS:
        return BUILTIN_KINDS[kind]
    if kind in plugins:
        return _loaded_kind(kind, plugins[kind])
    raise DatasetKindError(
        f"config key 'datasets.{name}.kind' is missing or unknown ({kind!r}); use one of "
        f"{[*BUILTIN_KINDS, *plugins]} (a kind of your own is named under plugins.datasets)"
    )


def dataset_kind(config: dict[str, Any], name: str) -> str:
    """The name of a dataset's kind."""
    return kind_of(config, name).name


def datasets_of_kind(config: dict[str, Any], kind: str, names: list[str]) -> list[str]:
    """The datasets among ``names`` that are of ``kind``, in the given order."""
    return [name for name in names if dataset_kind(config, name) == kind]


def own_collections(config: dict[str, Any], names: list[str]) -> list[str]:
    """The datasets among ``names`` whose kind reads its taxonomy from its folder."""
    return [name for name in names if kind_of(config, name).own_collection]


def level_names(config: dict[str, Any], name: str) -> tuple[str, str, str]:
    """The dataset's own names of its three levels, leaf first."""
    kind = kind_of(config, name)
    if kind.levels is None:
        leaf, middle, high = dataset_entry(config, name)["levels"]
        return (leaf, middle, high)
    return kind.levels


def registered_aggregation(config: dict[str, Any], name: str) -> str:
    """The dataset's registered endpoint aggregation (query_micro or group_macro)."""
    kind = kind_of(config, name)
    return kind.aggregation or dataset_entry(config, name)["aggregation"]


def layout_folder(config: dict[str, Any], name: str) -> str:
    """The folder name the dataset's layout has (the demo renders into the same name)."""
    return kind_of(config, name).layout_folder


def table_folder(config: dict[str, Any], name: str) -> str:
    """The folder a collection of one's own is read from: its ``root``, or (source ``demo``)
    where the pipeline renders its example collection inside the config's run folder."""
    entry = dataset_entry(config, name)
    if entry.get("source") == "demo":
        return f"{run_folder(config)}/{name}/demo/{TABLE_LAYOUT_FOLDER}"
    if not entry.get("root"):
        raise DatasetKindError(f"config key 'datasets.{name}.root' is not set; name the folder")
    return entry["root"]


def images_subfolder(config: dict[str, Any], name: str) -> str:
    """Where a dataset's image paths start inside its folder: ``images/`` in the bird layouts,
    the folder itself for a collection (its paths are relative to it)."""
    return kind_of(config, name).images_folder


def name_constraint(names: list[str]) -> str:
    """A wildcard constraint accepting exactly ``names`` (none: a pattern that matches none)."""
    return "|".join(names) if names else NEVER
