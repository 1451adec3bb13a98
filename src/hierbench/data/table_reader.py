"""Reader for a user's own image collection: the ``kind: table`` layout, checked line by line.

A table dataset is a folder ``ROOT`` holding two UTF-8, comma-separated files with a header row
(a BOM and CRLF endings are tolerated; fully blank lines are skipped; surrounding whitespace of
each cell is ignored):

- ``images.csv``: one row per image. Required columns ``path`` (the image file relative to
  ``ROOT``, POSIX, neither absolute nor with a ``..`` part) and ``class``; optional ``split``
  (exactly ``train`` or ``test``) and the box columns ``x, y, w, h`` (all four or none; pixels,
  ``x, y >= 0`` and ``w, h > 0``). Any other column is an error, so that a typo cannot silently
  drop a column.
- ``taxonomy.csv``: one row per class, columns ``class, middle, high``: the three levels of the
  study. A class sits in one middle group and a middle group in one high group; at least two
  middle and two high groups are needed. Every class needs an image: a class without one is an
  error naming its line (a split may still leave a class without test images: check-dataset
  warns of it).

:func:`read_table_dataset` returns a :class:`TableDataset`: the per-image table in the columns of
:data:`hierbench.data.layouts.COLUMNS` (``image_id`` is the ``path`` as written, rows sorted by
:func:`hierbench.data.layouts.image_sort_key`), and the taxonomy table with integer level codes.
Class ids are 1..m for the classes with images in the order of their sorted names (so they depend
neither on row order nor on ``taxonomy.csv``: :func:`read_table_images` reads the image table from
``images.csv`` alone), then m+1.. for the taxonomy's classes without images.
Every inconsistency raises :class:`TableDatasetError` naming the file and, where there is one,
the 1-based line (line 1 is the header), as ``ROOT/images.csv:7: ...``. The reader writes nothing.
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath

import pandas as pd

from hierbench.data.layouts import COLUMNS, files_under, image_sort_key
from hierbench.data.table_csv import Row, Table, TableDatasetError, column_values, read_csv
from hierbench.protocol import LEVELS
from hierbench.taxonomy.levels import add_level_codes

logger = logging.getLogger(__name__)

IMAGES_FILE = "images.csv"
TAXONOMY_FILE = "taxonomy.csv"
IMAGE_COLUMNS = ("path", "class")
SPLIT_COLUMN = "split"
BOX_COLUMNS = ("x", "y", "w", "h")
TAXONOMY_COLUMNS = ("class", "middle", "high")
SPLITS = ("train", "test")
MIN_GROUPS = 2
BBOX_COLUMNS = ("bbox_x", "bbox_y", "bbox_w", "bbox_h")
IMAGE_DTYPES = {
    "image_id": str,
    "path": str,
    "class_id": "int64",
    "class_name": str,
    "is_train": bool,
    **dict.fromkeys(BBOX_COLUMNS, "float64"),
}
NO_BOX = (math.nan, math.nan, math.nan, math.nan)


@dataclass(frozen=True, eq=False)
class TableDataset:
    """A checked table dataset: the per-image table, the taxonomy, and which options it used.

    ``images`` has exactly :data:`hierbench.data.layouts.COLUMNS` with :func:`read_cub`'s dtypes;
    ``taxonomy`` has ``class_id, class_name, leaf, middle, high`` and the three level codes.
    """

    images: pd.DataFrame
    taxonomy: pd.DataFrame
    has_split: bool
    has_boxes: bool


@dataclass(frozen=True)
class _Class:
    """One ``taxonomy.csv`` row."""

    line: int
    name: str
    middle: str
    high: str


@dataclass(frozen=True)
class _Image:
    """One checked ``images.csv`` row."""

    line: int
    path: str
    class_name: str
    is_train: bool
    box: tuple[float, float, float, float]


def read_table_dataset(root: str | os.PathLike[str]) -> TableDataset:
    """Read and check a ``kind: table`` folder (see module docstring); raise on any flaw."""
    root = Path(root)
    _require_layout(root, (IMAGES_FILE, TAXONOMY_FILE))
    taxonomy_path = root / TAXONOMY_FILE
    classes = _taxonomy_classes(taxonomy_path, read_csv(taxonomy_path, TAXONOMY_COLUMNS, ()))
    images = read_csv(root / IMAGES_FILE, IMAGE_COLUMNS, (SPLIT_COLUMN, *BOX_COLUMNS))
    return _assembled(root, (root / IMAGES_FILE, images), taxonomy_path, classes)


def checked_dataset(
    root: Path, images: tuple[Path, Table], taxonomy: tuple[Path, Table]
) -> TableDataset:
    """A dataset from its two tables (each with the file its errors name), checked as a
    ``kind: table`` folder is: the taxonomy's tree, every row, every image on disk."""
    taxonomy_path, taxonomy_table = taxonomy
    classes = _taxonomy_classes(taxonomy_path, taxonomy_table)
    return _assembled(root, images, taxonomy_path, classes)


