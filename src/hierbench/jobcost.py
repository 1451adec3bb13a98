"""Where one job's CPU seconds go, by kind of cost, measured by the job itself.

A job's CPU (its own process and the worker processes it waited for) is split into its
**start-up** (the interpreter, Snakemake's script preamble and the workflow script's imports:
everything before :func:`hierbench.jobs.start_job`), **loading** (reading features, splits and
checkpoints; the backbone passes' image-decoding workers), **publishing and hashing** (writing
artifacts with their records, verifying inputs against theirs) and the rest, **compute** (the
demo's rendering workers among it). The job writes the split as one line of its log
(:func:`cost_line`), which ``benchmarks/breakdown.py`` adds up by stage.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import time
from collections.abc import Iterator

START_UP = "start-up"
LOADING = "loading"
COMPUTE = "compute"
PUBLISHING = "publishing and hashing"
KINDS = (START_UP, LOADING, COMPUTE, PUBLISHING)
LINE_PREFIX = "job cpu seconds:"

_charged: dict[str, float] = dict.fromkeys(KINDS, 0.0)
_open: list[float] = []  # CPU seconds spent in charged blocks nested in each open block


def _process_cpu() -> float:
    """This process's CPU seconds, all threads, user and system."""
    return time.process_time()


def _children_cpu() -> float:
    """CPU seconds of this process's finished, waited-for children (its worker processes)."""
    times = os.times()
    return times.children_user + times.children_system


def _job_cpu() -> float:
    return _process_cpu() + _children_cpu()


@contextlib.contextmanager
def charged(kind: str, *, own: bool = True) -> Iterator[None]:
    """Charge the CPU seconds of the block to ``kind``: this process's and those of the worker
    processes it waited for, or (``own=False``) the workers' alone. A charged block nested
    inside another counts once, to the inner kind."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind of cost {kind!r}: one of {', '.join(KINDS)}")
    clock = _job_cpu if own else _children_cpu
    began = clock()
    _open.append(0.0)
    try:
        yield
    finally:
        spent = clock() - began
        nested = _open.pop()
        _charged[kind] += max(spent - nested, 0.0)
        if _open:
            _open[-1] += spent


def mark_start_up() -> None:
    """Charge everything this process spent so far to start-up (called once, as a job starts)."""
    _charged[START_UP] = _job_cpu()


def split() -> dict[str, float]:
    """The job's CPU seconds so far by kind: compute is what no charged block took."""
    costs = dict(_charged)
    others = costs[START_UP] + costs[LOADING] + costs[PUBLISHING]
    costs[COMPUTE] = max(_job_cpu() - others, 0.0)
    return costs


def cost_line(rule: str) -> str:
    """The log line of the job's split, e.g. ``job cpu seconds: rule tune start-up 2.10 ...``."""
    parts = " ".join(f"{kind}={seconds:.3f}" for kind, seconds in split().items())
    return f"{LINE_PREFIX} rule {rule} {parts}"


def report_at_exit(rule: str, log: str | os.PathLike[str]) -> None:
    """Append the job's :func:`cost_line` to its log when this process exits (not in its
    forked workers); a log that is gone by then is left alone."""
    owner = os.getpid()

    def append_line() -> None:
        if os.getpid() != owner:
            return
        with contextlib.suppress(OSError), open(log, "a", encoding="utf-8") as stream:
            stream.write(cost_line(rule) + "\n")

    atexit.register(append_line)


_LINE = re.compile(rf"{re.escape(LINE_PREFIX)} rule (\S+) (.*)$")
_PART = re.compile(r"([a-z -]+?)=([0-9.]+)")


def parse_cost_line(line: str) -> tuple[str, dict[str, float]] | None:
    """The rule and split a :func:`cost_line` holds; None for any other line."""
    match = _LINE.search(line)
    if match is None:
        return None
    costs = {kind.strip(): float(value) for kind, value in _PART.findall(match.group(2))}
    return match.group(1), costs
