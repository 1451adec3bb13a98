"""The `hierbench` command: the library's functions for use outside Snakemake.

Each subcommand calls the same function a rule calls, so results made by hand and by the
pipeline agree.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from hierbench import __version__
from hierbench.cli.dataset_commands import add_dataset_commands
from hierbench.cli.effect_commands import add_effect_commands
from hierbench.cli.report_command import add_report_command
from hierbench.cli.run_commands import add_run_commands
from hierbench.cli.study import add_study_command
from hierbench.config import ConfigError, check_inputs_exist, load_config
from hierbench.effects import EffectsError
from hierbench.provenance import codehash
from hierbench.provenance.codehash import code_hash
from hierbench.provenance.records import JobContext
from hierbench.runtools import jobstats
from hierbench.runtools.compare import NotARunError
from hierbench.shipped import SHIPPED_FILES, shipped_file
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


def _shipped(args: argparse.Namespace) -> int:
    """Print the path of a file shipped with hierbench (every one, with its name, when none
    is named): from an installed package as from a checkout."""
    if args.name is None:
        for name in sorted(SHIPPED_FILES):
            print(f"{name:<34} {shipped_file(name)}")
        return 0
    if args.name not in SHIPPED_FILES:
        raise ValueError(
            f"no shipped file {args.name!r}; shipped: {', '.join(sorted(SHIPPED_FILES))}"
        )
    print(shipped_file(args.name))
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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `hierbench` command."""
    parser = argparse.ArgumentParser(
        prog="hierbench",
        usage="hierbench [-h] [--version] COMMAND ...",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"hierbench {__version__}")
    commands = parser.add_subparsers(
        prog="hierbench",  # each command's usage starts "hierbench NAME", not the usage above
        dest="command",
        required=True,
        parser_class=CommandParser,
        metavar="COMMAND",
        help=argparse.SUPPRESS,  # listed by group in the epilog (command_groups)
    )

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

    shipped = commands.add_parser(
        "shipped",
        help="print the path of a file shipped with hierbench (the config schema, the lock)",
        description="Print where a file hierbench ships lies: the config schema whose defaults "
        "fill every config, the exact environment's lock (pip install -r it), the class lists "
        "and the aliases. With no NAME, every one with its path.",
        epilog='example: hierbench shipped requirements.lock (pip install -r "$(hierbench shipped '
        'requirements.lock)" pins the exact environment)',
    )
    shipped.add_argument("name", nargs="?", metavar="NAME", help="the file's name")
    shipped.set_defaults(handler=_shipped)

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
    add_run_commands(commands)
    add_study_command(commands)
    add_report_command(commands)
    helps = {action.dest: action.help or "" for action in commands._choices_actions}
    parser.epilog = command_groups(commands.choices, helps)
    return parser


# The commands a user runs day to day, in the order of a study; every other one is plumbing.
EVERYDAY = (
    "run", "status", "runs", "report", "audit", "compare", "resume", "check-dataset",
    "init-dataset", "fetch", "jobs", "config",
)  # fmt: skip


def command_groups(parsers: dict[str, argparse.ArgumentParser], helps: dict[str, str]) -> str:
    """The commands grouped into everyday ones and plumbing, each with its help and example
    (its parser's epilog)."""
    plumbing = [name for name in parsers if name not in EVERYDAY]
    lines: list[str] = []
    for title, names in (("everyday commands", EVERYDAY), ("plumbing", plumbing)):
        lines += ["", f"{title}:"]
        for name in names:
            lines.append(f"  {name:<14} {helps[name]}")
            lines.append(f"  {'':<14} {parsers[name].epilog or ''}")
    return "\n".join(lines[1:])


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: run one subcommand; user errors print one line and exit with status 2.
    What follows a bare ``--`` is passed on (``hierbench run``: to Snakemake)."""
    words = list(sys.argv[1:] if argv is None else argv)
    split = words.index("--") if "--" in words else len(words)
    parser = build_parser()
    args = parser.parse_args(words[:split])
    args.passthrough = words[split + 1 :]
    if args.passthrough and not getattr(args, "takes_passthrough", False):
        parser.error(f"{args.command} passes nothing on: leave out -- and what follows it")
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
