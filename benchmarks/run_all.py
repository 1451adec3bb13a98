"""Every benchmark in one command: benchmarks/results.parquet and docs/benchmarks.md.

Run: ``.venv/bin/python benchmarks/run_all.py [--quick] [--demo] [--only NAME ...]`` (or
``make bench BENCH_ARGS=...``). Each benchmark runs in a process of its own (its thread and
core settings stay its own; a crash becomes a row, not a lost run) and returns rows of
``benchrows.COLUMNS``: a figure, the reference it is divided by (measured in the same run, as
the machine's speed drifts), the ratio, its goal and whether it was met. A failed benchmark is
an ``error`` row that counts as a missed goal. The rows, sorted, go to a parquet file and a
Markdown table (both written whole, then renamed into place; no timestamps inside), the table
is printed, and the exit status is 1 when any goal is missed, else 0.

``--quick`` runs small sizes with one repeat (about a minute on 2 cores; training takes the
median of three short paired repeats, as one is at the mercy of a single stall): a smoke check
that every benchmark works, not figures to quote. ``--demo`` adds the demo's end-to-end wall time
(about an hour on 2 cores; no reference, so no ratio or goal). ``--parquet`` and
``--markdown`` choose where the outputs go (the tests write into a temporary folder).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from benchrows import COLUMNS, Row, error_row

from hierbench.provenance.artifacts import atomic_path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PARQUET = REPO / "benchmarks" / "results.parquet"
MARKDOWN = REPO / "docs" / "benchmarks.md"
METADATA_KEY = b"hierbench.bench"


@dataclass(frozen=True)
class Benchmark:
    """One benchmark: the script holding its rows function, and that function's arguments."""

    script: str
    full: dict[str, Any]
    quick: dict[str, Any]
    function: str = "rows"
    env: dict[str, str] = field(default_factory=dict)  # set in its process unless exported


BENCHMARKS: dict[str, Benchmark] = {
    "bundle": Benchmark("bundle.py", {"epochs": 2, "repeats": 3}, {"epochs": 1, "repeats": 1}),
    "coverage": Benchmark(
        "coverage.py",
        {"studies": 600},
        {"studies": 16},
        env={"OPENBLAS_NUM_THREADS": "1"},  # one process per core (coverage.py's own default)
    ),
    "evaluation": Benchmark(
        "metrics.py",
        {"geometries": ["euclidean", "poincare"], "repeats": 5},
        {"geometries": ["euclidean"], "repeats": 1},
        env={"OPENBLAS_NUM_THREADS": "1"},  # metrics.py's own default, read when NumPy loads
    ),
    "features": Benchmark(
        "features.py", {"images": 256, "repeats": 3}, {"images": 64, "batch": 32, "repeats": 1}
    ),
    "gpu": Benchmark("gpu.py", {}, {"smoke": True}),
    "hier": Benchmark("hier.py", {"repeats": 5}, {"repeats": 1}),
    "intervals": Benchmark("intervals.py", {"repeats": 3}, {"repeats": 1}),
    "numerics": Benchmark(
        "numerics.py", {"repeats": 3}, {"images": 32, "samples": 1024, "epochs": 1, "repeats": 1}
    ),
    "render": Benchmark("render_demo.py", {}, {"classes": 40}),
    "reproduction": Benchmark("reproduction.py", {"studies": 400}, {"studies": 20}),
    "seeds": Benchmark("seeds_advice.py", {"studies": 400}, {"studies": 20}),
    "stacking": Benchmark("stacking.py", {"repeats": 3}, {"repeats": 1}),
    "training": Benchmark(
        "training.py",
        {"epochs": 2, "repeats": 5},
        {"epochs": 1, "repeats": 3, "samples": 2048, "head_updates": 100},
    ),
    "workflow": Benchmark("workflow.py", {"repeats": 3}, {"repeats": 1}, "dag_rows"),
}
# Only with --demo: about an hour on 2 cores.
DEMO = Benchmark("workflow.py", {}, {}, "demo_rows")


def load_script(script: str) -> ModuleType:
    """Import a benchmark script from this folder under a name of its own."""
    name = f"hierbench_benchmark_{Path(script).stem}"
    spec = importlib.util.spec_from_file_location(name, HERE / script)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load benchmarks/{script}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def benchmark_of(name: str) -> Benchmark:
    """The benchmark called ``name`` (``demo`` included)."""
    return DEMO if name == "demo" else BENCHMARKS[name]


