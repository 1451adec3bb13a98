"""Bridge from a running Snakemake job to the library: its log file and its provenance context.

Workflow scripts call :func:`start_job` first thing; it sends stderr and Python logging to the
rule's ``log:`` file, verifies every recorded input against its record
(:mod:`hierbench.provenance.integrity`) and returns the :class:`JobContext` every artifact
writer needs. The
``snakemake`` object is only read here, by attribute, so the library never imports Snakemake.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hierbench import jobcost
from hierbench.provenance import numerics
from hierbench.provenance.codehash import changed_parts, code_hash, code_parts
from hierbench.provenance.integrity import verify_recorded_inputs
from hierbench.provenance.records import JobContext
from hierbench.runlogs import LOG_FORMAT

CODE_PARAM = "code"
# The workflow script a rule runs (its script: directive reads it); its code hash covers it.
SCRIPT_PARAM = "script"
# What the code hash covered when the run was planned, part by part (codehash.code_parts).
CODE_PARTS_PARAM = "code_parts"
# The numeric mode the run was planned in (numerics.mode_name); the records keep it.
NUMERICS_PARAM = "numerics"


def code_params(
    modules: Iterable[str],
    script: str,
    script_path: str | Path,
    files: Iterable[str | Path],
    numeric_mode: str,
) -> dict[str, Any]:
    """The params a rule passes for its code (in rules/common.smk's ``code()``): the behaviour
    hash of its library ``modules``, its workflow script and any other ``files`` it runs (a
    plugin; comments do not count), the script's name, the hash part by part (which each job
    checks as it starts: :func:`check_planned_code`) and the run's numeric mode."""
    modules = tuple(modules)
    return {
        CODE_PARAM: code_hash(modules, [script_path, *files]),
        SCRIPT_PARAM: script,
        CODE_PARTS_PARAM: code_parts(modules, script_path),
        NUMERICS_PARAM: numeric_mode,
    }


class PlannedCodeError(ValueError):
    """The code a job is about to run is not the code its run was planned with."""


def send_stderr_to_log(log_path: str | Path) -> None:
    """Redirect stderr and the root logger to ``log_path`` (appending), creating its folder."""
    path = Path(log_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    stream = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - lives as stderr
    sys.stderr = stream
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=stream, force=True)


def _named_items(namedlist: Any) -> dict[str, Any]:
    """The named entries of a Snakemake Namedlist (wildcards, params) as a plain dict."""
    return {str(key): value for key, value in namedlist.items()}


def _plain(value: Any) -> Any:
    """Convert Snakemake parameter values to JSON-ready builtins (lists, dicts, scalars)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return value.as_posix()
    return value


def job_context(smk: Any) -> JobContext:
    """Provenance context of the Snakemake job ``smk``: rule, wildcards, params, inputs."""
    params = {key: _plain(value) for key, value in _named_items(smk.params).items()}
    code = params.pop(CODE_PARAM, "")
    params.pop(SCRIPT_PARAM, None)
    params.pop(CODE_PARTS_PARAM, None)
    return JobContext(
        rule=str(smk.rule),
        wildcards={key: str(value) for key, value in _named_items(smk.wildcards).items()},
        params=params,
        inputs=tuple(str(path) for path in smk.input),
        code=str(code),
    )


def limit_threads(threads: int) -> None:
    """Cap torch (when loaded) at the job's threads, so parallel jobs do not oversubscribe."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(max(1, int(threads)))


def check_planned_code(smk: Any) -> None:
    """Refuse to start a job whose library modules or workflow script changed after its run
    was planned (an edit during the run): its record would name code that did not make its
    artifact. One line names what changed and how to rebuild what the edit invalidated."""
    params = _named_items(smk.params)
    planned = params.get(CODE_PARTS_PARAM)
    if not planned:
        return
    script = Path(smk.scriptdir) / f"{params[SCRIPT_PARAM]}.py"
    changed = changed_parts(dict(planned), script)
    if changed:
        names = [script.name if name == "script" else name for name in changed]
        raise PlannedCodeError(
            f"rule {smk.rule}: {', '.join(names)} changed after this run was planned, so this "
            "job would record code that did not make its artifact; it did not start. Run the "
            "same command again (or hierbench resume): the edit's rules rerun"
        )


def set_numerics(smk: Any) -> None:
    """Check that the job computes in the numeric mode its run was planned in and give torch
    the mode's threads (one in the portable mode, whatever --cores)."""
    planned = _named_items(smk.params).get(NUMERICS_PARAM)
    threads = getattr(smk, "threads", 1)
    if planned is None:  # a rule without code() params (none in the workflow): its threads
        limit_threads(threads)
        return
    numerics.check_in_force(planned)
    limit_threads(numerics.compute_threads(numerics.mode_of(planned), threads))


def report_user_errors(kind: type, error: BaseException, trace: Any) -> None:
    """A job's last word: an error of hierbench's own (bad input, a refused artifact: its
    message names the file, line, class or key) as one line; anything else, a bug, with its
    traceback."""
    if type(error).__module__.startswith("hierbench.") and isinstance(error, ValueError):
        print(f"error: {error}", file=sys.stderr)
        return
    sys.__excepthook__(kind, error, trace)


def start_job(smk: Any) -> JobContext:
    """Send the job's stderr to its log file, report user errors in one line, refuse code
    edited since the run was planned and a numeric mode not in force, give torch the mode's
    threads, refuse inputs that no longer match their provenance records, and return the job's
    provenance context. Its CPU split by kind of cost (:mod:`hierbench.jobcost`) is the log's
    last line."""
    jobcost.mark_start_up()
    sys.excepthook = report_user_errors
    if smk.log:
        send_stderr_to_log(smk.log[0])
    check_planned_code(smk)
    set_numerics(smk)
    job = job_context(smk)
    with jobcost.charged(jobcost.PUBLISHING):
        verify_recorded_inputs(job.inputs)
    logging.getLogger("hierbench").info(
        "rule %s wildcards %s code %s", job.rule, job.wildcards, job.code[:12]
    )
    if smk.log:
        jobcost.report_at_exit(job.rule, smk.log[0])
    return job
