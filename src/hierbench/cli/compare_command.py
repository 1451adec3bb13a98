"""The `compare` command of `hierbench`: two run folders side by side (what differs and why), or,
with ``--published``, a run's per-seed numbers beside a published per-seed table (did the run
reproduce them?)."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

from hierbench.effects.per_seed_sources import (
    demo_datasets,
    read_run_or_table,
    recorded_test_images,
)
from hierbench.effects.reproduction import (
    DEFAULT_CONFIDENCE,
    DEFAULT_MARGIN,
    Reproduction,
    check_settings,
    compare_to_published,
)
from hierbench.effects.reproduction_report import demo_note, report_json, report_markdown
from hierbench.provenance.artifacts import atomic_path
from hierbench.runtools.compare import compare_runs_report, render_markdown

USAGE = (
    "%(prog)s [-h] [--json] RUN_A RUN_B\n"
    "       %(prog)s [-h] [--json] [--margin MAP] [--confidence LEVEL] [--out FILE.csv]\n"
    "                         RUN_OR_TABLE --published TABLE"
)
# The help keeps its line breaks (the parser's formatter is raw): wrapped here.
DESCRIPTION = textwrap.fill(
    "With two run folders: what differs between them and why, then their tables side by side. "
    "With --published: each planned endpoint (a dataset's five simple effects on mean "
    "hierarchy mAP) and each arm's mean hierarchy mAP in the run and in the published per-seed "
    "table (or another run), their difference run − published with an interval from both "
    "studies' seeds and, where their test images differ or may, both studies' test images, "
    "and a verdict: equivalent within the margin, differs (by less than the margin), or too "
    "uncertain to say.",
    width=96,
)


def _compare_runs(args: argparse.Namespace) -> int:
    """Compare two run folders: what differs, why, and the tables side by side (exit 0 either
    way; a folder that is not a run is an error)."""
    if args.run_b is None:
        raise ValueError("compare: name a second run folder RUN_B, or --published TABLE")
    given = [
        option
        for option, value, default in (
            ("--out", args.out, None),
            ("--margin", args.margin, DEFAULT_MARGIN),
            ("--confidence", args.confidence, DEFAULT_CONFIDENCE),
        )
        if value != default
    ]
    if given:
        raise ValueError(f"compare: {', '.join(given)} go(es) with --published TABLE only")
    report = compare_runs_report(args.run_a, args.run_b)
    print(
        json.dumps(report, indent=2, ensure_ascii=False) if args.json else render_markdown(report)
    )
    return 0


def _check_out(out: Path | None) -> None:
    """``--out`` must name a CSV file (not a folder), so the table is never written elsewhere."""
    if out is None:
        return
    if out.suffix.lower() != ".csv":
        raise ValueError(f"--out: {out} must end in .csv")
    if out.is_dir():
        raise ValueError(f"--out: {out} is a folder; name a CSV file")


def _write_csv(reproduction: Reproduction, out: Path) -> None:
    """Every compared row at full precision, written to a temporary file then renamed."""
    with atomic_path(out) as temporary:
        reproduction.rows.to_csv(temporary, index=False, na_rep="NaN", lineterminator="\n")


def _compare_published(args: argparse.Namespace) -> int:
    """A run's (or a per-seed table's) planned endpoints and arms beside a published per-seed
    table: both estimates, the difference, its Welch interval and a verdict in words."""
    if args.run_b is not None:
        raise ValueError(f"compare: give RUN_B ({args.run_b}) or --published, not both")
    _check_out(args.out)
    check_settings(args.confidence, args.margin)
    run = read_run_or_table(args.run_a, "RUN_OR_TABLE")
    published = read_run_or_table(args.published, "--published")
    sources = (str(args.run_a), str(args.published))
    datasets = set(run.table["dataset"]) | set(published.table["dataset"])
    images = (recorded_test_images(run, datasets), recorded_test_images(published, datasets))
    reproduction = compare_to_published(
        run.table, published.table, sources, args.confidence, args.margin, images
    )
    demo = demo_datasets(run, run.table["dataset"])
    if args.json:
        note = demo_note(sources[0], demo)
        if note:
            print(note, file=sys.stderr)
        print(json.dumps(report_json(reproduction, demo), indent=2, ensure_ascii=False))
    else:
        print(report_markdown(reproduction, demo))
    if args.out is not None:
        _write_csv(reproduction, args.out)
        print(f"{len(reproduction.rows)} rows -> {args.out}", file=sys.stderr)
    return 0


def _compare(args: argparse.Namespace) -> int:
    """Two runs, or a run against published numbers (``--published``)."""
    return _compare_published(args) if args.published is not None else _compare_runs(args)


def add_compare_command(commands: argparse._SubParsersAction) -> None:
    """The `compare` subcommand, in both forms."""
    compare = commands.add_parser(
        "compare",
        help="compare two run folders (first differences, stages, tables), or a run with "
        "published per-seed numbers (--published)",
        usage=USAGE,
        description=DESCRIPTION,
        epilog="example: hierbench compare runs/tiny runs/tiny-lr6; hierbench compare results "
        "--published tests/fixtures/published/paper_per_seed_map.csv",
    )
    compare.add_argument(
        "run_a",
        type=Path,
        metavar="RUN_A",
        help="run folder A (e.g. results); with --published, a run folder or a per-seed table "
        "(parquet or CSV)",
    )
    compare.add_argument(
        "run_b", type=Path, nargs="?", metavar="RUN_B", help="run folder B (e.g. runs/tiny)"
    )
    compare.add_argument("--json", action="store_true", help="machine-readable output")
    compare.add_argument(
        "--published",
        type=Path,
        metavar="TABLE",
        help="a published per-seed table (dataset, geometry, loss, seed, level, metric, value; "
        "mean_hierarchy derived from middle and high where it lacks it), or another run folder",
    )
    compare.add_argument(
        "--margin",
        type=float,
        default=DEFAULT_MARGIN,
        metavar="MAP",
        help="with --published: the equivalence margin in mAP; a difference whose two one-sided "
        "tests put it inside ±MAP reads equivalent within the margin",
    )
    compare.add_argument(
        "--confidence",
        type=float,
        default=DEFAULT_CONFIDENCE,
        metavar="LEVEL",
        help="with --published: the intervals' confidence level",
    )
    compare.add_argument(
        "--out", type=Path, metavar="FILE.csv", help="with --published: also write every row"
    )
    compare.set_defaults(handler=_compare)
