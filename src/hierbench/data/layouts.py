"""Readers for the on-disk CUB-200-2011 and NABirds layouts, checked line by line.

Both readers return one row per image with the columns in :data:`COLUMNS`:

- ``image_id`` (str): CUB's integer ids as canonical decimal strings (``"1"``, ``"2"``, …);
  NABirds' UUID-like ids exactly as written in ``images.txt``.
- ``path`` (str): the image's relative POSIX path under the dataset's ``images/`` folder, as
  ``images.txt`` gives it (so the file is ``<root>/images/<path>``).
- ``class_id`` (int), ``class_name`` (str), ``is_train`` (bool, the official flag),
  ``bbox_x``, ``bbox_y``, ``bbox_w``, ``bbox_h`` (float, pixels).

Rows are sorted by :func:`image_sort_key` on ``image_id`` (shortlex: shorter ids first, then
lexicographic), which is numeric order for CUB's decimal ids and lexicographic order for
NABirds' fixed-length ids. Blank lines are skipped. Every inconsistency raises
:class:`DatasetFormatError` naming the file and, where there is one, the 1-based line.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from hierbench.idnames import (
    IdNameFormatError,
    iter_id_names,
    numbered_lines,
    read_id_name_file,
)

logger = logging.getLogger(__name__)

COLUMNS = [
    "image_id",
    "path",
    "class_id",
    "class_name",
    "is_train",
    "bbox_x",
    "bbox_y",
    "bbox_w",
    "bbox_h",
]
CUB_FILES = (
    "images.txt",
    "classes.txt",
    "image_class_labels.txt",
    "train_test_split.txt",
    "bounding_boxes.txt",
)
NABIRDS_FILES = (*CUB_FILES, "hierarchy.txt")
IMAGES_DIR = "images"
NABIRDS_ROOT = 0

# (line number, fields after the image id) per image id
_Rows = dict[str, tuple[int, list[str]]]


class DatasetFormatError(ValueError):
    """A dataset folder is incomplete or its files disagree; the message names file and line."""


class DatasetIdNameError(DatasetFormatError, IdNameFormatError):
    """A dataset's ``classes.txt`` or ``hierarchy.txt`` is not a well-formed `<id> <name>` file."""


def image_sort_key(image_id: str) -> tuple[int, str]:
    """Shortlex key: numeric order for canonical decimal ids, lexicographic for equal lengths."""
    return (len(image_id), image_id)


