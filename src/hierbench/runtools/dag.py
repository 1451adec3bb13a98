"""Snakemake's job DAG as it prints it (``snakemake --dag``, DOT), read strictly: which rule
each job runs and whether it would run. The rebuild map, ``status`` and the tests count jobs
from it."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

# `snakemake --dag` (DOT): one node per job of the DAG, up-to-date jobs drawn dashed.
DOT_HEADER = (
    "digraph snakemake_dag {",
    "graph[bgcolor=white, margin=0];",
    re.compile(r"node\[shape=box, style=rounded, fontname=sans, +fontsize=10, penwidth=2\];"),
    "edge[penwidth=2, color=grey];",
)
DOT_NODE = re.compile(
    r'(?P<id>\d+)\[label = "(?P<label>[^"]*)", color = "[0-9. ]+", '
    r'style="(?P<style>rounded|rounded,dashed)"\];'
)
DOT_EDGE = re.compile(r"\d+ -> \d+")
DOT_TO_RUN = "rounded"


def dag_jobs(dot: str) -> list[tuple[str, bool]]:
    """``(rule, will run)`` for every job node of ``snakemake --dag`` output; strict."""
    return [(label.split("\\n", 1)[0], runs) for label, runs in dag_labels(dot)]


def dag_labels(dot: str) -> list[tuple[str, bool]]:
    """``(label, will run)`` for every job node of ``snakemake --dag`` output; strict.

    A node's label is its rule name, then its wildcards, separated by a literal ``\\n``;
    Snakemake styles jobs that need no run ``rounded,dashed``. Any line that is not the fixed
    header, a node, an edge or the closing brace is an error, so a format change cannot
    silently drop jobs.
    """
    lines = [line.strip() for line in dot.strip().splitlines()]
    if len(lines) < len(DOT_HEADER) + 1 or lines[-1] != "}":
        raise ValueError(f"not a Snakemake DAG in DOT:\n{dot}")
    for line, expected in zip(lines, DOT_HEADER, strict=False):
        if not (expected.fullmatch(line) if isinstance(expected, re.Pattern) else line == expected):
            raise ValueError(f"unexpected DOT header line {line!r} (expected {expected!r})")
    jobs, ids = [], set()
    for line in lines[len(DOT_HEADER) : -1]:
        node = DOT_NODE.fullmatch(line)
        if node:
            if node["id"] in ids:
                raise ValueError(f"job node {node['id']} listed twice")
            ids.add(node["id"])
            jobs.append((node["label"], node["style"] == DOT_TO_RUN))
        elif not DOT_EDGE.fullmatch(line):
            raise ValueError(f"unexpected DOT line {line!r}")
    return jobs


def job_counts(jobs: Sequence[tuple[str, bool]]) -> Counter[str]:
    """Rules with the number of their jobs that would run, from ``(rule, runs)`` pairs."""
    return Counter(rule for rule, runs in jobs if runs)
