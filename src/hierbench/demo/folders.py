"""The demo's drawn birds (:mod:`hierbench.demo.birds`) written in the exact CUB-200-2011 and
NABirds on-disk layouts, and in the table layout of a collection of your own (images.csv and
taxonomy.csv, :mod:`hierbench.data.table_reader`). Each image's pose, scale, position, background,
lighting, noise and occlusion come from a SHA256 of (seed, dataset, class id, image index).
JPEGs are written at a fixed quality without metadata, so equal arguments give byte-identical
folders.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import uuid
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from hierbench.data.layouts import read_classes
from hierbench.demo.birds import BirdLook, class_look, digest, draw_sprite, render_image, seeded_rng
from hierbench.provenance.artifacts import atomic_path

logger = logging.getLogger(__name__)

TAXONOMY_COLUMNS = ("class_id", "class_name", "leaf", "middle", "high")
JPEG_QUALITY = 90


@dataclass(frozen=True, order=True)
class _Image:
    """One image to write: id, path under ``images/``, class, index k of ``per_class``."""

    image_id: str
    relpath: str
    class_id: int
    k: int
    per_class: int

    @property
    def is_train(self) -> bool:
        """The first half (rounded up) of each class's images is official train, the rest test."""
        return self.k < (self.per_class + 1) // 2


def _render_class(job: tuple[BirdLook, list[tuple[Path, str]], int, int, str]) -> list[tuple]:
    """Render and atomically write every image of one class; return their boxes in order."""
    look, targets, size, seed, dataset = job
    sprite = draw_sprite(look, 2 * size)
    boxes = []
    for path, key in targets:
        image, box = render_image(sprite, look, seeded_rng(seed, dataset, "image", key), size)
        with atomic_path(path) as tmp:
            image.save(tmp, format="JPEG", quality=JPEG_QUALITY, subsampling=2, optimize=False)
        boxes.append(box)
    return boxes


def check_taxonomy(taxonomy: pd.DataFrame) -> pd.DataFrame:
    """Require the taxonomy columns, unique class ids and leaves, and one high per middle."""
    missing = [column for column in TAXONOMY_COLUMNS if column not in taxonomy.columns]
    if missing:
        raise ValueError(f"taxonomy lacks column(s) {missing}; expected {list(TAXONOMY_COLUMNS)}")
    for column in ("class_id", "leaf"):
        duplicated = taxonomy[column][taxonomy[column].duplicated()]
        if len(duplicated):
            raise ValueError(f"taxonomy lists {column} {duplicated.iloc[0]!r} more than once")
    highs = taxonomy.groupby("middle")["high"].nunique()
    if (highs > 1).any():
        middle = sorted(highs[highs > 1].index)[0]
        raise ValueError(f"taxonomy middle {middle!r} lies in {highs[middle]} highs")
    return taxonomy.sort_values("class_id", kind="mergesort").reset_index(drop=True)


