"""The dataset commands of ``hierbench``: check a dataset before a run, start a table dataset
from a folder of images, fetch the real data."""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from hierbench.cli.study import config_repository, resolved_config
from hierbench.config import load_yaml, validate_config
from hierbench.data.fetch import (
    CUB,
    NABIRDS,
    check_release_counts,
    config_lines,
    fetch_release,
    nabirds_steps,
)
from hierbench.data.init_dataset import (
    DatasetPlan,
    InitDatasetError,
    plan_dataset,
    write_dataset,
)
from hierbench.data.kinds import dataset_entry, kind_of, level_names, table_folder
from hierbench.data.quality import DatasetCheckError, check_report, check_table_splits, listed
from hierbench.data.scorable import draw_validity, unscored_lines
from hierbench.data.table_reader import read_taxonomy_csv
from hierbench.demo import write_table_demo
from hierbench.shipped import SHIPPED_FILES, shipped_file
from hierbench.splits.construction import with_labels
from hierbench.splits.sampling import SplitError

RELEASES = {CUB.name: CUB, NABIRDS.name: NABIRDS}
DEFAULT_SCHEMA = "config.schema.yaml"


def _schema(path: Path | None) -> Path:
    """The schema an option names, or the shipped one."""
    if path is None:
        return shipped_file(DEFAULT_SCHEMA)
    if not path.is_file():
        raise FileNotFoundError(f"--schema: no such file {path}")
    return path


def _config(path: Path, schema: Path | None) -> dict[str, Any]:
    """A validated config, its relative paths taken as ``hierbench run`` takes them (from the
    config's folder, or the repository's for a config inside it); a missing file named."""
    if not path.is_file():
        raise FileNotFoundError(f"CONFIG: no such file {path}")
    return resolved_config(path, config_repository(path), _schema(schema))[1]


def _shipped_or_given(path: str) -> Path:
    """A config's input path as given, or, from another working folder, the shipped file of
    that name (the config's defaults name shipped files relative to the repository)."""
    given = Path(path)
    if given.is_file() or given.name not in SHIPPED_FILES:
        return given
    return shipped_file(given.name)


def _check_release(config: dict[str, Any], name: str, kind: str) -> list[str]:
    """A real CUB or NABirds copy (source: folder) checked against its release's counts."""
    if dataset_entry(config, name).get("source") != "folder":
        raise DatasetCheckError(
            f"{name!r} renders the embedded demo (source: demo); check-dataset verifies a real "
            "copy: set source: folder and root: to it"
        )
    root = Path(dataset_entry(config, name)["root"])
    counts = check_release_counts(RELEASES[kind], root)
    lines = [f"{name}: {root} is the {kind} release"]
    return lines + [f"  {key:<24} {count:>8,}" for key, count in counts.items()]


Report = tuple[list[str], list[str], list[str]]  # lines, warnings, errors


def _check_table(config: dict[str, Any], name: str, deep: bool) -> Report:
    """A collection checked; an example collection not rendered yet is rendered into a
    temporary folder first (the same function and settings as the pipeline's rule)."""
    entry = dataset_entry(config, name)
    if entry.get("source") != "demo" or Path(table_folder(config, name)).is_dir():
        lines, warnings, errors = check_report(config, name, deep=deep)
        try:
            check_table_splits(config, [name])
        except DatasetCheckError as error:  # the plan stops on it; here the counts come first
            warnings.append(f"{error}; a run stops there")
        return lines, warnings, errors
    with tempfile.TemporaryDirectory(prefix="hierbench-example-") as staging:
        rendered = Path(staging) / "collection"
        taxonomy = read_taxonomy_csv(_shipped_or_given(entry["example_taxonomy"]))
        write_table_demo(rendered, taxonomy, **entry["demo"])
        lines, warnings, errors = check_report(config, name, deep=deep, root=rendered)
    target = table_folder(config, name)
    note = f"  (rendered here as the pipeline will render it into {target})"
    first = lines[0].replace(str(rendered), "the example collection")
    return [first, note, *lines[1:]], warnings, errors


def check_dataset(args: argparse.Namespace) -> int:
    """Validate a dataset of a config without running anything: a collection's counts and
    warnings (exit 1 when ``--deep`` finds images that cannot be read: the first 20 listed, and
    a count), or a real CUB/NABirds copy against its release."""
    config = _config(args.config, args.schema)
    kind = kind_of(config, args.name)
    warnings: list[str] = []
    errors: list[str] = []
    if kind.own_collection:
        lines, warnings, errors = _check_table(config, args.name, args.deep)
    else:
        lines = _check_release(config, args.name, kind.name)
    print("\n".join(lines))
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for error in listed(errors):
        print(f"error: {error}", file=sys.stderr)
    return 1 if errors else 0


def init_dataset_command(args: argparse.Namespace) -> int:
    """Write images.csv, taxonomy.csv and config.yaml for a folder tree of images, under a
    split whose sealed test draws score every level: the middle-disjoint default when it does,
    else a per-class split (said why), else nothing written and the reason."""
    options = {"name": args.name, "seed": args.seed, "smoke": args.smoke}
    plan = plan_dataset(args.folder, args.out, test_fraction=args.official_split, **options)
    problems = unscored_levels(plan)
    if problems and args.official_split is None:
        fallback = plan_dataset(args.folder, args.out, test_fraction=FALLBACK_TEST_SHARE, **options)
        still = unscored_levels(fallback)
        if not still:
            plan, problems = replace(fallback, notes=_fallback_notes(plan, problems)), []
        else:
            problems = [
                f"middle-disjoint (the default): {'; '.join(problems)}",
                f"per class (--official-split {FALLBACK_TEST_SHARE}): {'; '.join(still)}",
            ]
    if problems:
        raise InitDatasetError(
            f"{plan.folder}: nothing written, no split scores every level: {' | '.join(problems)}"
        )
    print("\n".join(write_dataset(plan)))
    return 0