def measure_here(name: str, quick: bool) -> list[Row]:
    """Run one benchmark in this process and return its rows."""
    benchmark = benchmark_of(name)
    function: Callable[..., list[Row]] = getattr(load_script(benchmark.script), benchmark.function)
    return function(**(benchmark.quick if quick else benchmark.full))


def measure_apart(name: str, quick: bool) -> list[Row]:
    """Run one benchmark in a child process; a failure becomes an error row with its output."""
    benchmark = benchmark_of(name)
    env = {**os.environ, "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")}
    for key, value in benchmark.env.items():
        env.setdefault(key, value)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rows.json"
        command = [sys.executable, str(Path(__file__).resolve()), "--child", name]
        command += ["--rows-json", str(out), *(["--quick"] if quick else [])]
        result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if result.returncode != 0 or not out.is_file():
            tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
            return [error_row(name, f"exit status {result.returncode}: {tail}")]
        rows = json.loads(out.read_text())
    bad = [r for r in rows if tuple(r) != COLUMNS]
    if not rows or bad:
        return [error_row(name, f"no rows, or rows without the columns {COLUMNS}")]
    return rows


def frame(rows: list[Row]) -> pd.DataFrame:
    """The rows as a typed table, sorted by benchmark and figure."""
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    for column in ("value", "reference", "ratio"):
        table[column] = table[column].astype("float64")
    for column in ("benchmark", "figure", "goal", "unit", "note"):
        table[column] = table[column].astype("string")
    table["met"] = table["met"].astype("boolean")
    return table.sort_values(["benchmark", "figure"], kind="stable", ignore_index=True)


def write_parquet(rows: list[Row], path: Path, facts: dict[str, Any]) -> None:
    """The rows as parquet, with the run's facts (mode, threads) in the schema metadata."""
    table = pa.Table.from_pandas(frame(rows), preserve_index=False)
    metadata = {**(table.schema.metadata or {}), METADATA_KEY: json.dumps(facts, sort_keys=True)}
    with atomic_path(path) as tmp:
        pq.write_table(table.replace_schema_metadata(metadata), tmp)


def number(x: Any) -> str:
    """A figure for the table: about three significant digits, thousands separated."""
    if x is None or pd.isna(x):
        return ""
    size = abs(float(x))
    if size >= 100:
        return f"{x:,.0f}"
    if size >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}" if size >= 0.1 else f"{x:.3g}"


def cell(text: Any) -> str:
    """Text safe inside a Markdown table cell."""
    return "" if text is None or pd.isna(text) else str(text).replace("|", "\\|")


def verdict(met: Any) -> str:
    """yes / **no** / empty (no goal, or skipped)."""
    if met is None or pd.isna(met):
        return ""
    return "yes" if met else "**no**"


def markdown(rows: list[Row], facts: dict[str, Any]) -> str:
    """The generated docs page: how it was made, the table, then each row's note."""
    mode = (
        "**quick** (`make bench BENCH_ARGS=--quick`: small sizes, few repeats; a smoke check "
        "that every benchmark runs, not figures to quote)"
        if facts["mode"] == "quick"
        else "**full** (`make bench`: the benchmarks' own sizes and repeats)"
    )
    kept = facts.get("kept")  # benchmark -> the facts of the run that measured it
    by_origin: dict[tuple[str, Any], list[str]] = {}
    for name, origin in sorted((kept or {}).items()):
        by_origin.setdefault((origin["mode"], origin["load_average"]), []).append(name)
    kept_line = (
        [
            f"This run measured {', '.join(facts['measured'])} (`--only`); the other rows are "
            "kept from earlier runs: "
            + "; ".join(
                f"{', '.join(names)} (mode {mode}, load average {load})"
                for (mode, load), names in by_origin.items()
            )
            + ".",
            "",
        ]
        if kept
        else []
    )
    lines = [
        "# Benchmarks",
        "",
        "<!-- Generated by benchmarks/run_all.py (make bench); do not edit by hand. -->",
        "",
        f"Mode: {mode}{' with the demo end to end' if facts['demo'] else ''}. "
        f"Machine: {facts['cpu_threads']} CPU thread(s) available to the run; load average "
        f"{facts['load_average']} when it began (other processes on the CPUs slow it unevenly).",
        "",
        *kept_line,
        "Each ratio is the value divided by its reference, both measured in the same run (the "
        "machine's speed drifts), unless its note says otherwise. A ratio that misses its goal "
        "is marked **no**, and `make bench` then exits 1. The rows are also in "
        "`benchmarks/results.parquet`.",
        "",
        "| benchmark | figure | value | reference | ratio | goal | met |",
        "|---|---|---:|---:|---:|---|---|",
    ]
    notes = []
    for r in frame(rows).to_dict("records"):
        unit = f" {r['unit']}" if r["unit"] and not pd.isna(r["value"]) else ""
        ref_unit = f" {r['unit']}" if r["unit"] and not pd.isna(r["reference"]) else ""
        lines.append(
            f"| {cell(r['benchmark'])} | {cell(r['figure'])} | {number(r['value'])}{unit} | "
            f"{number(r['reference'])}{ref_unit} | {number(r['ratio'])} | {cell(r['goal'])} | "
            f"{verdict(r['met'])} |"
        )
        if not pd.isna(r["note"]) and r["note"]:
            note = " ".join(str(r["note"]).split())
            notes.append(f"- {r['benchmark']}, {r['figure']}: {note}")
    if notes:
        lines += ["", "Notes:", "", *notes]
    return "\n".join(lines) + "\n"


