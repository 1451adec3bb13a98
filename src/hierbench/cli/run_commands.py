"""The `hierbench` commands that act on a run folder: list the runs, show where one stands,
audit it, compare two (or one with published numbers, :mod:`hierbench.cli.compare_command`),
say what its jobs cost, resume it, open its seal. Each takes the run folder as its first
positional argument, always given (the demo's is ``results``), and works from any folder: the
repository is the one the run lies in."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from hierbench.cli.compare_command import add_compare_command
from hierbench.provenance import seal
from hierbench.provenance.artifacts import write_parquet
from hierbench.provenance.codehash import code_hash
from hierbench.provenance.makers import mix_lines
from hierbench.provenance.records import JobContext
from hierbench.provenance.verify import (
    MANIFEST_NAME,
    manifest_table,
    report_json,
    report_lines,
    verify,
)
from hierbench.runlogs import noted_repository
from hierbench.runs import logs_folder
from hierbench.runtools import jobstats, resume
from hierbench.runtools.against import TOLERANCE, against_lines, check_against
from hierbench.runtools.compare import require_run
from hierbench.runtools.configs import run_key, shown_path
from hierbench.runtools.run_index import indexed_runs
from hierbench.runtools.runs_table import (
    SORT_KEYS,
    indexed_rows,
    list_runs,
    runs_json,
    runs_text,
    shown_rows,
    sorted_rows,
    user_configs,
)
from hierbench.runtools.status import run_status, status_lines, status_record
from hierbench.shipped import rules_folder, snakefile_arguments


def repository_of(start: Path) -> Path:
    """The repository holding ``start``: the nearest folder upwards with a Snakefile, else
    the one a run folder's logs name (a run on a scratch disk, or the working folder where an
    installed package ran it), else the nearest folder upwards where Snakemake ran (a
    project folder of an installed package's runs)."""
    upwards = (start.resolve(), *start.resolve().parents)
    for folder in upwards:
        if (folder / "Snakefile").is_file():
            return folder
    noted = noted_repository(start)
    if noted is not None and ((noted / "Snakefile").is_file() or (noted / ".snakemake").is_dir()):
        return noted
    for folder in upwards:
        if (folder / ".snakemake").is_dir():
            return folder
    raise ValueError(
        f"{start.resolve()} is not inside a hierbench repository or a folder hierbench run "
        "worked in (no Snakefile or .snakemake above it)"
    )


def existing_folder(path: Path) -> Path:
    """``path``, or its nearest existing parent folder (a run folder not made yet is looked
    for from where it will be)."""
    return next(folder for folder in (path, *path.resolve().parents) if folder.exists())


def repository_or_here(run: Path) -> Path:
    """The repository a run folder lies in or was run from (see ``repository_of``), so a
    command works from any folder; the working folder when there is none."""
    try:
        return repository_of(run)
    except ValueError:
        return Path()


def runs_command(args: argparse.Namespace) -> int:
    """Print the runs table: the repository's (or this project folder's) runs, then those
    `hierbench run` started elsewhere (the index of ``runtools.run_index``)."""
    indexed = indexed_runs()
    try:
        repo: Path | None = repository_of(args.repo or Path())
    except ValueError:
        if args.repo is not None or not indexed:
            raise
        repo = None  # a folder of no run: the index alone
    rows = list_runs(repo, args.sort, user_configs(indexed)) if repo is not None else []
    listed = {str((repo / row.name).resolve()) for row in rows} if repo is not None else set()
    rows = shown_rows(rows, repo or Path(), Path())  # paths that open from this folder
    others = indexed_rows([entry for entry in indexed if entry.run not in listed], args.sort)
    rows = sorted_rows(rows + shown_rows(others, Path(), Path()), args.sort)
    print(json.dumps(runs_json(rows), indent=2) if args.json else runs_text(rows))
    return 0


def add_runs_command(commands: argparse._SubParsersAction) -> None:
    """Register ``runs``."""
    runs = commands.add_parser(
        "runs",
        help="list the run folders: config, state, jobs, last change, headline mAP",
        description="One table of the run folders of this repository's configs (config.yaml, "
        "configs/*.yaml and any other config file Snakemake ran here), then of the runs "
        "`hierbench run` started anywhere else (an index in your data folder): state (complete, "
        "running, failed, stopped, stale lock), jobs done / planned from the newest Snakemake "
        "log, last change, and each dataset's mean hierarchy mAP per factorial arm. Run folders "
        "and configs (the file you gave hierbench run) are printed as they open from here.",
        epilog="example: hierbench runs --sort last_change",
    )
    runs.add_argument("--repo", type=Path, help="a folder in the repository (default: here)")
    runs.add_argument(
        "--sort", choices=SORT_KEYS, default="name", help="the column to sort by (default: name)"
    )
    runs.add_argument("--json", action="store_true", help="JSON records instead of a table")
    runs.set_defaults(handler=runs_command)


def status_command(args: argparse.Namespace) -> int:
    """Print a run's jobs per stage, the jobs running now and the time left, its paths as
    they open from this folder (the config the user ran, where the index knows it)."""
    repo = repository_of(existing_folder(args.run))
    typed = args.run if args.run.exists() or args.run.is_absolute() else repo / args.run
    run = run_key(repo, typed)  # a folder not made yet: as its config names it
    status = run_status(repo, run, Path())
    own = user_configs(indexed_runs()).get(str((repo / run).resolve()))
    if own is not None:
        status = replace(status, config=shown_path(Path(own), Path()))
    if args.json:
        print(json.dumps(status_record(status), indent=2))
    else:
        print("\n".join(status_lines(status)))
    return 0


def add_status_command(commands: argparse._SubParsersAction) -> None:
    """Register ``status``."""
    status = commands.add_parser(
        "status",
        help="a run's jobs done and to do per stage, the jobs running now, the time left",
        description="Per stage the jobs done and to do (from snakemake --dag on the run's "
        "config), the jobs running now with their last log line, and the job time left "
        "estimated from the run's own finished jobs (or, for a rule none of them ran yet, from "
        "Snakemake's records of an earlier run of the folder). After Ctrl-C or a kill, the "
        "jobs the run ended are failed and to do again. Paths are printed as they open from here.",
        epilog="example: hierbench status runs/tiny",
    )
    _add_run_argument(status)
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.set_defaults(handler=status_command)


def _add_run_argument(parser: argparse.ArgumentParser) -> None:
    """The run folder, the first positional argument of every command that acts on a run,
    always given (the demo's is results)."""
    parser.add_argument(
        "run",
        type=Path,
        metavar="RUN",
        help="the run folder (a config's key run: results for the demo, runs/tiny, ...)",
    )


def _in_run(path: str, run: Path) -> str:
    """An artifact's path as the run folder names it (``cub/eval/HS-42.parquet``)."""
    return Path(path).relative_to(run).as_posix()


def _audit(args: argparse.Namespace) -> int:
    """Verify every artifact against its record, name a run whose records mix numeric modes
    or software, write the manifest, and (``--against``) check the run against another; exit 1
    on any failure; a folder that is not a run is one error."""
    require_run(args.run)
    if args.against is not None:
        require_run(args.against)
    base = args.base if args.base is not None else repository_or_here(args.run)
    findings = verify(args.run, base)
    mixed = mix_lines((_in_run(f.path, args.run), f.record) for f in findings if f.record)
    against = check_against(args.run, args.against, args.tolerance) if args.against else None
    reseals = seal.list_reseals(args.run)
    if args.json:
        document = json.loads(report_json(findings, reseals))
        print(
            json.dumps({**document, "mixed": mixed, "against": against}, indent=2, sort_keys=True)
        )
    else:
        lines = seal.reseal_lines(reseals) + mixed + report_lines(findings)
        print("\n".join(lines + (against_lines(against) if against else [])))
    table = manifest_table(findings)
    if not table.empty:
        job = JobContext(rule="cli:audit", code=code_hash(["provenance.verify"]))
        write_parquet(table, args.run / MANIFEST_NAME, job, sort_by=["path"])
    failed = any(not f.passed for f in findings) or bool(mixed)
    return 1 if failed or (against is not None and not against["holds"]) else 0


def _add_audit(commands: argparse._SubParsersAction) -> None:
    """The `audit` subcommand."""
    audit = commands.add_parser(
        "audit",
        help="verify every artifact against its provenance",
        epilog="example: hierbench audit runs/tiny --against ../other-lab/runs/tiny",
    )
    _add_run_argument(audit)
    audit.add_argument("--json", action="store_true", help="machine-readable output")
    audit.add_argument(
        "--base",
        type=Path,
        help="folder the recorded paths are relative to (default: the run's repository)",
    )
    audit.add_argument(
        "--against",
        type=Path,
        metavar="OTHER_RUN",
        help="also check the run against another run of the same config (another lab's, "
        "another machine's): the same bytes where both were made in one portable numeric mode "
        "by the same software, else every table's numbers within --tolerance",
    )
    audit.add_argument(
        "--tolerance",
        type=float,
        default=TOLERANCE,
        help=f"largest difference of a table's number that --against accepts where the "
        f"promise is numbers, not bytes (default {TOLERANCE})",
    )
    audit.set_defaults(handler=_audit)


def _add_logs_argument(parser: argparse.ArgumentParser) -> None:
    """The run's log folder, for the commands that read or move its logs."""
    parser.add_argument("--logs", type=Path, help="the run's logs (default: RUN/logs)")


def _logs_of(args: argparse.Namespace) -> Path:
    """The log folder ``--logs`` names, or the run's own (``RUN/logs``)."""
    return args.logs if args.logs is not None else Path(logs_folder(args.run.as_posix()))


def _jobs(args: argparse.Namespace) -> int:
    """Print what the run's jobs cost (wall, CPU, peak memory) per rule or per stage."""
    logs = _logs_of(args)
    if not logs.is_dir():
        raise FileNotFoundError(f"log folder {logs} of run {args.run} does not exist")
    rules = args.rules if args.rules is not None else rules_folder(repository_or_here(args.run))
    jobs = jobstats.job_costs(args.run, logs, jobstats.rule_stages(rules))
    table, totals = jobstats.rule_costs(jobs, args.by), jobstats.total_costs(jobs)
    if args.json:
        groups = json.loads(table.to_json(orient="records"))
        print(json.dumps({"by": args.by, "groups": groups, "totals": totals}, indent=2))
    else:
        print(jobstats.render_costs(table, totals))
    return 0


def _add_jobs(commands: argparse._SubParsersAction) -> None:
    """The `jobs` subcommand."""
    jobs = commands.add_parser(
        "jobs",
        help="wall and CPU seconds, peak memory of a run's jobs",
        epilog="example: hierbench jobs runs/tiny --by stage",
    )
    _add_run_argument(jobs)
    _add_logs_argument(jobs)
    jobs.add_argument(
        "--rules",
        type=Path,
        help="folder of the stages' .smk (default: the run's repository's rules/)",
    )
    jobs.add_argument("--by", choices=("rule", "stage"), default="rule", help="group the jobs")
    jobs.add_argument("--json", action="store_true", help="machine-readable output")
    jobs.set_defaults(handler=_jobs)


def _unseal(args: argparse.Namespace) -> int:
    """Archive a dataset's lock, evaluations and access log, so a changed lock can be written."""
    logs = _logs_of(args)
    paths = seal.SealPaths.of(args.dataset, args.run, logs)
    if not paths.lock.is_file() and not seal.sealed_test_was_read(paths):
        print(f"{args.dataset}: no Final lock and no sealed read; nothing to unseal")
        return 0
    folder = seal.archive_seal(paths, args.reason, [f"unsealed by hand: {args.reason}"])
    print(f"{args.dataset}: the seal is archived in {folder}; run snakemake to write a new lock")
    return 0


def _add_unseal(commands: argparse._SubParsersAction) -> None:
    """The `unseal` subcommand."""
    unseal = commands.add_parser(
        "unseal",
        help="archive a dataset's Final lock and its evaluations, with a reason",
        epilog='example: hierbench unseal runs/paper cub --reason "a new checklist version"',
    )
    _add_run_argument(unseal)
    unseal.add_argument("dataset", metavar="DATASET", help="the dataset whose seal is opened")
    unseal.add_argument("--reason", required=True, help="why the seal is opened (recorded)")
    _add_logs_argument(unseal)
    unseal.set_defaults(handler=_unseal)


def _resume(args: argparse.Namespace) -> int:
    """Release a killed run's stale lock and rerun its incomplete jobs (never a live run's)."""
    repo = repository_or_here(args.run)
    run = run_key(repo, args.run)
    config, locked = resume.resume_plan(repo, run)
    snakemake = [str(Path(sys.executable).with_name("snakemake")), *snakefile_arguments(repo)]
    snakemake += args.targets
    snakemake += ["--configfile", str(config)]  # after the targets: it takes several values
    if locked:
        print(f"{run}: releasing the stale lock of a killed run", file=sys.stderr)
        subprocess.run([*snakemake, "--unlock"], cwd=repo, check=True, capture_output=True)
    return subprocess.run([*snakemake, "--rerun-incomplete"], cwd=repo, check=False).returncode


def _add_resume(commands: argparse._SubParsersAction) -> None:
    """The `resume` subcommand."""
    again = commands.add_parser(
        "resume",
        help="release a killed run's lock and finish the run",
        epilog="example: hierbench resume runs/tiny",
    )
    _add_run_argument(again)
    again.add_argument("targets", nargs="*", help="only these files (default: the whole run)")
    again.set_defaults(handler=_resume)


def add_run_commands(commands: argparse._SubParsersAction) -> None:
    """Register every command that acts on a run folder."""
    add_runs_command(commands)
    add_status_command(commands)
    _add_audit(commands)
    add_compare_command(commands)  # two runs, or a run against published numbers
    _add_resume(commands)
    _add_unseal(commands)
    _add_jobs(commands)
