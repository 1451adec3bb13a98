"""``hierbench run``'s decisions (hierbench.runtools.launch): a config's paths from its own
folder (or the repository's, for a config inside it), the progress read from Snakemake's
output, and the lines a stopped or failed run ends with."""

from __future__ import annotations

from pathlib import Path

import pytest

from hierbench.runs import RunFolderError
from hierbench.runtools.launch import (
    Progress,
    base_of,
    config_from_files,
    continue_command,
    failed_lines,
    job_message,
    planning_lines,
    resolve_config_paths,
    snakemake_command,
    stopped_line,
)

CONFIG = {
    "run": "runs/mine",
    "datasets": {
        "moths": {"kind": "table", "root": "photos", "example_taxonomy": "/abs/tree.csv"},
        "cub": {"taxonomy": {"aliases": "my_aliases.json", "checklist": "default"}},
    },
    "plugins": {
        "objectives": {"T": "losses/triplet.py:OBJECTIVE", "U": "package.module:LOSS"},
        "metrics": {"ndcg@10": "entry-point:ndcg"},
    },
    "backbone": {"weights": "weights/model.safetensors"},
}


def test_a_config_outside_the_repository_names_paths_from_its_own_folder(tmp_path: Path):
    repository, folder = tmp_path / "repo", tmp_path / "my project"
    repository.mkdir()
    assert base_of(folder / "config.yaml", repository) == folder
    resolved = resolve_config_paths(CONFIG, tmp_path / "project", repository)
    here = tmp_path / "project"
    assert resolved["run"] == str(here / "runs/mine")
    assert resolved["datasets"]["moths"]["root"] == str(here / "photos")
    assert resolved["datasets"]["moths"]["example_taxonomy"] == "/abs/tree.csv"
    assert resolved["datasets"]["cub"]["taxonomy"] == {
        "aliases": str(here / "my_aliases.json"),
        "checklist": "default",
    }
    assert resolved["plugins"]["objectives"] == {
        "T": f"{here / 'losses/triplet.py'}:OBJECTIVE",
        "U": "package.module:LOSS",
    }
    assert resolved["plugins"]["metrics"] == {"ndcg@10": "entry-point:ndcg"}
    assert resolved["backbone"]["weights"] == str(here / "weights/model.safetensors")
    assert CONFIG["run"] == "runs/mine"  # the config itself is left as it was


def test_a_config_inside_the_repository_keeps_the_repositorys_paths(tmp_path: Path):
    repository = tmp_path / "repo"
    (repository / "configs").mkdir(parents=True)
    base = base_of(repository / "configs/tiny.yaml", repository)
    assert base == repository
    resolved = resolve_config_paths(CONFIG, base, repository)
    assert resolved["run"] == "runs/mine"  # as snakemake --configfile reads it
    assert resolved["datasets"]["moths"]["root"] == str(repository / "photos")


def test_a_run_folder_above_the_configs_folder_is_a_clean_path(tmp_path: Path):
    resolved = resolve_config_paths({"run": "../runs/x"}, tmp_path / "project", tmp_path / "r")
    assert resolved["run"] == str(tmp_path / "runs/x")
    with pytest.raises(RunFolderError, match="inside the repository's src/ folder"):
        resolve_config_paths({"run": "src/x"}, tmp_path / "repo", tmp_path / "repo")


def test_progress_is_read_from_snakemakes_lines():
    progress, stages = Progress(), {"train_factorial": "training"}
    assert not progress.read("Building DAG of jobs...", stages)
    assert progress.read("rule train_factorial:", stages) and progress.stage == "training"
    assert progress.read("localrule all:", stages) and progress.stage == "all"
    assert progress.read("7 of 139 steps (5%) done", stages)
    assert (progress.done, progress.planned) == (7, 139)


def test_a_stopped_run_says_how_far_it_got_and_how_to_continue(tmp_path: Path):
    config = tmp_path / "my project/config.yaml"
    line = stopped_line(Progress(7, 139, "training"), config, "2", tmp_path / "s.log")
    assert line.startswith("stopped: 7 of 139 jobs done (at training); hierbench run '")
    assert continue_command(config, "2") in line and "\n" not in line


def test_a_failed_run_names_its_failed_jobs_their_errors_and_its_log(tmp_path: Path):
    """The terminal gets each failed job's own error (from its log, found from the working
    folder), never Snakemake's ``message: None``, nor the log lines of jobs that succeeded."""
    job_log = tmp_path / "runs/x/logs/cub/splits/dev.parquet.log"
    job_log.parent.mkdir(parents=True)
    job_log.write_text(
        "2026-12-06 INFO hierbench: rule splits\n"
        "error: datasets.cub.splits.middles: 3 middle groups cannot make 4 parts:\n"
        "  lower datasets.cub.splits.middles.test\n"
        "job cpu seconds: rule splits start-up=1.0\n"
    )
    output = [
        "rule taxonomy:",
        "    log: runs/x/logs/cub/taxonomy.parquet.log",
        "rule splits:",
        "    log: runs/x/logs/cub/splits/dev.parquet.log",
        "RuleException:",
        'CalledProcessError in file "rules/splits.smk", line 20:',
        "Error in rule splits:",
        "    message: None",
        "    jobid: 3",
        "    log: runs/x/logs/cub/splits/dev.parquet.log (check log file(s) for error details)",
        "WorkflowError:",
        "At least one job did not complete successfully.",
    ]
    lines = failed_lines(output, tmp_path / "snake log.txt", tmp_path)
    assert lines == [
        "Error in rule splits:",
        "  error: datasets.cub.splits.middles: 3 middle groups cannot make 4 parts:",
        "    lower datasets.cub.splits.middles.test",
        f"  log: {job_log}",
        f"failed: the full log is '{tmp_path / 'snake log.txt'}'",
    ]