FALLBACK_TEST_SHARE = 0.5  # each class's test share when whole middle groups cannot be scored


def unscored_levels(plan: DatasetPlan) -> list[str]:
    """Why the planned dataset's sealed test draws would leave a level unscored, one line per
    level (none: every level is scored), under its planned config (defaults from the shipped
    schema); a split that cannot be drawn at all is one line saying why."""
    config = validate_config(yaml.safe_load(plan.files[plan.config]), load_yaml(_schema(None)))
    dataset = plan.dataset()
    labelled = with_labels(dataset.images, dataset.taxonomy)
    names = level_names(config, plan.name)
    kind, entry = kind_of(config, plan.name), dataset_entry(config, plan.name)
    try:
        validity = draw_validity(kind, labelled, entry, names)
    except SplitError as error:
        return [str(error)]
    return unscored_lines(validity, names)


def _fallback_notes(default: DatasetPlan, problems: list[str]) -> tuple[str, ...]:
    """Why init-dataset wrote a per-class split instead of the middle-disjoint default."""
    return (
        f"split: protocol official, {FALLBACK_TEST_SHARE:.0%} of each class's images on the "
        f"test side (as --official-split {FALLBACK_TEST_SHARE}), because the middle-disjoint "
        "default (whole middle groups to test) would leave a level unscored:",
        *(f"  {problem}" for problem in problems),
        "  so every class is seen in training too (the CUB protocol); for held-out middle "
        "groups, gather more of them and set splits.protocol: middle-disjoint in "
        f"{default.config}",
    )


def fetch_command(args: argparse.Namespace) -> int:
    """Fetch CUB-200-2011 into DEST; say how to get NABirds into DEST."""
    if args.dest is None:  # one line naming the folder (argparse would add its usage)
        folder = RELEASES[args.dataset].folder
        raise ValueError(f"fetch {args.dataset} needs DEST, the folder to unpack {folder} into")
    if args.dataset == NABIRDS.name:
        print(nabirds_steps(args.dest))
        return 0
    folder, counts = fetch_release(CUB, args.dest, progress=not args.quiet)
    print(
        f"{folder}: {counts['images']:,} images of {counts['classes']} classes, "
        f"{counts['train']:,} official train, MD5 checked"
    )
    print("use it with these config lines:")
    print("\n".join(config_lines(CUB, folder)))
    return 0


def add_dataset_commands(commands: argparse._SubParsersAction) -> None:
    """Register check-dataset, init-dataset and fetch."""
    check = commands.add_parser(
        "check-dataset",
        help="validate a dataset of a config and print its counts",
        description="Validate a table dataset (counts per level, what makes queries weak), or "
        "a real CUB/NABirds copy against its release, without running anything.",
        epilog="example: hierbench check-dataset configs/table-example.yaml birds_of_prey_and_co",
    )
    check.add_argument("config", type=Path, metavar="CONFIG", help="the config file (YAML)")
    check.add_argument("name", metavar="NAME", help="the dataset's name under datasets:")
    check.add_argument(
        "--schema", type=Path, help=f"config schema (default: the shipped {DEFAULT_SCHEMA})"
    )
    check.add_argument("--deep", action="store_true", help="also open every image (slow)")
    check.set_defaults(handler=check_dataset)

    init = commands.add_parser(
        "init-dataset",
        help="start a table dataset from a folder tree high/middle/class/*.jpg",
        description="Write images.csv, taxonomy.csv and a config that runs the study, from a "
        "tree FOLDER/<high>/<middle>/<class>/<image>. Boxes are left out.",
        epilog="example: hierbench init-dataset photos --out my_dataset --official-split 0.5",
    )
    init.add_argument("folder", type=Path, metavar="FOLDER", help="the image tree")
    init.add_argument(
        "--out",
        type=Path,
        help="where to write the files (default: FOLDER; elsewhere, OUT/images links to FOLDER)",
    )
    init.add_argument("--name", help="the dataset's name (default: FOLDER's name)")
    init.add_argument(
        "--official-split",
        type=float,
        metavar="FRACTION",
        help="add a split column: this share of each class's images is test (default: none, "
        "the config then uses middle-disjoint splits)",
    )
    init.add_argument("--seed", type=int, default=0, help="seed of the split draw (default: 0)")
    init.add_argument(
        "--smoke",
        action="store_true",
        help="small training sizes in the config: a check of the pipeline in minutes",
    )
    init.set_defaults(handler=init_dataset_command)

    fetch = commands.add_parser(
        "fetch",
        help="download CUB-200-2011 (checked); say how to get NABirds",
        description="cub: download the official archive, check its MD5, unpack it safely into "
        "DEST and check its layout, then print the config lines. nabirds: print where to get "
        "it (its terms must be accepted by a person), how to unpack it into DEST and the "
        "config lines.",
        epilog="example: hierbench fetch cub data",
        usage="hierbench fetch DATASET DEST [--quiet]",
    )
    fetch.add_argument(
        "dataset", choices=sorted(RELEASES), metavar="DATASET", help="cub or nabirds"
    )
    fetch.add_argument(
        "dest", type=Path, nargs="?", metavar="DEST", help="the folder to unpack it into"
    )
    fetch.add_argument("--quiet", action="store_true", help="no progress bar")
    fetch.set_defaults(handler=fetch_command)
