"""``hierbench run CONFIG``: the study on a config kept anywhere, Snakemake's output in the run's
logs and one progress line on the terminal (:mod:`hierbench.runtools.launch` says how paths
resolve and what the lines say)."""

from __future__ import annotations

import argparse
import copy
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType
from typing import IO, Any

import yaml
from tqdm import tqdm

from hierbench.cli.endpoint_check import undefined_endpoint_lines
from hierbench.config import (
    SCHEMA_PATH,
    ConfigError,
    check_inputs_exist,
    enabled_datasets,
    load_yaml,
    validate_config,
)
from hierbench.data.quality import check_table_splits
from hierbench.provenance.artifacts import atomic_path
from hierbench.runs import logs_folder
from hierbench.runtools import jobstats
from hierbench.runtools.launch import (
    RESOLVED_CONFIG,
    SNAKEMAKE_LOG,
    LaunchError,
    Progress,
    base_of,
    failed_lines,
    resolve_config_paths,
    run_environment,
    shipped_profile,
    snakemake_command,
    stopped_line,
)
from hierbench.runtools.run_index import record_run
from hierbench.shipped import (
    ShippedFileError,
    is_packaged,
    rules_folder,
    shipped_paths,
    snakefile_arguments,
    workflow_root,
)

INTERRUPTED = 130  # the exit status of a run stopped by Ctrl-C or SIGTERM


class Stop(Exception):
    """Ctrl-C or SIGTERM reached the command: stop Snakemake and say how far it got."""


def _stop(signum: int, frame: FrameType | None) -> None:
    raise Stop


def study_workflow() -> Path:
    """The folder of the workflow that runs the study: an installed package's copy, else the
    checkout this package belongs to (:func:`hierbench.shipped.workflow_root`)."""
    try:
        return workflow_root()
    except ShippedFileError as error:
        raise LaunchError(str(error)) from None


def config_repository(config: Path) -> Path:
    """The folder a config's run works in (Snakemake's working folder), where its relative
    paths may start: the checkout whose workflow runs, else (an installed package) the
    config's own folder."""
    workflow = study_workflow()
    return config.resolve().parent if is_packaged(workflow) else workflow