def select_demo_classes(taxonomy: pd.DataFrame, n: int, seed: int) -> list[int]:
    """Pick ``n`` leaf classes rich in hierarchy, so every strict level keeps positives.

    The first ``max(2, n // 4)`` high groups (those with most multi-leaf middles first) take
    middles round-robin, two leaves per middle, then their further leaves; then the other highs
    the same way. Ties are broken by a seeded hash of the labels. Returns sorted class ids.
    """
    table = check_taxonomy(taxonomy)
    if not 1 <= n <= len(table):
        raise ValueError(f"cannot select {n} demo classes from a taxonomy of {len(table)}")
    leaves = {
        m: sorted(g["class_id"], key=lambda c: _hash_int(seed, "pick-leaf", c))
        for m, g in table.groupby("middle")
    }
    middles = {
        h: sorted(
            set(g["middle"]), key=lambda m: (-min(len(leaves[m]), 2), _hash_int(seed, "m", m))
        )
        for h, g in table.groupby("high")
    }
    rich = {h: (sum(len(leaves[m]) > 1 for m in ms), len(ms)) for h, ms in middles.items()}
    highs = sorted(
        middles, key=lambda h: (-min(rich[h][0], 2), -min(rich[h][1], 2), _hash_int(seed, "h", h))
    )
    first = min(len(highs), max(2, n // 4))
    order: list[int] = []
    for group in (highs[:first], highs[first:]):
        for depth in range(max((len(middles[h]) for h in group), default=0)):
            order += [
                c for h in group if depth < len(middles[h]) for c in leaves[middles[h][depth]][:2]
            ]
        order += [c for h in group for m in middles[h] for c in leaves[m][2:]]
    return sorted(int(c) for c in order[:n])


def _hash_int(*parts: object) -> int:
    """A stable 64-bit integer from SHA256 of the parts (for deterministic orderings)."""
    return int.from_bytes(digest(*parts)[:8], "little")


def write_cub_demo(
    root: str | os.PathLike[str],
    taxonomy: pd.DataFrame,
    *,
    images_per_class: int = 12,
    image_size: int = 128,
    seed: int = 0,
    classes: int | None = None,
    classes_file: str | os.PathLike[str],
    workers: int | None = None,
) -> Path:
    """Render a demo folder in the exact CUB_200_2011 layout, with the real ``classes.txt``.

    Images are ``images/<NNN.Class_Name>/<Class_Name>_<k>.jpg`` with integer ids in class
    order; boxes are written as floats with one decimal, as CUB does.
    """
    names = read_classes(classes_file)
    images: list[_Image] = []
    for class_id in _chosen_classes(taxonomy, names, classes, seed, images_per_class):
        stem = names[class_id].split(".", 1)[-1]
        for k in range(images_per_class):
            path = f"{names[class_id]}/{stem}_{k + 1:04d}.jpg"
            images.append(_Image(str(len(images) + 1), path, class_id, k, images_per_class))
    copies = {"classes.txt": classes_file}
    render = (taxonomy, image_size, seed, "cub", workers)
    return _write_layout(Path(root), images, copies, "{:.1f}", render)


def write_nabirds_demo(
    root: str | os.PathLike[str],
    taxonomy: pd.DataFrame,
    *,
    images_per_class: int = 8,
    image_size: int = 128,
    seed: int = 0,
    classes: int | None = None,
    classes_file: str | os.PathLike[str],
    hierarchy_file: str | os.PathLike[str],
    workers: int | None = None,
) -> Path:
    """Render a demo folder in the exact NABirds layout, with the real classes and hierarchy.

    Images are ``images/<4-digit class id>/<id without dashes>.jpg`` with UUID-format ids from
    :func:`nabirds_image_id`, listed in id order; boxes are integers, as NABirds writes them.
    """
    names = read_classes(classes_file)
    images = []
    for class_id in _chosen_classes(taxonomy, names, classes, seed, images_per_class):
        for k in range(images_per_class):
            image_id = nabirds_image_id(seed, class_id, k)
            path = f"{class_id:04d}/{image_id.replace('-', '')}.jpg"
            images.append(_Image(image_id, path, class_id, k, images_per_class))
    if len({image.image_id for image in images}) != len(images):
        raise RuntimeError("demo image ids collide; choose another seed")
    copies = {"classes.txt": classes_file, "hierarchy.txt": hierarchy_file}
    render = (taxonomy, image_size, seed, "nabirds", workers)
    return _write_layout(Path(root), sorted(images), copies, "{:d}", render)


TABLE_PHOTOS = "photos"  # the example collection keeps its images under photos/<genus>/


def write_table_demo(
    root: str | os.PathLike[str],
    taxonomy: pd.DataFrame,
    *,
    images_per_class: int = 8,
    image_size: int = 128,
    seed: int = 0,
    classes: int | None = None,
    workers: int | None = None,
) -> Path:
    """Render an example collection in the table layout: ``images.csv`` (path, class, split,
    box) and ``taxonomy.csv`` (class, middle, high), images under ``photos/<middle>/``.

    ``taxonomy`` has the generic columns (class_id, class_name, leaf, middle, high); the first
    half of each class's images is ``train``, the rest ``test``; boxes are integers.
    """
    table = check_taxonomy(taxonomy)
    chosen = _chosen_classes(
        table,
        dict(zip(table["class_id"], table["class_name"], strict=True)),
        classes,
        seed,
        images_per_class,
    )
    rows = table.set_index("class_id")
    images = []
    for class_id in chosen:
        slug = str(rows.loc[class_id, "class_name"]).replace(" ", "_")
        folder = f"{TABLE_PHOTOS}/{rows.loc[class_id, 'middle']}"
        for k in range(images_per_class):
            path = f"{folder}/{slug}_{k + 1:03d}.jpg"
            images.append(_Image(path, path, class_id, k, images_per_class))
    with _staging(Path(root)) as stage:
        boxes = _render_all(stage, images, (table, image_size, seed, "table", workers), "")
        lines = ["path,class,split,x,y,w,h"] + [
            ",".join(
                [
                    i.relpath,
                    str(rows.loc[i.class_id, "class_name"]),
                    "train" if i.is_train else "test",
                ]
                + [f"{v:d}" for v in boxes[i.image_id]]
            )
            for i in images
        ]
        tree = ["class,middle,high"] + [
            f"{rows.loc[c, 'class_name']},{rows.loc[c, 'middle']},{rows.loc[c, 'high']}"
            for c in chosen
        ]
        for name, text in (("images.csv", lines), ("taxonomy.csv", tree)):
            with atomic_path(stage / name) as tmp:
                tmp.write_bytes(("\n".join(text) + "\n").encode("utf-8"))
    return Path(root)


def nabirds_image_id(seed: int, class_id: int, k: int) -> str:
    """A NABirds-style UUID string derived from SHA256 of (seed, class, index): no randomness."""
    return str(uuid.UUID(bytes=digest("nabirds-demo", seed, class_id, k)[:16], version=4))


def _chosen_classes(
    taxonomy: pd.DataFrame, names: dict[int, str], n: int | None, seed: int, per_class: int
) -> list[int]:
    """Check the taxonomy against the class list; return every class id or a selected subset."""
    if per_class < 1:
        raise ValueError(f"images_per_class must be at least 1, got {per_class}")
    table = check_taxonomy(taxonomy)
    unknown = sorted(set(table["class_id"].astype(int)) - set(names))
    if unknown:
        raise ValueError(f"taxonomy class id(s) {unknown[:5]} are not in the classes file")
    if n is None:
        return [int(c) for c in table["class_id"]]
    return select_demo_classes(table, n, seed)


def _write_layout(
    root: Path, images: list[_Image], copies: dict, box_format: str, render: tuple
) -> Path:
    """Stage the shipped files, the rendered images and the four per-image tables, then publish."""
    with _staging(root) as stage:
        for name, source in copies.items():
            with atomic_path(stage / name) as tmp:
                shutil.copyfile(source, tmp)
        boxes = _render_all(stage, images, render)
        tables = {
            "images.txt": [f"{i.image_id} {i.relpath}" for i in images],
            "image_class_labels.txt": [f"{i.image_id} {i.class_id}" for i in images],
            "train_test_split.txt": [f"{i.image_id} {int(i.is_train)}" for i in images],
            "bounding_boxes.txt": [
                " ".join([i.image_id, *(box_format.format(v) for v in boxes[i.image_id])])
                for i in images
            ],
        }
        for name, lines in tables.items():
            with atomic_path(stage / name) as tmp:
                tmp.write_bytes(("\n".join(lines) + "\n").encode("utf-8"))
    return root


def _render_all(
    stage: Path, images: list[_Image], render: tuple, images_dir: str = "images"
) -> dict[str, tuple]:
    """Render every image, one task per class (in parallel when workers > 1); boxes per id.

    ``render`` is (taxonomy, image size, seed, dataset name, workers); image paths are relative
    to ``stage / images_dir``.
    """
    taxonomy, size, seed, dataset, workers = render
    if size < 32:
        raise ValueError(f"image_size must be at least 32 pixels, got {size}")
    rows = check_taxonomy(taxonomy).set_index("class_id")
    by_class: dict[int, list[_Image]] = {}
    for image in images:
        by_class.setdefault(image.class_id, []).append(image)
    jobs = []
    for class_id, members in sorted(by_class.items()):
        row = rows.loc[class_id]
        look = class_look(seed, str(row["leaf"]), str(row["middle"]), str(row["high"]))
        targets = [(stage / images_dir / i.relpath, f"{class_id}/{i.k}") for i in members]
        jobs.append((look, targets, size, seed, dataset))
    workers = workers or os.cpu_count() or 1
    if workers > 1 and len(jobs) > 1:
        with ProcessPoolExecutor(max_workers=min(workers, len(jobs))) as pool:
            results = list(pool.map(_render_class, jobs, chunksize=2))
    else:
        results = [_render_class(job) for job in jobs]
    members = [i.image_id for _, group in sorted(by_class.items()) for i in group]
    logger.info("rendered %d %s demo images of %d classes", len(members), dataset, len(jobs))
    return dict(zip(members, (box for boxes in results for box in boxes), strict=True))


@contextlib.contextmanager
def _staging(root: Path) -> Iterator[Path]:
    """Build the folder beside ``root`` and rename it into place only when complete."""
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise FileExistsError(
            f"demo folder {root} already exists and is not empty; remove it first"
        )
    stage = root.with_name(f".{root.name}.partial")
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    try:
        yield stage
        if root.exists():
            root.rmdir()
        os.replace(stage, root)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