def read_cub(root: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a ``CUB_200_2011`` folder into the checked per-image table (see module docstring)."""
    return _read_dataset(Path(root), CUB_FILES, _cub_image_id, hierarchy=False)


def read_nabirds(root: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a NABirds folder (with ``hierarchy.txt``) into the checked per-image table."""
    return _read_dataset(Path(root), NABIRDS_FILES, _nabirds_image_id, hierarchy=True)


def listed_layout_images(root: Path) -> list[str]:
    """The image files ``images.txt`` lists, relative to the folder, sorted (none when it is
    missing or unreadable: the reader reports that)."""
    try:
        lines = (root / "images.txt").read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    paths = {f"{IMAGES_DIR}/{line.split(maxsplit=1)[1]}" for line in lines if line.split()[1:]}
    return sorted(paths)


def _cub_image_id(token: str) -> str:
    """Canonical CUB image id: the integer as a decimal string; ValueError if not an integer."""
    if not token.isdigit():
        raise ValueError("image id is not a non-negative integer")
    return str(int(token))


def _nabirds_image_id(token: str) -> str:
    """NABirds image ids are kept verbatim (UUID-like strings)."""
    return token


def _read_dataset(
    root: Path, names: tuple[str, ...], parse_id: Callable[[str], str], *, hierarchy: bool
) -> pd.DataFrame:
    """Parse every file, cross-check ids, classes, the tree and the images, and build the table."""
    _require_layout(root, names)
    classes = read_classes(root / "classes.txt")
    if hierarchy:
        _check_hierarchy(root / "hierarchy.txt", classes)
    images = _read_image_rows(root / "images.txt", 1, "<image_id> <relative path>", parse_id)
    _check_unique_paths(root / "images.txt", images)
    labels = _read_image_rows(root / "image_class_labels.txt", 1, "<image_id> <class_id>", parse_id)
    split = _read_image_rows(root / "train_test_split.txt", 1, "<image_id> <0|1>", parse_id)
    boxes = _read_image_rows(root / "bounding_boxes.txt", 4, "<image_id> <x> <y> <w> <h>", parse_id)
    for path, rows in (
        (root / "image_class_labels.txt", labels),
        (root / "train_test_split.txt", split),
        (root / "bounding_boxes.txt", boxes),
    ):
        _check_same_ids(root / "images.txt", images, path, rows)
    class_ids = _class_ids(root / "image_class_labels.txt", labels, classes)
    flags = _train_flags(root / "train_test_split.txt", split)
    bboxes = _bboxes(root / "bounding_boxes.txt", boxes)
    _check_on_disk(root, images)
    frame = _build_frame(images, classes, class_ids, flags, bboxes)
    logger.info("read %d images in %d classes from %s", len(frame), frame.class_id.nunique(), root)
    return frame


def _require_layout(root: Path, names: tuple[str, ...]) -> None:
    """Every metadata file and the images folder must exist; errors name the file and folder."""
    if not root.is_dir():
        raise DatasetFormatError(f"dataset folder {root} does not exist")
    for name in names:
        if not (root / name).is_file():
            raise DatasetFormatError(f"missing file {name} in dataset folder {root}")
    if not (root / IMAGES_DIR).is_dir():
        raise DatasetFormatError(f"missing folder {IMAGES_DIR}/ in dataset folder {root}")


def _lines(path: Path) -> list[tuple[int, str]]:
    """Non-blank lines of a UTF-8 text file (a BOM and CRLF endings are tolerated), numbered."""
    return [(n, line) for n, line in numbered_lines(path, error=DatasetFormatError) if line.strip()]


def _malformed(path: Path, number: int, form: str, line: str, why: str = "") -> DatasetFormatError:
    """The error for a line that does not have the expected form."""
    reason = f" ({why})" if why else ""
    return DatasetFormatError(
        f"{path}:{number}: malformed line, expected '{form}'{reason}: {line!r}"
    )


def read_classes(path: str | os.PathLike[str]) -> dict[int, str]:
    """Parse a ``classes.txt`` (``<class_id> <name>``, names may hold spaces); unique ids."""
    rows = read_id_name_file(
        Path(path),
        malformed="malformed line, expected '<class_id> <name>': {line!r}",
        duplicate="duplicate class id {id} (first on line {first})",
        empty="file lists no classes",
        error=DatasetIdNameError,
    )
    return {row.id: row.name for row in rows}


def _read_image_rows(path: Path, width: int, form: str, parse_id: Callable[[str], str]) -> _Rows:
    """Parse lines of an image id plus ``width`` fields; ids must parse and be unique."""
    rows: _Rows = {}
    for number, line in _lines(path):
        parts = line.strip().split(maxsplit=width) if width == 1 else line.split()
        if len(parts) != width + 1:
            raise _malformed(path, number, form, line, f"{len(parts)} fields")
        try:
            image_id = parse_id(parts[0])
        except ValueError as error:
            raise _malformed(path, number, form, line, str(error)) from error
        if image_id in rows:
            raise DatasetFormatError(
                f"{path}:{number}: duplicate image id {image_id!r} "
                f"(first on line {rows[image_id][0]})"
            )
        rows[image_id] = (number, parts[1:])
    if not rows:
        raise DatasetFormatError(f"{path}: file lists no images")
    return rows


def _check_unique_paths(path: Path, images: _Rows) -> None:
    """Two image ids must not share one image file."""
    seen: dict[str, int] = {}
    for _image_id, (number, (relpath,)) in images.items():
        if relpath in seen:
            raise DatasetFormatError(
                f"{path}:{number}: duplicate image path {relpath!r} (first on line {seen[relpath]})"
            )
        seen[relpath] = number


def _check_same_ids(images_path: Path, images: _Rows, path: Path, rows: _Rows) -> None:
    """A per-image file must list exactly the ids of ``images.txt``; name the first offender."""
    extra = sorted((rows[i][0], i) for i in rows.keys() - images.keys())
    if extra:
        number, image_id = extra[0]
        raise DatasetFormatError(
            f"{path}:{number}: image id {image_id!r} is not in {images_path.name} "
            f"({len(extra)} such id(s) in {path.name})"
        )
    missing = sorted((images[i][0], i) for i in images.keys() - rows.keys())
    if missing:
        number, image_id = missing[0]
        raise DatasetFormatError(
            f"{path} lacks {len(missing)} image id(s) listed in {images_path.name}, "
            f"first {image_id!r} ({images_path.name} line {number})"
        )


def _class_ids(path: Path, labels: _Rows, classes: dict[int, str]) -> dict[str, int]:
    """Each image's class id; it must be an integer listed in ``classes.txt``."""
    result: dict[str, int] = {}
    for image_id, (number, (token,)) in labels.items():
        if not token.isdigit():
            raise _malformed(path, number, "<image_id> <class_id>", f"{image_id} {token}")
        class_id = int(token)
        if class_id not in classes:
            raise DatasetFormatError(
                f"{path}:{number}: class id {class_id} of image {image_id!r} is not in classes.txt"
            )
        result[image_id] = class_id
    return result


def _train_flags(path: Path, split: _Rows) -> dict[str, bool]:
    """The official train flag per image: ``1`` is train, ``0`` is test, nothing else."""
    flags: dict[str, bool] = {}
    for image_id, (number, (token,)) in split.items():
        if token not in ("0", "1"):
            raise _malformed(path, number, "<image_id> <0|1>", f"{image_id} {token}", "flag")
        flags[image_id] = token == "1"
    return flags


def _bboxes(path: Path, boxes: _Rows) -> dict[str, tuple[float, float, float, float]]:
    """Parse ``x y w h`` as finite floats with non-negative width and height."""
    result: dict[str, tuple[float, float, float, float]] = {}
    form = "<image_id> <x> <y> <w> <h>"
    for image_id, (number, fields) in boxes.items():
        line = " ".join([image_id, *fields])
        try:
            x, y, w, h = (float(field) for field in fields)
        except ValueError as error:
            raise _malformed(path, number, form, line, "not a number") from error
        if not all(math.isfinite(v) for v in (x, y, w, h)) or w < 0 or h < 0:
            raise _malformed(path, number, form, line, "non-finite or negative size")
        result[image_id] = (x, y, w, h)
    return result


def files_under(folder: Path) -> set[str]:
    """Relative POSIX paths of every file under ``folder``, from one scandir walk that follows
    symbolic links to folders and files (a link back to a folder above it, a cycle, is not
    followed again; a broken link is no file)."""
    found: set[str] = set()
    pending = [(Path(folder), "", frozenset[str]())]
    while pending:
        directory, prefix, above = pending.pop()
        real = os.path.realpath(directory)
        if real in above:
            continue
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=True):
                    pending.append((Path(entry.path), f"{prefix}{entry.name}/", above | {real}))
                elif entry.is_file(follow_symlinks=True):
                    found.add(prefix + entry.name)
    return found


