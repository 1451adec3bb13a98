"""The `hierbench` command: the library's functions for use outside Snakemake.

Each subcommand calls the same function a rule calls, so results made by hand and by the
pipeline agree.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from hierbench import __version__
from hierbench.cli.dataset_commands import add_dataset_commands
from hierbench.cli.effect_commands import add_effect_commands
from hierbench.cli.runs_command import add_runs_command, add_status_command, repository_or_here
from hierbench.config import ConfigError, check_inputs_exist, load_config
from hierbench.effects import EffectsError
from hierbench.provenance import codehash, seal
from hierbench.provenance.artifacts import write_parquet
from hierbench.provenance.codehash import code_hash
from hierbench.provenance.records import JobContext
from hierbench.provenance.verify import (
    MANIFEST_NAME,
    manifest_table,
    report_json,
    report_lines,
    verify,
)
from hierbench.runs import DEFAULT_RUN, logs_folder
from hierbench.runtools import jobstats, resume
from hierbench.runtools.compare import NotARunError, compare_runs_report, render_markdown
from hierbench.shipped import shipped_file
from hierbench.stages.taxonomy import build_cub_taxonomy, build_nabirds_taxonomy
from hierbench.taxonomy import DEFAULT_FUZZY_MARGIN, DEFAULT_FUZZY_THRESHOLD, TaxonomyError

# Shipped files the options default to (found from any working folder, see hierbench.shipped).
DEFAULT_ALIASES = "cub_aliases.json"
DEFAULT_SCHEMA = "config.schema.yaml"


def _input_file(option: str, path: Path | None, default: str | None = None) -> Path:
    """The file an option names, or the shipped ``default`` when it names none.

    A missing file is an error naming the option (not a bare "No such file"). The shipped
    default is given relative to the working folder when it lies below it, as the pipeline
    names it, so a run from the repository root records the same path.
    """
    if path is None and default is not None:
        shipped = shipped_file(default)
        return shipped.relative_to(Path.cwd()) if shipped.is_relative_to(Path.cwd()) else shipped
    if path is None or not path.is_file():
        what = "not a file" if path is not None and path.exists() else "no such file"
        raise FileNotFoundError(f"{option}: {what} {path}")
    return path


def _config_check(args: argparse.Namespace) -> int:
    """Validate a config file and print it with every default filled in."""
    schema = _input_file("--schema", args.schema, DEFAULT_SCHEMA)
    config = load_config(_input_file("FILE", args.file), schema)
    if args.inputs:
        check_inputs_exist(config)
    json.dump(config, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    return 0


def _code_hash(args: argparse.Namespace) -> int:
    """Print the code hash a rule declaring these modules gets, then each module it covers
    with the hash of its normalised form (``--form`` prints that form instead)."""
    if args.form:
        for name in args.modules:
            print(codehash.normalised_form(codehash.module_path(name).read_text(encoding="utf-8")))
        return 0
    print(code_hash(args.modules))
    closure = codehash.module_closure(tuple(sorted(set(args.modules))))
    print(f"covers {len(closure)} modules (hash of each without comments, docstrings, layout):")
    for name in closure:
        print(f"  {codehash.module_hash(name)}  {name}")
    return 0


def _cli_job(command: str, inputs: Sequence[Path], **params: object) -> JobContext:
    """Provenance context of a command-line run, with the same code hash a rule would get."""
    return JobContext(
        rule=f"cli:{command}",
        params={
            key: str(value) if isinstance(value, Path) else value for key, value in params.items()
        },
        inputs=tuple(str(path) for path in inputs),
        code=code_hash(["stages.taxonomy"]),
    )


def _taxonomy_cub(args: argparse.Namespace) -> int:
    """Match a CUB class list to a checklist; write the table and its match report."""
    report = args.report or args.out.with_name(f"{args.out.stem}_match_report.md")
    _input_file("--classes", args.classes)
    aliases = _input_file("--aliases", args.aliases, DEFAULT_ALIASES)
    if args.checklist != "default":
        _input_file("--checklist", Path(args.checklist))
    inputs = [args.classes, aliases] + ([] if args.checklist == "default" else [args.checklist])
    job = _cli_job(
        "taxonomy cub",
        inputs,
        checklist=args.checklist,
        fuzzy_threshold=args.fuzzy_threshold,
        fuzzy_margin=args.fuzzy_margin,
    )
    table = build_cub_taxonomy(
        args.classes,
        aliases,
        args.out,
        report,
        job,
        checklist=args.checklist,
        fuzzy_threshold=args.fuzzy_threshold,
        fuzzy_margin=args.fuzzy_margin,
    )
    print(
        f"{len(table)} classes, {table['middle'].nunique()} genera, "
        f"{table['high'].nunique()} families -> {args.out} (report {report})"
    )
    return 0


def _taxonomy_nabirds(args: argparse.Namespace) -> int:
    """Read NABirds' tree into the generic taxonomy table."""
    _input_file("--classes", args.classes)
    _input_file("--hierarchy", args.hierarchy)
    job = _cli_job("taxonomy nabirds", [args.classes, args.hierarchy])
    table = build_nabirds_taxonomy(args.classes, args.hierarchy, args.out, job)
    print(
        f"{len(table)} leaves, {table['middle'].nunique()} parents, "
        f"{table['high'].nunique()} supergroups -> {args.out}"
    )
    return 0