def test_a_failed_job_without_a_log_says_so(tmp_path: Path):
    log = "    log: gone.log (check log file(s) for error details)"
    lines = failed_lines(
        ["Error in rule fetch:", "    jobid: 1", log, ""], tmp_path / "s", tmp_path
    )
    assert lines[:3] == [
        "Error in rule fetch:",
        "  (its log holds no error message: the full log may say why)",
        f"  log: {tmp_path / 'gone.log'}",
    ]


@pytest.mark.parametrize(
    ("log", "message"),
    [
        # a user error of hierbench's (hierbench.jobs.report_user_errors): its line and those
        # under it, less the job's cost line
        (
            "INFO start\nfeatures:  12%|#   | 9/72\nerror: 1 of 72 images cannot be read:\n"
            "  cannot read image 'a.jpg'\njob cpu seconds: rule x start-up=1\n",
            ["error: 1 of 72 images cannot be read:", "  cannot read image 'a.jpg'"],
        ),
        # a bug: the last traceback's exception, less its frames
        (
            'INFO start\nTraceback (most recent call last):\n  File "a.py", line 1, in f\n'
            "    g()\n    ^^^\nKeyError: 'x'\n\nDuring handling of the above exception:\n\n"
            'Traceback (most recent call last):\n  File "b.py", line 2, in g\n'
            "    raise OSError('disk full')\nOSError: disk full\n",
            ["OSError: disk full"],
        ),
        ("INFO start\nINFO halfway\n", []),  # killed: no message to show
    ],
)
def test_a_jobs_error_is_the_one_its_log_ends_with(log: str, message: list[str]):
    assert job_message(log) == message


def test_a_planning_error_shows_its_message_and_where_it_was_raised(tmp_path: Path):
    output = [
        "Using workflow specific profile profiles/default",
        'ConfigError in file "/repo/Snakefile", line 53:',
        "the configuration points at missing inputs:",
        "  datasets.moths.root: folder '/p/moths' does not exist",
        '  File "/repo/Snakefile", line 53, in <module>',
        '  File "/repo/src/hierbench/config.py", line 243, in check_inputs_exist',
    ]
    assert planning_lines(output) == [
        "ConfigError: the configuration points at missing inputs:",
        "  datasets.moths.root: folder '/p/moths' does not exist",
        '  (raised in file "/repo/Snakefile", line 53)',
    ]
    assert planning_lines(["Building DAG", "", "disk quota exceeded"]) == [
        "Building DAG",
        "disk quota exceeded",
    ]


def test_the_users_snakemake_arguments_come_before_the_config(tmp_path: Path):
    """--configfile takes every word after it: a target there would be read as a config."""
    command = snakemake_command("snakemake", tmp_path / "c.yaml", "2", "slurm", ["-n", "t.txt"])
    assert command == [
        "snakemake", "-n", "t.txt", "--cores", "2", "--profile", "slurm",
        "--configfile", str(tmp_path / "c.yaml"),
    ]  # fmt: skip


def test_plain_snakemake_takes_each_outside_files_paths_from_its_folder(tmp_path: Path):
    """The Snakefile's rule for --configfile: a file outside the working folder resolves by
    its own folder, an overlay adds no run folder, --config overrides come last."""
    repo, project = tmp_path / "repo", tmp_path / "project"
    (repo / "configs").mkdir(parents=True)
    project.mkdir()
    main = project / "study.yaml"
    main.write_text("run: out\ndatasets: {moths: {kind: table, root: moths}}\n")
    overlay = repo / "configs/lr.yaml"
    overlay.write_text("training: {lr: 0.001}\n")
    merged = {"as": "snakemake merged it"}
    assert config_from_files(merged, [repo / "configs/lr.yaml"], {}, repo) is merged
    assert config_from_files(merged, [main, overlay], {"device": "cpu"}, repo) == {
        "run": str(project / "out"),
        "datasets": {"moths": {"kind": "table", "root": str(project / "moths")}},
        "training": {"lr": 0.001},
        "device": "cpu",
    }


def test_an_installed_packages_own_config_runs_in_the_working_folder(tmp_path: Path):
    """Its profile's demo config lies in the package: its run folder is the working folder's,
    never one inside the package."""
    workflow, project = tmp_path / "site-packages/hierbench/workflow", tmp_path / "project"
    workflow.mkdir(parents=True)
    project.mkdir()
    demo = workflow / "config.yaml"
    demo.write_text("datasets: {cub: {enabled: true}}\n")
    merged = {"datasets": {"cub": {"enabled": True}}}
    assert config_from_files(merged, [demo], {}, project, workflow) is merged
    mine = project.parent / "mine.yaml"
    mine.write_text("run: out\n")
    assert config_from_files({}, [demo, mine], {}, project, workflow) == {
        "run": str(project.parent / "out"),
        "datasets": {"cub": {"enabled": True}},
    }