def _assembled(
    root: Path, images: tuple[Path, Table], taxonomy_path: Path, classes: dict[str, _Class]
) -> TableDataset:
    """The checked images joined to the checked classes."""
    images_path, image_table = images
    rows, has_split, has_boxes = _image_rows(images_path, image_table)
    _check_classes(images_path, rows, classes, taxonomy_path)
    _check_no_empty_class(images_path, rows, classes, taxonomy_path)
    _check_on_disk(root, images_path, rows)
    class_ids = _class_ids([image.class_name for image in rows], classes)
    dataset = TableDataset(
        images=_images_frame(rows, class_ids),
        taxonomy=_taxonomy_frame(classes, class_ids),
        has_split=has_split,
        has_boxes=has_boxes,
    )
    logger.info("read %d images in %d classes from %s", len(rows), len(classes), root)
    return dataset


def read_table_images(root: str | os.PathLike[str]) -> pd.DataFrame:
    """The per-image table of a ``kind: table`` folder from ``images.csv`` alone (checked as
    in :func:`read_table_dataset`, less the classes' presence in ``taxonomy.csv``), so that a
    taxonomy edit leaves it, and the features computed from it, untouched."""
    root = Path(root)
    _require_layout(root, (IMAGES_FILE,))
    table = read_csv(root / IMAGES_FILE, IMAGE_COLUMNS, (SPLIT_COLUMN, *BOX_COLUMNS))
    return checked_images(root, root / IMAGES_FILE, table)


def checked_images(root: Path, path: Path, table: Table) -> pd.DataFrame:
    """The per-image table of an image table (``path`` names it in errors), checked alone."""
    rows, _, _ = _image_rows(path, table)
    _check_on_disk(root, path, rows)
    return _images_frame(rows, _class_ids([image.class_name for image in rows], {}))


def listed_table_images(root: Path) -> list[str]:
    """The image files ``images.csv`` lists, sorted (none when it cannot be read: the reader
    reports that)."""
    return column_values(root / IMAGES_FILE, "path")


def _image_rows(path: Path, table: Table) -> tuple[list[_Image], bool, bool]:
    """The checked rows of an image table and whether it gives the split and the boxes."""
    has_split, has_boxes = _image_options(path, table)
    return _parse_images(path, table.rows), has_split, has_boxes


def _check_classes(
    path: Path, images: list[_Image], classes: dict[str, _Class], taxonomy_path: Path
) -> None:
    """Every image's class must be listed in the taxonomy; the error names the first line."""
    for image in images:
        if image.class_name not in classes:
            raise TableDatasetError(
                f"{path}:{image.line}: unknown class {image.class_name!r}, not listed in "
                f"{taxonomy_path}"
            )


def _check_no_empty_class(
    path: Path, images: list[_Image], classes: dict[str, _Class], taxonomy_path: Path
) -> None:
    """Every class of the taxonomy must have an image; the error names the first by its line
    and counts the others."""
    listed = {image.class_name for image in images}
    empty = sorted((c for c in classes.values() if c.name not in listed), key=lambda c: c.line)
    if empty:
        first, others = empty[0], len(empty) - 1
        more = f" (and {others} other class(es) without images)" if others else ""
        raise TableDatasetError(
            f"{taxonomy_path}:{first.line}: class {first.name!r} has no image in {path}{more}; "
            "add its images or remove it from the taxonomy"
        )


def read_taxonomy_csv(path: str | os.PathLike[str]) -> pd.DataFrame:
    """The taxonomy table of a ``taxonomy.csv`` alone (checked as in a dataset folder), e.g. the
    example collection the demo renders; class ids follow the sorted class names."""
    classes = _taxonomy_classes(Path(path), read_csv(Path(path), TAXONOMY_COLUMNS, ()))
    return _taxonomy_frame(classes, _class_ids(list(classes), classes))


