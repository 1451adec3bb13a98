"""What each job of a run cost: wall and CPU seconds and peak resident memory, read from
Snakemake's ``benchmark:`` files, per job, per rule and per stage; and the split of each job's
CPU by kind of cost that the job wrote as its log's last line (:mod:`hierbench.jobcost`).

Every rule's benchmark file mirrors its first output's path under the run's log folder
(``<run>/logs/<output>.benchmark.tsv``), and every output carries a provenance record naming the
rule that wrote it, so a job's rule comes from that record, not from the file's path. A rule's
stage is the ``rules/<stage>.smk`` file that defines it. The figures are sums and extremes of
what each job measured itself: a stage's job seconds are not its elapsed time when jobs ran in
parallel.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from hierbench import jobcost
from hierbench.provenance.artifacts import provenance_path
from hierbench.runtools.rebuild_map import rule_blocks

BENCHMARK_SUFFIX = ".benchmark.tsv"
LOG_SUFFIX = ".log"
NO_RECORD = "(no record)"  # the rule of a job whose output has no provenance record
NO_STAGE = "(other)"  # the stage of a rule not defined in any rules/*.smk file
# Snakemake's benchmark columns that are read, and their names here.
MEASURES = {"s": "wall_s", "cpu_time": "cpu_s", "max_rss": "max_rss_mb"}
JOB_COLUMNS = ("output", "rule", "stage", *MEASURES.values())


class BenchmarkFileError(ValueError):
    """A benchmark file that is not a Snakemake benchmark table."""


def rule_stages(rules_folder: Path) -> dict[str, str]:
    """Each rule's stage: the stem of the ``.smk`` file in ``rules_folder`` that defines it
    (an inherited rule, ``use rule A as B with:``, too)."""
    return {block.name: block.path.stem for block in rule_blocks(Path(rules_folder))}


def read_benchmark(path: Path) -> dict[str, float]:
    """The last row of one benchmark file as ``wall_s``, ``cpu_s`` and ``max_rss_mb`` (NaN
    where Snakemake wrote ``NA``, as it does for jobs too short to sample)."""
    try:
        table = pd.read_csv(path, sep="\t", na_values=["NA", "-"])
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise BenchmarkFileError(f"{path}: not a Snakemake benchmark table ({error})") from error
    missing = [column for column in MEASURES if column not in table.columns]
    if missing or table.empty:
        problem = f"no column {', '.join(missing)}" if missing else "no rows"
        raise BenchmarkFileError(f"{path}: not a Snakemake benchmark table ({problem})")
    last = table.iloc[-1]
    return {
        name: float(pd.to_numeric(last[column], errors="coerce"))
        for column, name in MEASURES.items()
    }


def recorded_rule(output: Path) -> str:
    """The rule named by the provenance record of ``output``, or ``NO_RECORD``."""
    record = provenance_path(output)
    if not record.is_file():
        return NO_RECORD
    try:
        rule = json.loads(record.read_text(encoding="utf-8")).get("rule")
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        return NO_RECORD
    return str(rule) if rule else NO_RECORD


def job_costs(run: Path, logs: Path, stages: dict[str, str] | None = None) -> pd.DataFrame:
    """One row per benchmark file under ``logs``: the output it belongs to (relative to
    ``run``), its rule and stage, and what the job measured; sorted by output."""
    stages = stages or {}
    rows = []
    for benchmark in sorted(Path(logs).rglob("*" + BENCHMARK_SUFFIX)):
        output = benchmark.relative_to(logs).as_posix()[: -len(BENCHMARK_SUFFIX)]
        rule = recorded_rule(Path(run) / output)
        rows.append(
            {"output": output, "rule": rule, "stage": stages.get(rule, NO_STAGE)}
            | read_benchmark(benchmark)
        )
    return pd.DataFrame(rows, columns=list(JOB_COLUMNS))


def last_cost_split(log: Path) -> tuple[str, dict[str, float]] | None:
    """The rule and CPU split of a job log's last cost line (its latest run), or None."""
    found = None
    with open(log, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if jobcost.LINE_PREFIX in line:
                found = jobcost.parse_cost_line(line) or found
    return found


def job_cost_splits(logs: Path, stages: dict[str, str] | None = None) -> pd.DataFrame:
    """One row per job log under ``logs`` that holds a CPU split: the output it belongs to, its
    rule and stage, and the CPU seconds of each kind of cost (:data:`jobcost.KINDS`); sorted by
    output. A job that ended before starting its work (or ran no workflow script) has no row."""
    stages = stages or {}
    rows = []
    for log in sorted(Path(logs).rglob("*" + LOG_SUFFIX)):
        split = last_cost_split(log)
        if split is None:
            continue
        rule, costs = split
        output = log.relative_to(logs).as_posix()[: -len(LOG_SUFFIX)]
        rows.append(
            {"output": output, "rule": rule, "stage": stages.get(rule, NO_STAGE)}
            | {kind: costs.get(kind, math.nan) for kind in jobcost.KINDS}
        )
    return pd.DataFrame(rows, columns=["output", "rule", "stage", *jobcost.KINDS])


def rule_costs(jobs: pd.DataFrame, by: str = "rule") -> pd.DataFrame:
    """Per rule (or per ``stage``): jobs, summed wall and CPU seconds, the longest job's CPU
    seconds and output, and the largest peak resident memory and its output; sorted by name."""
    if by not in ("rule", "stage"):
        raise ValueError(f"costs can be grouped by 'rule' or 'stage', got {by!r}")
    rows = []
    for name, group in jobs.groupby(by, sort=True):
        longest = group.loc[group["cpu_s"].fillna(-1).idxmax()]
        largest = group.loc[group["max_rss_mb"].fillna(-1).idxmax()]
        rows.append(
            {
                by: name,
                "jobs": len(group),
                "wall_s": group["wall_s"].sum(),
                "cpu_s": group["cpu_s"].sum(),
                "cpu_s_min": group["cpu_s"].min(),
                "cpu_s_max": group["cpu_s"].max(),
                "longest": longest["output"],
                "max_rss_mb": group["max_rss_mb"].max(),
                "largest": largest["output"],
            }
        )
    return pd.DataFrame(rows)


def total_costs(jobs: pd.DataFrame) -> dict[str, float]:
    """Jobs, summed wall and CPU seconds and the largest peak resident memory of a run."""
    return {
        "jobs": len(jobs),
        "wall_s": float(jobs["wall_s"].sum()),
        "cpu_s": float(jobs["cpu_s"].sum()),
        "max_rss_mb": float(jobs["max_rss_mb"].max()) if len(jobs) else math.nan,
    }


def render_costs(table: pd.DataFrame, totals: dict[str, float]) -> str:
    """A Markdown table of ``rule_costs`` and a line of totals."""
    key = table.columns[0] if len(table.columns) else "rule"
    lines = [
        f"| {key} | jobs | job wall s | CPU s | CPU s per job | peak RSS MB | largest job |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for row in table.itertuples(index=False):
        lines.append(
            f"| {getattr(row, key)} | {row.jobs} | {_number(row.wall_s)} | {_number(row.cpu_s)} "
            f"| {_number(row.cpu_s_min)}–{_number(row.cpu_s_max)} | {_number(row.max_rss_mb)} "
            f"| {row.largest} |"
        )
    lines.append(
        f"\n{totals['jobs']} jobs: {_number(totals['wall_s'])} s of job wall time, "
        f"{_number(totals['cpu_s'])} CPU s, largest peak RSS {_number(totals['max_rss_mb'])} MB"
    )
    return "\n".join(lines)


def _number(value: float) -> str:
    """A figure with thousands separators and no decimals; ``NA`` when not measured."""
    return "NA" if value is None or math.isnan(value) else f"{value:,.0f}"