def write_markdown(rows: list[Row], path: Path, facts: dict[str, Any]) -> None:
    """The docs page, renamed into place when written."""
    with atomic_path(path) as tmp:
        tmp.write_text(markdown(rows, facts), encoding="utf-8")


def finish(rows: list[Row], parquet: Path, markdown_path: Path, facts: dict[str, Any]) -> int:
    """Write both outputs, print the table and every missed goal; 1 when any goal is missed."""
    write_parquet(rows, parquet, facts)
    write_markdown(rows, markdown_path, facts)
    print(markdown(rows, facts))
    missed = [r for r in rows if r["met"] is False]
    for r in missed:
        ratio = "" if r["ratio"] is None else f"ratio {number(r['ratio'])}, "
        print(f"GOAL NOT MET: {r['benchmark']}: {r['figure']}: {ratio}goal {r['goal']}")
    print(f"wrote {parquet} and {markdown_path}; {len(missed)} goal(s) missed")
    return 1 if missed else 0


def main(argv: list[str] | None = None) -> int:
    """Run the chosen benchmarks (each in its own process) and write the outputs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    parser.add_argument("--demo", action="store_true", help="add the demo end to end (~1 h)")
    parser.add_argument(
        "--only",
        action="append",
        choices=sorted(BENCHMARKS),
        metavar="NAME",
        help=f"run only this benchmark (repeatable): {', '.join(sorted(BENCHMARKS))}",
    )
    parser.add_argument("--parquet", type=Path, default=PARQUET, help="the rows (parquet)")
    parser.add_argument("--markdown", type=Path, default=MARKDOWN, help="the generated page")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # one benchmark, in this process
    parser.add_argument("--rows-json", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        rows = measure_here(args.child, args.quick)
        args.rows_json.write_text(json.dumps(rows))
        return 0
    names = (args.only or sorted(BENCHMARKS)) + (["demo"] if args.demo else [])
    load = os.getloadavg()[0]  # other processes on the CPUs skew the figures: say so
    rows: list[Row] = []
    for index, name in enumerate(names, 1):
        print(f"[{index}/{len(names)}] {name} ...", flush=True)
        start = time.perf_counter()
        found = measure_apart(name, args.quick)
        print(f"    {len(found)} row(s) in {time.perf_counter() - start:.0f} s", flush=True)
        rows += found
    facts = {
        "mode": "quick" if args.quick else "full",
        "demo": args.demo,
        "cpu_threads": len(os.sched_getaffinity(0)),
        "load_average": round(load, 1),
    }
    if args.only and args.parquet.is_file():
        rows, facts = keep_the_others(rows, facts, names, args.parquet)
    return finish(rows, args.parquet, args.markdown, facts)


def keep_the_others(
    rows: list[Row], facts: dict[str, Any], measured: list[str], parquet: Path
) -> tuple[list[Row], dict[str, Any]]:
    """With ``--only``: the rows just measured beside the previous run's rows of every other
    benchmark, and facts that say which run measured each kept one (the page states it)."""
    table = pq.read_table(parquet)
    before = json.loads((table.schema.metadata or {}).get(METADATA_KEY, b"{}"))
    previous = [
        {key: (None if pd.isna(value) else value) for key, value in record.items()}
        for record in table.to_pandas().to_dict("records")
        if record["benchmark"] not in measured
    ]
    if not previous:
        return rows, facts
    own = {"mode": before.get("mode", "unknown"), "load_average": before.get("load_average")}
    origins = before.get("kept") or {}  # rows kept before keep the run that measured them
    kept = {name: origins.get(name, own) for name in sorted({r["benchmark"] for r in previous})}
    return rows + previous, {**facts, "measured": sorted(measured), "kept": kept}


if __name__ == "__main__":
    sys.exit(main())
