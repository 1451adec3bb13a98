"""``hierbench runs`` and ``hierbench status``: the run folders beside the repository, and
where one run stands."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hierbench.runs import DEFAULT_RUN
from hierbench.runtools.runs_table import SORT_KEYS, list_runs, runs_json, runs_text
from hierbench.runtools.status import run_status, status_lines


def repository_of(start: Path) -> Path:
    """The repository holding ``start``: the nearest folder upwards with a Snakefile."""
    for folder in (start.resolve(), *start.resolve().parents):
        if (folder / "Snakefile").is_file():
            return folder
    raise ValueError(f"{start} is not inside a hierbench repository (no Snakefile above it)")


def repository_or_here(run: Path) -> Path:
    """The repository a run folder lies in (the nearest folder upwards with a Snakefile), so
    a command works from any folder; the working folder when the run lies in none."""
    try:
        return repository_of(run)
    except ValueError:
        return Path()


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


def status_command(args: argparse.Namespace) -> int:
    """Print a run's jobs per stage, the jobs running now and the time left."""
    repo = repository_of(args.run if args.run.exists() else Path())
    run = args.run.resolve().relative_to(repo).as_posix() if args.run.exists() else args.run
    print("\n".join(status_lines(run_status(repo, str(run)))))
    return 0


def add_status_command(commands: argparse._SubParsersAction) -> None:
    """Register ``status``."""
    status = commands.add_parser(
        "status",
        help="a run's jobs done and to do per stage, the jobs running now, the time left",
        description="Per stage the jobs done and to do (from snakemake --dag on the run's "
        "config), the jobs running now with their last log line, and the job time left "
        "estimated from the run's own finished jobs.",
        epilog="example: hierbench status runs/tiny",
    )
    status.add_argument(
        "run",
        type=Path,
        nargs="?",
        default=Path(DEFAULT_RUN),
        metavar="RUN",
        help="the run folder (a config's key run; default: the demo's results)",
    )
    status.set_defaults(handler=status_command)
