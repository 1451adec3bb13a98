"""``hierbench report CONFIG``: Snakemake's self-contained HTML report of a run (its tables and
figures with their captions), from a checkout or an installed package, written where the user
asks and its path printed: the same workflow, working folder and resolved config as
``hierbench run``, so the report is of that run."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from hierbench.cli.study import config_repository, prepare
from hierbench.runtools.launch import run_environment, snakemake_command
from hierbench.shipped import snakefile_arguments

DEFAULT_REPORT = "report.html"
SHOWN_LINES = 20  # of Snakemake's output, when it could not write the report


def write_report(args: argparse.Namespace) -> int:
    """Write the report of the run of ``args.config`` to ``args.out`` (default: report.html in
    the current folder) and print its path; Snakemake's last lines when it cannot."""
    config = args.config.resolve()
    out = (args.out or Path(DEFAULT_REPORT)).resolve()
    if out.suffix not in (".html", ".zip"):
        raise ValueError(f"--out {args.out}: a report is a .html file (or a .zip of one)")
    out.parent.mkdir(parents=True, exist_ok=True)
    repository = config_repository(config)
    run, resolved = prepare(config, repository)
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    extra = [*snakefile_arguments(repository), "--report", str(out)]
    made = subprocess.run(
        snakemake_command(snakemake, resolved, "1", None, extra),
        cwd=repository,
        env=run_environment(),
        capture_output=True,
        text=True,
    )
    if made.returncode != 0 or not out.is_file():
        shown = (made.stdout + made.stderr).splitlines()[-SHOWN_LINES:]
        print("\n".join([f"the report of {run} was not written:", *shown]), file=sys.stderr)
        return made.returncode or 1
    print(f"report: {out}")
    return 0


def add_report_command(commands: argparse._SubParsersAction) -> None:
    """Register ``report``."""
    parser = commands.add_parser(
        "report",
        help="write a run's HTML report (tables, figures, captions) and print its path",
        description="Write Snakemake's self-contained HTML report of the run of CONFIG: its "
        "tables and figures with their captions, and how each was made. It works from any "
        "folder, in a checkout or with an installed package; run the study first (hierbench "
        "run CONFIG), as the report shows what the run made.",
        epilog="example: hierbench report configs/tiny.yaml --out tiny-report.html",
    )
    parser.add_argument("config", type=Path, metavar="CONFIG", help="the run's config file")
    parser.add_argument(
        "--out",
        type=Path,
        help=f"where to write it (default: {DEFAULT_REPORT} in the current folder)",
    )
    parser.set_defaults(handler=write_report)
