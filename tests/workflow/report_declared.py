"""The files a run's workflow declares for Snakemake's report: every job's output (or input)
wrapped in ``report(...)``, read from the run's job DAG, whatever the rules.

Snakemake has no public call that lists a DAG's jobs, so this uses its Python API
(``snakemake.api.SnakemakeApi``: the workflow, then ``DAGApi.printrulegraph``, which builds the DAG)
and reads the built DAG's jobs from the workflow object behind it
(``WorkflowApi._workflow.dag.jobs``, private), each file's flag with ``snakemake.io.is_flagged``
and ``get_flag_value``, as Snakemake's own report does. Run as a script in a repository copy
(its library first on the import path) it prints the files as JSON; :func:`declared_report_files`
runs it so.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class DeclaredFile:
    """A file a job declares for the report: its rule and the report entry's category."""

    rule: str
    category: str
    subcategory: str


def declared_report_files(repo: Path, *args: str) -> dict[str, DeclaredFile]:
    """The report files of the run of ``repo`` (``args``: ``--configfile FILE`` ...), by path
    relative to ``repo``, as its DAG declares them."""
    env = {**os.environ, "PYTHONPATH": str(repo / "src"), "HF_HUB_OFFLINE": "1"}
    listed = subprocess.run(
        [sys.executable, __file__, *args], cwd=repo, env=env, capture_output=True, text=True
    )
    if listed.returncode != 0:
        raise AssertionError(f"listing the declared report files failed:\n{listed.stderr}")
    return {path: DeclaredFile(**entry) for path, entry in json.loads(listed.stdout).items()}


def _config_files(args: list[str]) -> list[Path]:
    """The ``--configfile`` values among the command line's arguments."""
    flags = [i for i, arg in enumerate(args) if arg == "--configfile"]
    if len(flags) * 2 != len(args) or flags != list(range(0, len(args), 2)):
        raise SystemExit(f"usage: report_declared.py [--configfile FILE]... (got {args})")
    return [Path(args[i + 1]) for i in flags]


def _entry(job, path) -> DeclaredFile:
    """The report entry of one flagged file of ``job`` (category names with wildcards filled)."""
    from snakemake.io import get_flag_value

    flag = get_flag_value(path, "report")
    names = [
        (name or "").format(**dict(job.wildcards_dict))
        for name in (flag.category, flag.subcategory)
    ]
    return DeclaredFile(job.rule.name, *names)


def _declared(config_files: list[Path]) -> dict[str, DeclaredFile]:
    """The report files of the workflow in the current folder under ``config_files``."""
    from snakemake.api import SnakemakeApi
    from snakemake.io import is_flagged
    from snakemake.settings.types import ConfigSettings, ResourceSettings

    found: dict[str, DeclaredFile] = {}
    with SnakemakeApi() as api:
        workflow = api.workflow(
            resource_settings=ResourceSettings(cores=1),
            config_settings=ConfigSettings(configfiles=config_files),
            snakefile=Path("Snakefile"),
            workdir=Path.cwd(),
        )
        dag = workflow.dag()
        with contextlib.redirect_stdout(io.StringIO()):
            dag.printrulegraph()  # builds the DAG (its DOT text is not wanted)
        for job in workflow._workflow.dag.jobs:
            for path in [*job.output, *job.input]:
                if is_flagged(path, "report"):
                    found.setdefault(str(path), _entry(job, path))
    return found


if __name__ == "__main__":
    declared = _declared(_config_files(sys.argv[1:]))
    print(json.dumps({path: asdict(entry) for path, entry in sorted(declared.items())}, indent=1))