def _audit(args: argparse.Namespace) -> int:
    """Verify every artifact against its record, write the manifest, exit 1 on any failure."""
    if not args.run.is_dir():
        raise FileNotFoundError(f"run folder {args.run} does not exist")
    base = args.base if args.base is not None else repository_or_here(args.run)
    findings = verify(args.run, base)
    reseals = seal.list_reseals(args.run)
    if args.json:
        print(report_json(findings, reseals))
    else:
        print("\n".join(seal.reseal_lines(reseals) + report_lines(findings)))
    table = manifest_table(findings)
    if not table.empty:
        job = JobContext(rule="cli:audit", code=code_hash(["provenance.verify"]))
        write_parquet(table, args.run / MANIFEST_NAME, job, sort_by=["path"])
    return 1 if any(not f.passed for f in findings) else 0


def _add_audit(commands: argparse._SubParsersAction) -> None:
    """The `audit` subcommand."""
    audit = commands.add_parser(
        "audit",
        help="verify every artifact against its provenance",
        epilog="example: hierbench audit runs/tiny",
    )
    _add_run_argument(audit)
    audit.add_argument("--json", action="store_true", help="machine-readable output")
    audit.add_argument(
        "--base",
        type=Path,
        help="folder the recorded paths are relative to (default: the run's repository)",
    )
    audit.set_defaults(handler=_audit)


def _compare(args: argparse.Namespace) -> int:
    """Compare two run folders: what differs, why, and the tables side by side (exit 0 either
    way; a folder that is not a run is an error)."""
    report = compare_runs_report(args.run_a, args.run_b)
    print(
        json.dumps(report, indent=2, ensure_ascii=False) if args.json else render_markdown(report)
    )
    return 0


def _add_compare(commands: argparse._SubParsersAction) -> None:
    """The `compare` subcommand."""
    compare = commands.add_parser(
        "compare",
        help="compare two run folders: first differences, stages, tables",
        epilog="example: hierbench compare runs/tiny runs/tiny-lr6",
    )
    compare.add_argument("run_a", type=Path, metavar="RUN_A", help="run folder A (e.g. results)")
    compare.add_argument("run_b", type=Path, metavar="RUN_B", help="run folder B (e.g. runs/tiny)")
    compare.add_argument("--json", action="store_true", help="machine-readable output")
    compare.set_defaults(handler=_compare)


def _jobs(args: argparse.Namespace) -> int:
    """Print what the run's jobs cost (wall, CPU, peak memory) per rule or per stage."""
    logs = args.logs if args.logs is not None else Path(logs_folder(args.run.as_posix()))
    if not logs.is_dir():
        raise FileNotFoundError(f"log folder {logs} of run {args.run} does not exist")
    rules = args.rules if args.rules is not None else repository_or_here(args.run) / "rules"
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
    jobs.add_argument("--logs", type=Path, help="the run's logs (default: its -logs folder)")
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
    logs = args.logs if args.logs is not None else Path(logs_folder(args.run.as_posix()))
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
    unseal.add_argument("--logs", type=Path, help="the run's logs (default: its -logs folder)")
    unseal.set_defaults(handler=_unseal)


def _resume(args: argparse.Namespace) -> int:
    """Release a killed run's stale lock and rerun its incomplete jobs (never a live run's)."""
    repo = repository_or_here(args.run)
    run = args.run.resolve().relative_to(repo.resolve()).as_posix()
    config, locked = resume.resume_plan(repo, run)
    snakemake = [str(Path(sys.executable).with_name("snakemake")), *args.targets]
    snakemake += ["--configfile", str(config)]  # after the targets: it takes several values
    if locked:
        print(f"{args.run.as_posix()}: releasing the stale lock", file=sys.stderr)
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


