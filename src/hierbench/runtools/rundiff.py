"""Two runs' folders compared byte for byte, less the artifacts that hold a time by design.

Two complete runs of the same configuration give identical bytes for every artifact except
the Final lock (``lock/final_lock.json``, when training finished) and a cell's
``train_log.parquet`` (each epoch's wall seconds); their provenance records, and the records
whose inputs include one of them (their input hashes carry its time: the evaluations', the
training curves', the tracker export's), differ with them. Logs
and Snakemake benchmark timings live outside the run folder. The determinism test and the cluster
check (``tools/cluster.py``) both compare runs with :func:`compare_runs`.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from hierbench.layout import CELL_FILES, FINAL_LOCK
from hierbench.provenance.artifacts import PROVENANCE_SUFFIX, provenance_path
from hierbench.provenance.hashing import sha256_file
from hierbench.provenance.makers import CLI_RULE_PREFIX
from hierbench.runs import DEFAULT_RUN, is_log

# What a copy of the repository for a separate run leaves out: history, environments, outputs.
COPY_IGNORED: tuple[str, ...] = (
    ".git",
    ".venv",
    "results",
    "runs",
    "logs",
    ".snakemake",
    "__pycache__",
    "*.egg-info",
    ".pytest_cache",
    ".ruff_cache",
)
LOCK_FILE = FINAL_LOCK.removeprefix("{dataset}/")  # lock/final_lock.json below a dataset
TRAIN_LOG = CELL_FILES["log"]


def is_timed(path: str) -> bool:
    """An artifact that records a time: the Final lock, or a cell's training log."""
    return path.endswith(f"/{LOCK_FILE}") or path.endswith(f"/{TRAIN_LOG}")


def result_hashes(repo: Path, run: str = DEFAULT_RUN) -> dict[str, str]:
    """SHA256 of every file under the run folder ``repo/run`` but its logs (times, not
    results), keyed by its path relative to ``repo``."""
    return {
        p.relative_to(repo).as_posix(): sha256_file(p)
        for p in (repo / run).rglob("*")
        if p.is_file() and p.name != ".snakemake_timestamp" and not is_log(p, repo / run)
    }


def dataset_targets(repo: Path, run: str, dataset: str) -> list[str]:
    """Every artifact a finished run made for one dataset, relative to ``repo`` (provenance
    records aside, and a recorded folder, such as the rendered demo or the tracker export, as
    the one directory output it is): as Snakemake targets, they rebuild exactly that dataset's
    part of the run."""
    folder = repo / run / dataset
    folders = [p for p in folder.rglob("*") if p.is_dir() and provenance_path(p).is_file()]
    targets = [
        p.relative_to(repo).as_posix()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
        and not p.name.endswith(PROVENANCE_SUFFIX)
        and p.name != ".snakemake_timestamp"
        and not any(recorded in p.parents for recorded in folders)
    ]
    targets += [p.relative_to(repo).as_posix() for p in sorted(folders)]
    if not targets:
        raise ValueError(f"{folder} holds no artifacts of dataset {dataset!r}")
    return targets


def reads_timed(record_path: Path) -> bool:
    """A provenance record whose inputs include a Final lock or a train log (its input hash
    carries their time)."""
    record = json.loads(record_path.read_text())
    return any(is_timed(path) for path in record["inputs"])


def timing_exempt(repo: Path, paths: list[str]) -> set[str]:
    """The paths (relative to ``repo``) that may differ between runs only by a recorded time."""
    exempt = {p for p in paths if is_timed(p.removesuffix(PROVENANCE_SUFFIX))}
    exempt |= {p for p in paths if p.endswith(PROVENANCE_SUFFIX) and reads_timed(repo / p)}
    return exempt


@dataclass(frozen=True)
class RunDiff:
    """Files of a run folder present in one run only, and files whose bytes differ."""

    only_first: list[str]
    only_second: list[str]
    differing: list[str]
    exempt: list[str]
    compared: int

    @property
    def identical(self) -> bool:
        return not (self.only_first or self.only_second or self.differing)


def compare_runs(first: Path, second: Path, run: str = DEFAULT_RUN) -> RunDiff:
    """Compare ``first/run`` with ``second/run``, less the timing exceptions."""
    a, b = result_hashes(first, run), result_hashes(second, run)
    exempt = timing_exempt(first, sorted(a))
    common = sorted(a.keys() & b.keys())
    return RunDiff(
        only_first=sorted(a.keys() - b.keys()),
        only_second=sorted(b.keys() - a.keys()),
        differing=[p for p in common if p not in exempt and a[p] != b[p]],
        exempt=sorted(exempt),
        compared=len(common),
    )


# The software record's parts that differ from job to job in one environment (numerics: its
# torch kernels and threads are None in a job that never loads torch).
PER_JOB_SOFTWARE = ("torch_runtime", "numerics")


def software_environments(repo: Path, run: str = DEFAULT_RUN) -> list[dict]:
    """The distinct software blocks (interpreter, platform, every installed distribution, the
    numeric mode and its settings) of the provenance records under ``repo/run``, less what
    differs by job: torch's device and threads, and the kernels of torch where a job loaded it
    (none where it did not). The command line's own records (the audit's manifest) are not a
    job's. One entry when every job ran in the same environment."""
    distinct: list[dict] = []
    for record_path in sorted((repo / run).rglob(f"*{PROVENANCE_SUFFIX}")):
        record = json.loads(record_path.read_text())
        if str(record.get("rule", "")).startswith(CLI_RULE_PREFIX):
            continue  # the command line's own record (the audit's manifest), not a job's
        software = record["software"]
        static = {key: value for key, value in software.items() if key not in PER_JOB_SOFTWARE}
        if "numerics" in software:
            static["numerics"] = {
                key: software["numerics"].get(key) for key in ("mode", "settings")
            }
        if static not in distinct:
            distinct.append(static)
    return distinct


def copy_repository(source: Path, target: Path) -> Path:
    """A copy of the repository's sources (no outputs, environments or history) for a run."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(*COPY_IGNORED))
    return target