def _check_on_disk(root: Path, images: _Rows) -> None:
    """Every image in ``images.txt`` must be a file under ``images/`` (one walk, no stats)."""
    present = files_under(root / IMAGES_DIR)
    absent = sorted((n, i, rel) for i, (n, (rel,)) in images.items() if rel not in present)
    if absent:
        number, image_id, relpath = absent[0]
        raise DatasetFormatError(
            f"{root / 'images.txt'}:{number}: image {relpath!r} (id {image_id!r}) is listed but "
            f"absent from {root / IMAGES_DIR} ({len(absent)} listed image(s) absent)"
        )


def _check_hierarchy(path: Path, classes: dict[int, str]) -> None:
    """Parse ``<child_id> <parent_id>`` and require every class to reach root 0 without a cycle."""
    parents = _read_parents(path, classes)
    if NABIRDS_ROOT not in classes:
        raise DatasetFormatError(f"{path.with_name('classes.txt')}: no root class {NABIRDS_ROOT}")
    reaches_root = {NABIRDS_ROOT}
    for class_id in sorted(classes):
        chain: list[int] = []
        node = class_id
        while node not in reaches_root:
            if node in chain:
                cycle = " -> ".join(str(n) for n in [*chain[chain.index(node) :], node])
                raise DatasetFormatError(f"{path}: cycle in the hierarchy: {cycle}")
            chain.append(node)
            if node not in parents:
                raise DatasetFormatError(
                    f"{path}: class {class_id} ({classes[class_id]!r}) has no path to the root "
                    f"{NABIRDS_ROOT} ({classes[NABIRDS_ROOT]!r}): its ancestor {node} has no "
                    "parent line"
                )
            node = parents[node]
        reaches_root.update(chain)


def _read_parents(path: Path, classes: dict[int, str]) -> dict[int, int]:
    """Parent per child id; both ids must be classes, children unique, and the root parentless."""
    parents: dict[int, int] = {}
    for number, child, name in iter_id_names(
        path,
        name_pattern=r"\d+",
        malformed="malformed line, expected '<child_id> <parent_id>': {line!r}",
        duplicate="duplicate child id {id} (first on line {first})",
        empty=None,
        error=DatasetIdNameError,
    ):
        parent = int(name)
        for node in (child, parent):
            if node not in classes:
                raise DatasetFormatError(f"{path}:{number}: node id {node} is not in classes.txt")
        if child == NABIRDS_ROOT:
            raise DatasetFormatError(
                f"{path}:{number}: the root {NABIRDS_ROOT} must not have a parent"
            )
        parents[child] = parent
    return parents


def _build_frame(
    images: _Rows,
    classes: dict[int, str],
    class_ids: dict[str, int],
    flags: dict[str, bool],
    bboxes: dict[str, tuple[float, float, float, float]],
) -> pd.DataFrame:
    """Assemble the per-image table in :func:`image_sort_key` order."""
    order = sorted(images, key=image_sort_key)
    boxes = [bboxes[i] for i in order]
    frame = pd.DataFrame(
        {
            "image_id": pd.Series(order, dtype=str),
            "path": pd.Series([images[i][1][0] for i in order], dtype=str),
            "class_id": pd.Series([class_ids[i] for i in order], dtype="int64"),
            "class_name": pd.Series([classes[class_ids[i]] for i in order], dtype=str),
            "is_train": pd.Series([flags[i] for i in order], dtype=bool),
        }
    )
    for index, column in enumerate(("bbox_x", "bbox_y", "bbox_w", "bbox_h")):
        frame[column] = pd.Series([box[index] for box in boxes], dtype="float64")
    return frame[COLUMNS]