def resolved_config(
    config: Path, repository: Path, schema: Path = SCHEMA_PATH
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A config file with its paths resolved (:func:`base_of`), as written and validated with
    its defaults; errors name the file (and, for YAML, the line)."""
    raw = load_yaml(config)
    if not isinstance(raw, dict):
        raise ConfigError(f"{config}: a config is a YAML mapping of keys")
    resolved = resolve_config_paths(raw, base_of(config, repository), repository)
    try:
        return resolved, validate_config(copy.deepcopy(resolved), load_yaml(schema))
    except ConfigError as error:
        raise ConfigError(f"{config}: {error}") from None


def check_before_planning(config: Path, validated: dict[str, Any], repository: Path) -> None:
    """What the Snakefile checks as it plans, checked here first so that a missing dataset
    folder or input file, or a collection that cannot split as configured, is one line naming
    the config and its key, with nothing written (no run folder, no logs)."""
    inputs = shipped_paths(validated, study_workflow(), repository)
    try:
        check_inputs_exist(inputs, repository)
        check_table_splits(inputs, enabled_datasets(inputs))
    except ValueError as error:
        raise ConfigError(f"{config}: {error}") from None


def prepare(config: Path, repository: Path) -> tuple[Path, Path]:
    """The run folder and its resolved config (written beside its logs), checked first."""
    resolved, validated = resolved_config(config, repository)
    check_before_planning(config, validated, repository)
    run = repository / resolved["run"]
    logs = Path(logs_folder(str(run)))
    logs.mkdir(parents=True, exist_ok=True)
    with atomic_path(logs / RESOLVED_CONFIG) as temporary:
        temporary.write_text(yaml.safe_dump(resolved, sort_keys=False), encoding="utf-8")
    return run, logs / RESOLVED_CONFIG


def follow(
    process: subprocess.Popen[str],
    log: IO[str],
    progress: Progress,
    verbose: bool,
    stages: dict[str, str],
) -> None:
    """Snakemake's output into the log (and, ``verbose``, the terminal), read into ``progress``
    and shown as one line."""
    quiet = verbose or not sys.stderr.isatty()  # a log file gets the closing line alone
    bar = None if quiet else tqdm(total=0, unit="job", file=sys.stderr, dynamic_ncols=True)
    try:
        for line in process.stdout or ():
            log.write(line)
            if verbose:
                sys.stdout.write(line)
            if progress.read(line, stages) and bar is not None:
                bar.total = progress.planned or 0
                bar.update(progress.done - bar.n)
                bar.set_description_str(progress.stage)
    finally:
        if bar is not None:
            bar.close()


def open_run_log(path: Path) -> IO[str]:
    """The run's log of Snakemake's output, written a line at a time: ``hierbench status`` and
    a ``tail -f`` read it while the run goes on."""
    return open(path, "w", encoding="utf-8", buffering=1)


def run_study(args: argparse.Namespace) -> int:
    """Run the study on ``args.config``; 0 done, 130 stopped, Snakemake's status when failed."""
    config = args.config.resolve()
    workflow = study_workflow()
    repository = config_repository(config)
    run, resolved = prepare(config, repository)
    try:
        record_run(run, repository, config)
    except OSError as error:  # a read-only data folder: the run goes on, unlisted elsewhere
        print(f"warning: the run is not in hierbench's index of runs: {error}", file=sys.stderr)
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    profile = shipped_profile(args.profile, workflow, repository)
    extra = [*snakefile_arguments(repository), *args.passthrough]
    command = snakemake_command(snakemake, resolved, args.cores, profile, extra)
    log_path = resolved.with_name(SNAKEMAKE_LOG)
    stages = jobstats.rule_stages(rules_folder(repository))
    previous = signal.signal(signal.SIGTERM, _stop)
    progress = Progress()
    try:
        with open_run_log(log_path) as log:
            process = subprocess.Popen(
                command,
                cwd=repository,
                env=run_environment(),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,  # a Ctrl-C reaches this command, which passes it on once
            )
            try:
                follow(process, log, progress, args.verbose, stages)
            except (KeyboardInterrupt, Stop):
                process.send_signal(signal.SIGINT)
                log.write(process.communicate()[0] or "")
                print(stopped_line(progress, config, args.cores, log_path), file=sys.stderr)
                return INTERRUPTED
            status = process.wait()
    finally:
        signal.signal(signal.SIGTERM, previous)
    if status != 0:  # the log is read back only to say why
        output = log_path.read_text(encoding="utf-8").splitlines()
        print("\n".join(failed_lines(output, log_path, repository)), file=sys.stderr)
        return status
    print(f"done: {progress.done} of {progress.planned or progress.done} jobs; the run is {run}")
    for line in undefined_endpoint_lines(run):
        print(line, file=sys.stderr)
    return 0


def add_study_command(commands: argparse._SubParsersAction) -> None:
    """Register ``run``."""
    parser = commands.add_parser(
        "run",
        help="run the study on a config, from any folder, with one progress line",
        description="Run every stage the config asks for. Its relative paths (run, dataset "
        "folders, plugin files, weights) are taken from the config's own folder (for a config "
        "inside the repository, from the repository, as snakemake --configfile takes them); "
        "the config as resolved is kept in RUN/logs/config.yaml and Snakemake's full output "
        "in RUN/logs/snakemake.log. A missing dataset folder, input or plugin file stops it "
        "before Snakemake starts, in one line; a failed job's own error is shown. An installed "
        "wheel runs its own copy of the workflow in the config's folder (no clone needed). "
        "Ctrl-C stops the run; the same command continues it.",
        epilog="example: hierbench run configs/tiny.yaml --cores 2 -- --dry-run",
        usage="hierbench run CONFIG [--cores N] [--profile P] [--verbose] [-- SNAKEMAKE ARGS]",
    )
    parser.add_argument("config", type=Path, metavar="CONFIG", help="the config file (YAML)")
    parser.add_argument("--cores", default="all", help="CPU cores Snakemake may use")
    parser.add_argument("--profile", help="a Snakemake profile (a cluster, say)")
    parser.add_argument("--verbose", action="store_true", help="show Snakemake's own output")
    parser.set_defaults(handler=run_study, takes_passthrough=True)