def _add_taxonomy(commands: argparse._SubParsersAction) -> None:
    """The `taxonomy cub` and `taxonomy nabirds` subcommands."""
    taxonomy = commands.add_parser(
        "taxonomy",
        help="build a taxonomy table",
        epilog="example: hierbench taxonomy nabirds --classes resources/nabirds_classes.txt "
        "--hierarchy resources/nabirds_hierarchy.txt --out nabirds_taxonomy.parquet",
    )
    which = taxonomy.add_subparsers(dest="dataset", required=True)
    cub = which.add_parser(
        "cub",
        help="match CUB class names to a bird checklist",
        epilog="example: hierbench taxonomy cub --classes resources/cub_classes.txt "
        "--out cub_taxonomy.parquet",
    )
    cub.add_argument("--classes", type=Path, required=True, help="CUB classes.txt")
    cub.add_argument(
        "--checklist",
        default="default",
        help='"default" (birdnames eBird/Clements 2024) or a checklist CSV with eBird columns',
    )
    cub.add_argument(
        "--aliases", type=Path, help=f"alias file (default: the shipped {DEFAULT_ALIASES})"
    )
    cub.add_argument(
        "--fuzzy-threshold",
        type=float,
        default=DEFAULT_FUZZY_THRESHOLD,
        help="smallest rapidfuzz score a fuzzy match may have",
    )
    cub.add_argument(
        "--fuzzy-margin",
        type=float,
        default=DEFAULT_FUZZY_MARGIN,
        help="how far the best fuzzy match must lead the second",
    )
    cub.add_argument("--out", type=Path, required=True, help="taxonomy parquet to write")
    cub.add_argument("--report", type=Path, help="match report (default: beside --out)")
    cub.set_defaults(handler=_taxonomy_cub)
    nabirds = which.add_parser(
        "nabirds",
        help="NABirds Leaf / Parent / Supergroup",
        epilog="example: hierbench taxonomy nabirds --classes resources/nabirds_classes.txt "
        "--hierarchy resources/nabirds_hierarchy.txt --out nabirds_taxonomy.parquet",
    )
    nabirds.add_argument("--classes", type=Path, required=True, help="NABirds classes.txt")
    nabirds.add_argument("--hierarchy", type=Path, required=True, help="NABirds hierarchy.txt")
    nabirds.add_argument("--out", type=Path, required=True, help="taxonomy parquet to write")
    nabirds.set_defaults(handler=_taxonomy_nabirds)


class DefaultsShown(argparse.HelpFormatter):
    """Help that states each option's default, unless its help already does."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        shown = not (default is None or default is False or default == [])
        shown = shown and default is not argparse.SUPPRESS
        if shown and "default" not in text and (action.option_strings or action.nargs == "?"):
            text += " (default: %(default)s)"
        return text


class CommandParser(argparse.ArgumentParser):
    """A subcommand's parser: defaults shown in its help, its example kept as written."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", DefaultsShownRaw)
        super().__init__(*args, **kwargs)


class DefaultsShownRaw(DefaultsShown, argparse.RawDescriptionHelpFormatter):
    """Defaults shown; the epilog's example line kept as written."""


def _add_run_argument(parser: argparse.ArgumentParser) -> None:
    """The run folder, the first positional argument of every command that acts on a run."""
    parser.add_argument(
        "run",
        type=Path,
        nargs="?",
        default=Path(DEFAULT_RUN),
        metavar="RUN",
        help="the run folder (a config's key run; default: the demo's results)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `hierbench` command."""
    parser = argparse.ArgumentParser(prog="hierbench", description=__doc__)
    parser.add_argument("--version", action="version", version=f"hierbench {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=CommandParser)

    check = commands.add_parser(
        "config",
        help="validate a config file and print it resolved",
        epilog="example: hierbench config configs/tiny.yaml",
    )
    check.add_argument("file", type=Path, metavar="FILE", help="the config file (YAML)")
    check.add_argument(
        "--schema", type=Path, help=f"config schema (default: the shipped {DEFAULT_SCHEMA})"
    )
    check.add_argument(
        "--inputs", action="store_true", help="also require the data and weights it names"
    )
    check.set_defaults(handler=_config_check)

    hashing = commands.add_parser(
        "code-hash",
        help="behaviour hash of library modules (comments and docstrings ignored)",
        epilog="example: hierbench code-hash stages.tables",
    )
    hashing.add_argument(
        "modules", nargs="+", metavar="MODULE", help="a module below hierbench (data.inputs)"
    )
    hashing.add_argument(
        "--form", action="store_true", help="print the normalised form that is hashed"
    )
    hashing.set_defaults(handler=_code_hash)
    _add_taxonomy(commands)
    add_effect_commands(commands)
    add_dataset_commands(commands)
    add_runs_command(commands)
    add_status_command(commands)
    _add_audit(commands)
    _add_compare(commands)
    _add_resume(commands)
    _add_unseal(commands)
    _add_jobs(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: run one subcommand; user errors print one line and exit with status 2."""
    args = build_parser().parse_args(argv)
    try:
        status = args.handler(args)
        sys.stdout.flush()  # a reader that left early fails here, not at exit
        return status
    except BrokenPipeError:  # the reader stopped early (`| head`): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (
        ConfigError,
        TaxonomyError,
        EffectsError,
        NotARunError,
        jobstats.BenchmarkFileError,
        FileNotFoundError,
        ValueError,
    ) as error:
        print(f"hierbench: error: {error}", file=sys.stderr)
        return 2
