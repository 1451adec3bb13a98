"""``hierbench runs``: the run folders beside the repository, as text or JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hierbench.runtools.runs_table import SORT_KEYS, list_runs, runs_json, runs_text


def repository_of(start: Path) -> Path:
    """The repository holding ``start``: the nearest folder upwards with a Snakefile."""
    for folder in (start.resolve(), *start.resolve().parents):
        if (folder / "Snakefile").is_file():
            return folder
    raise ValueError(f"{start} is not inside a hierbench repository (no Snakefile above it)")


def runs_command(args: argparse.Namespace) -> int:
    """Print the runs table."""
    rows = list_runs(repository_of(args.repo), args.sort)
    print(json.dumps(runs_json(rows), indent=2) if args.json else runs_text(rows))
    return 0


def add_runs_command(commands: argparse._SubParsersAction) -> None:
    """Register ``runs``."""
    runs = commands.add_parser(
        "runs",
        help="list the run folders: config, state, jobs, last change, headline mAP",
        description="One table of the run folders of this repository's configs (config.yaml, "
        "configs/*.yaml): state (complete, running, failed, stopped, stale lock), jobs done / "
        "planned from the newest Snakemake log, last change, and each dataset's mean hierarchy "
        "mAP per factorial arm.",
        epilog="example: hierbench runs --sort last_change",
    )
    runs.add_argument(
        "--repo", type=Path, default=Path(), help="a folder in the repository (default: here)"
    )
    runs.add_argument(
        "--sort", choices=SORT_KEYS, default="name", help="the column to sort by (default: name)"
    )
    runs.add_argument("--json", action="store_true", help="JSON records instead of a table")
    runs.set_defaults(handler=runs_command)
