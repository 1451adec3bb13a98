"""The `hierbench` command: the library's functions for use outside Snakemake.

Each subcommand calls the same function a rule calls, so results made by hand and by the
pipeline agree.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from hierbench import __version__
from hierbench.codehash import code_hash, module_closure
from hierbench.config import SCHEMA_PATH, ConfigError, check_inputs_exist, load_config


def _config_check(args: argparse.Namespace) -> int:
    """Validate a config file and print it with every default filled in."""
    config = load_config(args.file, args.schema)
    if args.inputs:
        check_inputs_exist(config)
    json.dump(config, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    return 0


def _code_hash(args: argparse.Namespace) -> int:
    """Print the code hash a rule declaring these modules gets, and the modules it covers."""
    print(code_hash(args.modules))
    print("covers: " + ", ".join(module_closure(tuple(sorted(set(args.modules))))))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `hierbench` command."""
    parser = argparse.ArgumentParser(prog="hierbench", description=__doc__)
    parser.add_argument("--version", action="version", version=f"hierbench {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    check = commands.add_parser("config", help="validate a config file and print it resolved")
    check.add_argument("file", type=Path)
    check.add_argument("--schema", type=Path, default=SCHEMA_PATH)
    check.add_argument(
        "--inputs", action="store_true", help="also require the data and weights it names"
    )
    check.set_defaults(handler=_config_check)

    hashing = commands.add_parser("code-hash", help="source hash of library modules")
    hashing.add_argument("modules", nargs="+")
    hashing.set_defaults(handler=_code_hash)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: run one subcommand; user errors print one line and exit with status 2."""
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except (ConfigError, FileNotFoundError, ValueError) as error:
        print(f"hierbench: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