def _class_ids(image_classes: list[str], classes: dict[str, _Class]) -> dict[str, int]:
    """Class ids 1..m for the classes with images, in sorted name order (independent of row
    order and of the taxonomy, so the image table does not change when the taxonomy does),
    then m+1.. for the taxonomy's classes without images, in sorted name order."""
    with_images = sorted(set(image_classes))
    without = sorted(set(classes) - set(with_images))
    return {name: index for index, name in enumerate([*with_images, *without], start=1)}


def level_counts(dataset: TableDataset) -> dict[str, int]:
    """Images and taxonomy groups per level (and train/test images when the split is given).

    ``classes``, ``middle`` and ``high`` count the taxonomy's groups, images or not.
    """
    images, taxonomy = dataset.images, dataset.taxonomy
    counts = {
        "images": len(images),
        "classes": int(taxonomy["leaf"].nunique()),
        "middle": int(taxonomy["middle"].nunique()),
        "high": int(taxonomy["high"].nunique()),
    }
    if dataset.has_split:
        counts["train_images"] = int(images["is_train"].sum())
        counts["test_images"] = len(images) - counts["train_images"]
    return counts


def _require_layout(root: Path, names: tuple[str, ...]) -> None:
    """The folder and the named CSV files must exist; the error names what is missing."""
    if not root.is_dir():
        raise TableDatasetError(f"dataset folder {root} does not exist")
    for name in names:
        if not (root / name).is_file():
            raise TableDatasetError(f"missing file {root / name} in dataset folder {root}")


def _taxonomy_classes(path: Path, table: Table) -> dict[str, _Class]:
    """The taxonomy's classes by name, a proper three-level tree with enough groups."""
    classes: dict[str, _Class] = {}
    for row in table.rows:
        entry = _Class(row.line, row.cells["class"], row.cells["middle"], row.cells["high"])
        if entry.name in classes:
            raise _duplicate_class(path, classes[entry.name], entry)
        classes[entry.name] = entry
    if not classes:
        raise TableDatasetError(f"{path}: file lists no classes")
    _check_middles(path, classes)
    _check_group_counts(path, classes)
    return classes


def _duplicate_class(path: Path, first: _Class, again: _Class) -> TableDatasetError:
    """The error for a class on two lines, naming both middles when they differ."""
    if first.middle != again.middle:
        return TableDatasetError(
            f"{path}:{again.line}: class {again.name!r} sits in middle {first.middle!r} "
            f"(line {first.line}) and middle {again.middle!r} (line {again.line})"
        )
    return TableDatasetError(
        f"{path}:{again.line}: class {again.name!r} is listed twice "
        f"(lines {first.line} and {again.line})"
    )


def _check_middles(path: Path, classes: dict[str, _Class]) -> None:
    """Each middle group must sit in exactly one high group."""
    first: dict[str, _Class] = {}
    for entry in sorted(classes.values(), key=lambda c: c.line):
        earlier = first.setdefault(entry.middle, entry)
        if earlier.high != entry.high:
            raise TableDatasetError(
                f"{path}:{entry.line}: middle {entry.middle!r} sits in high {earlier.high!r} "
                f"(line {earlier.line}) and high {entry.high!r} (line {entry.line})"
            )


def _check_group_counts(path: Path, classes: dict[str, _Class]) -> None:
    """Levels with a single group carry no hierarchy to study."""
    for level in LEVELS[1:]:
        groups = sorted({getattr(entry, level) for entry in classes.values()})
        if len(groups) < MIN_GROUPS:
            raise TableDatasetError(
                f"{path}: {len(groups)} {level} group(s) {groups}; a three-level study needs "
                f"at least {MIN_GROUPS} {level} groups"
            )


def _image_options(path: Path, table: Table) -> tuple[bool, bool]:
    """Whether images.csv gives the split and the boxes; box columns come all four or none."""
    boxes = [column for column in BOX_COLUMNS if column in table.columns]
    if boxes and len(boxes) != len(BOX_COLUMNS):
        lacking = [column for column in BOX_COLUMNS if column not in boxes]
        raise TableDatasetError(
            f"{path}:{table.header_line}: box columns come all four or none: has "
            f"{', '.join(boxes)} but lacks {', '.join(lacking)}"
        )
    return SPLIT_COLUMN in table.columns, bool(boxes)


