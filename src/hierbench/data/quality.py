"""What makes a table dataset's queries invalid or weak, said before anything runs.

A query is valid at a level when the gallery holds a strict positive for it there: an image of
its class (leaf), of another class of its middle group (middle), of another middle group of its
high group (high), as ``hierbench.relations`` defines them. A high group with one middle group
therefore has no valid query at the high level, a middle group with one class none at the
middle level, and a class needs two test images (a query and a gallery positive) to be scored
at its leaf. The counts here are those of the test side (the split column when the dataset has
one) and of a query draw of the configured size; ``unreadable_images`` opens every image.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from PIL import Image

from hierbench.data.kinds import dataset_entry, kind_of, level_names, table_folder
from hierbench.data.layouts import DatasetFormatError
from hierbench.data.scorable import DrawValidity, draw_validity, unscored_lines, validity_lines
from hierbench.data.table_reader import TableDataset, level_counts
from hierbench.protocol import LEVELS
from hierbench.relations import strict_positive_counts
from hierbench.splits.construction import MIDDLE_DISJOINT, parent_counts, with_labels
from hierbench.splits.sampling import SplitError

MIN_VALID_QUERIES = 10  # fewer valid queries per draw than this make a level's score weak
NAMED = 8  # groups named in a warning before "and N more"
LISTED = 20  # unreadable images listed before "and N more"


def _named(values: list[str]) -> str:
    """A short list of names for a message."""
    shown = ", ".join(repr(value) for value in values[:NAMED])
    return shown + (f" and {len(values) - NAMED} more" if len(values) > NAMED else "")


def query_count(queries: float | int, test_images: int) -> int:
    """How many queries a draw takes from ``test_images``: a fraction of them, or a count."""
    if isinstance(queries, float) and queries <= 1.0:
        return round(queries * test_images)
    return min(int(queries), test_images)


def dataset_warnings(
    dataset: TableDataset, levels: tuple[str, str, str], queries: float | int
) -> list[str]:
    """Every warning about a table dataset's queries, in the user's level names."""
    leaf, middle, high = levels
    taxonomy = dataset.taxonomy
    warnings = []
    per_high = taxonomy.groupby("high")["middle"].agg(lambda names: sorted(set(names)))
    lonely = [name for name, groups in per_high.items() if len(groups) == 1]
    if lonely:
        warnings.append(
            f"{len(lonely)} {high} group(s) hold a single {middle} ({_named(lonely)}): their "
            f"queries have no strict positive at the {high} (high) level and are not scored there"
        )
    per_middle = taxonomy.groupby("middle")["leaf"].nunique()
    single = sorted(per_middle[per_middle == 1].index)
    if single:
        warnings.append(
            f"{len(single)} {middle} group(s) hold a single {leaf} ({_named(single)}): their "
            f"queries have no strict positive at the {middle} (middle) level"
        )
    test = dataset.images[~dataset.images["is_train"]] if dataset.has_split else dataset.images
    per_class = test.groupby("class_name").size().reindex(sorted(taxonomy["leaf"]), fill_value=0)
    none, single = sorted(per_class[per_class == 0].index), sorted(per_class[per_class == 1].index)
    if none:
        warnings.append(
            f"{_leaves(len(none), leaf)} no test image ({_named(none)}): the split leaves zero "
            "of their images on the test side, so no query comes from them"
        )
    if single:
        warnings.append(
            f"{_leaves(len(single), leaf)} a single test image ({_named(single)}): their "
            f"queries have no {leaf} positive in the gallery"
        )
    return warnings + _weak_levels(test, taxonomy, levels, queries)


def _leaves(count: int, leaf: str) -> str:
    """ "1 leaf (species) has" or "3 leaves (species) have": a count of leaves in the user's
    name for them, the verb agreeing."""
    return f"1 leaf ({leaf}) has" if count == 1 else f"{count} leaves ({leaf}) have"


def _weak_levels(
    test: pd.DataFrame, taxonomy: pd.DataFrame, levels: tuple[str, str, str], queries: float | int
) -> list[str]:
    """A warning per level where a query draw would hold fewer than MIN_VALID_QUERIES valid
    queries (an image is valid when another test image is a strict positive for it)."""
    codes = taxonomy.set_index("leaf")[["leaf_code", "middle_code", "high_code"]]
    labels = codes.loc[test["class_name"]].to_numpy(np.int64)
    if len(labels) == 0:
        return ["the test side holds no image: no query can be drawn at any level"]
    positives = strict_positive_counts(labels, labels)
    positives[:, 0] -= 1  # an image is not its own leaf positive
    draw = query_count(queries, len(labels))
    warnings = []
    for index, name in enumerate(levels):
        expected = draw * float((positives[:, index] > 0).mean())
        if expected < MIN_VALID_QUERIES:
            warnings.append(
                f"a query draw of {draw} images would hold about {expected:.0f} valid queries at "
                f"the {name} level (fewer than {MIN_VALID_QUERIES}): its scores will be noisy"
            )
    return warnings


def unreadable_images(root: str | os.PathLike[str], paths: list[str]) -> list[str]:
    """Each listed image that cannot be decoded, with why (opening every image: slow)."""
    problems = []
    for relative in paths:
        try:
            with Image.open(Path(root) / relative) as image:
                image.load()
        except (OSError, ValueError, SyntaxError) as error:
            problems.append(f"{Path(root) / relative}: cannot be read as an image ({error})")
    return problems


class DatasetCheckError(ValueError):
    """A dataset cannot be checked as asked; the message says what to do instead."""


def listed(problems: list[str], limit: int = LISTED) -> list[str]:
    """The first ``limit`` problems and, when there are more, a line counting the rest."""
    more = [f"... and {len(problems) - limit} more"] if len(problems) > limit else []
    return problems[:limit] + more


def check_report(
    config: dict[str, Any], name: str, *, deep: bool = False, root: str | Path | None = None
) -> tuple[list[str], list[str], list[str]]:
    """``hierbench check-dataset``: a collection read and checked, without running anything.
    Returns the report's lines (its counts per level), the warnings and the errors (``deep``:
    every image that cannot be decoded, from opening them all). ``root`` reads the dataset from
    another folder (an example collection rendered before its run)."""
    kind = kind_of(config, name)
    if kind.read_dataset is None:
        raise DatasetCheckError(
            f"check-dataset validates collections of your own; {name!r} is of kind {kind.name!r}"
        )
    root = root or table_folder(config, name)
    dataset = kind.read_dataset(Path(root))
    counts = level_counts(dataset)
    levels = level_names(config, name)
    rows = [("images", counts["images"]), (f"{levels[0]} (leaf)", counts["classes"])]
    rows += [(f"{levels[1]} (middle)", counts["middle"]), (f"{levels[2]} (high)", counts["high"])]
    rows += [
        (f"{split} images", counts[f"{split}_images"])
        for split in ("train", "test")
        if f"{split}_images" in counts
    ]
    queries = config["datasets"][name]["splits"]["query_gallery"]["queries"]
    warnings = dataset_warnings(dataset, levels, queries)
    unreadable = unreadable_images(root, dataset.images["path"].tolist()) if deep else []
    validity = _sealed_draws(config, name, dataset, levels)
    errors = [*unreadable, *_unscored(validity, levels, errors=True)]
    warnings += _unscored(validity, levels, errors=False)
    verdict = f"is a valid {kind.name} dataset"
    if unreadable:
        verdict = (
            f"is not a valid {kind.name} dataset: {len(unreadable)} of its {len(dataset.images)} "
            "images cannot be read"
        )
    elif validity is not None and validity.endpoints_undefined:
        unscored = " or ".join(levels[LEVELS.index(level)] for level in validity.unscorable)
        verdict = f"cannot score the planned endpoints (no valid query at the {unscored} level)"
    lines = [f"{name}: {root} {verdict}"]
    lines += [f"  {label:<24} {count:>8}" for label, count in rows]
    lines += validity_lines(validity, levels) if validity is not None else []
    return lines, warnings, errors


def _sealed_draws(
    config: dict[str, Any], name: str, dataset: TableDataset, levels: tuple[str, str, str]
) -> DrawValidity | None:
    """The valid queries of the run's sealed test draws; None when the split cannot be drawn
    (``check_table_splits`` names why)."""
    labelled = with_labels(dataset.images, dataset.taxonomy)
    try:
        return draw_validity(kind_of(config, name), labelled, dataset_entry(config, name), levels)
    except SplitError:
        return None


def _unscored(
    validity: DrawValidity | None, levels: tuple[str, str, str], *, errors: bool
) -> list[str]:
    """A line per level no sealed draw scores, with why: errors when they leave the planned
    endpoints undefined (a level of mean hierarchy mAP), warnings otherwise."""
    if validity is None or validity.endpoints_undefined != errors:
        return []
    tail = (
        "; mean hierarchy mAP, and so every planned endpoint, would be NaN"
        if errors
        else "; that level's mAP would be NaN"
    )
    return unscored_lines(validity, levels, tail)


def plan_warnings(config: dict[str, Any], datasets: list[str]) -> list[str]:
    """The check-dataset warnings of every table dataset a run reads whose folder is there (a
    demo collection once rendered), each starting with the dataset's name. A folder its reader
    refuses gets none here: the run's first job names that flaw."""
    warnings = []
    for name in datasets:
        kind = kind_of(config, name)
        root = table_folder(config, name) if kind.read_dataset is not None else None
        if kind.read_dataset is None or root is None or not Path(root).is_dir():
            continue
        try:
            dataset = kind.read_dataset(Path(root))
        except DatasetFormatError:
            continue
        queries = config["datasets"][name]["splits"]["query_gallery"]["queries"]
        found = dataset_warnings(dataset, level_names(config, name), queries)
        warnings += [f"{name}: {warning}" for warning in found]
    return warnings


def check_table_splits(config: dict[str, Any], datasets: list[str]) -> None:
    """Stop the plan when a middle-disjoint table dataset whose folder is there cannot split
    its middle groups as configured, naming the dataset's own key (not at the splits job)."""
    for name in datasets:
        kind = kind_of(config, name)
        if kind.read_dataset is None:
            continue
        splits = config["datasets"][name]["splits"]
        root = table_folder(config, name)
        if splits.get("protocol") != MIDDLE_DISJOINT or not Path(root).is_dir():
            continue
        try:
            dataset = kind.read_dataset(Path(root))
        except DatasetFormatError:
            continue  # the run's first job names that flaw
        middles = dataset.taxonomy.loc[
            dataset.taxonomy["class_name"].isin(dataset.images["class_name"]), "middle"
        ].nunique()
        try:
            parent_counts(
                splits["middles"], int(middles), f"datasets.{name}.splits.middles", "middle groups"
            )
        except SplitError as error:
            raise DatasetCheckError(str(error)) from None