def _parse_images(path: Path, rows: list[Row]) -> list[_Image]:
    """Check every image row in line order: path form, unique path, split and box."""
    seen: dict[str, int] = {}
    images: list[_Image] = []
    for row in rows:
        relpath = row.cells["path"]
        _check_relative(path, row.line, relpath)
        if relpath in seen:
            raise TableDatasetError(
                f"{path}:{row.line}: duplicate path {relpath!r} "
                f"(lines {seen[relpath]} and {row.line})"
            )
        seen[relpath] = row.line
        name = row.cells["class"]
        is_train = _is_train(path, row)
        images.append(_Image(row.line, relpath, name, is_train, _box(path, row)))
    if not images:
        raise TableDatasetError(f"{path}: file lists no images")
    return images


def _check_relative(path: Path, line: int, relpath: str) -> None:
    """An image path is a normalised relative POSIX path that stays under ROOT."""
    pure = PurePosixPath(relpath)
    if pure.is_absolute() or PureWindowsPath(relpath).drive:
        why = "is absolute; give it relative to the folder"
    elif ".." in pure.parts:
        why = "has a '..' part; it must stay in the folder"
    elif "\\" in relpath or str(pure) != relpath:
        why = "is not a plain POSIX path (use '/' between names; no '.', '//' or trailing '/')"
    else:
        return
    raise TableDatasetError(f"{path}:{line}: image path {relpath!r} {why}")


def _is_train(path: Path, row: Row) -> bool:
    """The row's split: ``train`` or ``test`` exactly; False when there is no split column."""
    split = row.cells.get(SPLIT_COLUMN)
    if split is None:
        return False
    if split not in SPLITS:
        raise TableDatasetError(f"{path}:{row.line}: split {split!r} is neither 'train' nor 'test'")
    return split == "train"


def _box(path: Path, row: Row) -> tuple[float, float, float, float]:
    """The row's box; NaN in all four when images.csv has no box columns."""
    if BOX_COLUMNS[0] not in row.cells:
        return NO_BOX
    x, y, w, h = (_box_value(path, row.line, column, row.cells[column]) for column in BOX_COLUMNS)
    return (x, y, w, h)


def _box_value(path: Path, line: int, column: str, cell: str) -> float:
    """One box value: a finite float, > 0 for the size ``w, h``, >= 0 for the corner ``x, y``."""
    try:
        value = float(cell)
    except ValueError:
        why = "is not a number"
    else:
        if not math.isfinite(value):
            why = "is not finite"
        elif column in ("w", "h") and value <= 0:
            why = "must be > 0"
        elif value < 0:
            why = "must be >= 0"
        else:
            return value
    raise TableDatasetError(f"{path}:{line}: box value {column}={cell!r} {why}")


def _check_on_disk(root: Path, path: Path, images: list[_Image]) -> None:
    """Every listed image must be a file under ROOT (one walk, no stat per image)."""
    present = files_under(root)
    absent = [image for image in images if image.path not in present]
    if absent:
        first = absent[0]
        raise TableDatasetError(
            f"{path}:{first.line}: image {first.path!r} is listed but absent "
            f"from {root} ({len(absent)} listed image(s) absent)"
        )


def _images_frame(images: list[_Image], class_ids: dict[str, int]) -> pd.DataFrame:
    """The per-image table in :data:`COLUMNS` with read_cub's dtypes, sorted by image id."""
    order = sorted(images, key=lambda image: image_sort_key(image.path))
    rows = [
        (i.path, i.path, class_ids[i.class_name], i.class_name, i.is_train, *i.box) for i in order
    ]
    return pd.DataFrame(rows, columns=COLUMNS).astype(IMAGE_DTYPES)


def _taxonomy_frame(classes: dict[str, _Class], class_ids: dict[str, int]) -> pd.DataFrame:
    """The taxonomy table sorted by class id, with leaf/middle/high codes."""
    names = sorted(classes, key=class_ids.__getitem__)
    rows = [(class_ids[n], n, n, classes[n].middle, classes[n].high) for n in names]
    frame = pd.DataFrame(rows, columns=["class_id", "class_name", *LEVELS])
    return add_level_codes(frame.astype({"class_id": "int64"}))
