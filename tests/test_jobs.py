"""The bridge from a Snakemake job to the library (hierbench.jobs), with a fake job object."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

from hierbench.jobs import job_context, limit_threads, send_stderr_to_log, start_job
from hierbench.provenance.artifacts import provenance_path
from hierbench.provenance.hashing import sha256_file
from hierbench.provenance.integrity import TamperedArtifactError
from hierbench.provenance.records import JobContext

CODE = "0123456789abcdef" * 4


class Named(list):
    """Like Snakemake's Namedlist: a list of values that also has named entries (.items())."""

    def __init__(self, **named):
        super().__init__(named.values())
        self._named = named

    def items(self):
        return self._named.items()


def fake_job(**overrides) -> SimpleNamespace:
    """The attributes of Snakemake's ``snakemake`` object that hierbench.jobs reads."""
    job = {
        "rule": "stage_input",
        "wildcards": Named(dataset="cub", seed=42),
        "params": Named(code=CODE, epochs=2),
        "input": Named(source="resources/cub_classes.txt"),
        "log": Named(),
        "threads": 1,
    }
    return SimpleNamespace(**{**job, **overrides})


@pytest.fixture
def restore_stderr_and_logging(monkeypatch: pytest.MonkeyPatch):
    """Put sys.stderr and the root logger back (and close the log stream) after the test."""
    original = sys.stderr
    monkeypatch.setattr(sys, "stderr", original)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    if sys.stderr is not original:
        sys.stderr.close()
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture
def fake_torch(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A stand-in for a loaded torch: the thread counts it was given."""
    calls: list[int] = []
    torch = ModuleType("torch")
    torch.set_num_threads = calls.append
    monkeypatch.setitem(sys.modules, "torch", torch)
    return calls


@pytest.mark.usefixtures("restore_stderr_and_logging")
def test_stderr_and_logging_go_to_the_log_file_appending(tmp_path: Path):
    log = tmp_path / "logs/cub/inputs/classes.txt.log"
    log.parent.mkdir(parents=True)
    log.write_text("from an earlier attempt\n")
    send_stderr_to_log(log)
    print("to stderr", file=sys.stderr)
    logging.getLogger("hierbench.test").info("to the logger")
    logging.getLogger("hierbench.test").debug("below the level")
    lines = log.read_text(encoding="utf-8").splitlines()
    assert lines[:2] == ["from an earlier attempt", "to stderr"]
    assert len(lines) == 3
    assert lines[2].endswith(" INFO hierbench.test: to the logger")


@pytest.mark.usefixtures("restore_stderr_and_logging")
def test_the_log_folder_is_created(tmp_path: Path):
    log = tmp_path / "deep/er/job.log"
    send_stderr_to_log(str(log))
    print("hello", file=sys.stderr)
    assert log.read_text(encoding="utf-8") == "hello\n"


def test_job_context_reads_rule_wildcards_params_inputs_and_code():
    job = job_context(fake_job())
    assert job == JobContext(
        rule="stage_input",
        wildcards={"dataset": "cub", "seed": "42"},
        params={"epochs": 2},
        inputs=("resources/cub_classes.txt",),
        code=CODE,
    )


def test_job_context_params_become_json_ready_builtins():
    params = Named(
        code=CODE,
        folder=Path("results/cub"),
        pair=(1, Path("a/b.txt")),
        nested={"taus": (0.1, 0.5), 3: {"paths": [Path("x"), "y"]}},
        plain="text",
    )
    job = job_context(fake_job(params=params))
    assert job.params == {
        "folder": "results/cub",
        "pair": [1, "a/b.txt"],
        "nested": {"taus": [0.1, 0.5], "3": {"paths": ["x", "y"]}},
        "plain": "text",
    }
    assert json.loads(json.dumps(job.params)) == job.params


def test_job_context_without_a_code_param_records_empty_code():
    job = job_context(fake_job(params=Named(seed=3), input=[Path("a.txt"), "b.txt"]))
    assert job.code == ""
    assert job.params == {"seed": 3}
    assert job.inputs == ("a.txt", "b.txt")


def test_job_context_does_not_change_the_job_params():
    params = Named(code=CODE, epochs=2)
    job_context(fake_job(params=params))
    assert dict(params.items()) == {"code": CODE, "epochs": 2}


def test_limit_threads_sets_torch_threads_at_least_one(fake_torch: list[int]):
    limit_threads(3)
    limit_threads(0)
    limit_threads("2")
    assert fake_torch == [3, 1, 2]


def test_limit_threads_does_not_import_torch(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    limit_threads(4)
    assert "torch" not in sys.modules


@pytest.mark.usefixtures("restore_stderr_and_logging")
def test_start_job_logs_the_job_caps_threads_and_returns_its_context(
    tmp_path: Path, fake_torch: list[int]
):
    log = tmp_path / "logs/job.log"
    smk = fake_job(log=Named(log=str(log)), threads=3)
    job = start_job(smk)
    assert job == job_context(smk)
    assert fake_torch == [3]
    text = log.read_text(encoding="utf-8")
    assert "INFO hierbench: rule stage_input wildcards {'dataset': 'cub', 'seed': '42'}" in text
    assert text.rstrip().endswith(f"code {CODE[:12]}")


@pytest.mark.usefixtures("restore_stderr_and_logging")
def test_start_job_without_a_log_leaves_stderr_alone(fake_torch: list[int]):
    before = sys.stderr
    smk = fake_job()
    del smk.threads
    job = start_job(smk)
    assert sys.stderr is before
    assert fake_torch == [1]
    assert job.rule == "stage_input"


@pytest.mark.usefixtures("restore_stderr_and_logging")
def test_start_job_refuses_an_input_edited_after_it_was_written(
    tmp_path: Path, fake_torch: list[int]
):
    features = tmp_path / "features/dev.parquet"
    features.parent.mkdir()
    features.write_text("features\n")
    record = {"sha256": sha256_file(features), "rule": "features_dev"}
    provenance_path(features).write_text(json.dumps(record))
    features.write_text("edited by hand\n")
    smk = fake_job(input=Named(features=str(features)), log=Named(log=str(tmp_path / "j.log")))
    with pytest.raises(TamperedArtifactError, match=r"features/dev\.parquet does not match"):
        start_job(smk)


def test_a_user_error_ends_a_job_in_one_line_and_a_bug_keeps_its_traceback(capsys):
    from hierbench.data.layouts import DatasetFormatError
    from hierbench.jobs import report_user_errors

    try:
        raise DatasetFormatError("data/x/images.txt:4: unknown class 7")
    except DatasetFormatError as error:
        report_user_errors(type(error), error, error.__traceback__)
    assert capsys.readouterr().err == "error: data/x/images.txt:4: unknown class 7\n"
    try:
        raise KeyError("a bug")
    except KeyError as error:
        report_user_errors(type(error), error, error.__traceback__)
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last)") and "KeyError: 'a bug'" in err


def _planned_job(tmp_path: Path, **params) -> SimpleNamespace:
    """A fake job of the real rule code of stages.splits, planned now (code_parts), with its
    workflow script copied to ``tmp_path``."""
    from hierbench.provenance.codehash import code_parts

    script = tmp_path / "splits.py"
    script.write_text((Path(__file__).parents[1] / "workflow_scripts/splits.py").read_text())
    parts = code_parts(["stages.splits"], script)
    named = Named(code=CODE, script="splits", code_parts=parts, **params)
    return fake_job(params=named, scriptdir=str(tmp_path))


@pytest.mark.usefixtures("restore_stderr_and_logging")
def test_start_job_runs_the_code_its_run_was_planned_with(tmp_path: Path, fake_torch):
    job = start_job(_planned_job(tmp_path))
    assert "code_parts" not in job.params and "script" not in job.params


@pytest.mark.usefixtures("restore_stderr_and_logging")
def test_start_job_refuses_a_module_edited_after_planning(tmp_path: Path, fake_torch):
    from hierbench.jobs import PlannedCodeError

    smk = _planned_job(tmp_path)
    parts = smk.params._named["code_parts"]
    parts["hierbench.splits.construction"] = "0" * 16  # as planned before an edit
    with pytest.raises(PlannedCodeError, match=r"hierbench\.splits\.construction changed after"):
        start_job(smk)


@pytest.mark.usefixtures("restore_stderr_and_logging")
def test_start_job_refuses_its_script_edited_after_planning(tmp_path: Path, fake_torch):
    from hierbench.jobs import PlannedCodeError

    smk = _planned_job(tmp_path)
    (tmp_path / "splits.py").write_text("raise SystemExit(3)\n")
    with pytest.raises(PlannedCodeError, match=r"rule stage_input: splits\.py changed after"):
        start_job(smk)


@pytest.mark.usefixtures("restore_stderr_and_logging")
def test_start_job_refuses_a_job_outside_its_planned_numeric_mode(
    tmp_path: Path, fake_torch, monkeypatch: pytest.MonkeyPatch
):
    from hierbench.provenance import numerics

    smk = fake_job(params=Named(code=CODE, numerics=numerics.mode_name(numerics.PORTABLE)))
    monkeypatch.delenv(numerics.MODE_VARIABLE, raising=False)
    with pytest.raises(numerics.NumericModeError, match="planned in the numeric mode"):
        start_job(smk)
    for key, value in numerics.kernel_settings(numerics.PORTABLE).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(numerics, "torch_capability", lambda: None)
    job = start_job(fake_job(params=smk.params, threads=2))
    assert fake_torch[-1] == 1  # one thread in the portable mode, whatever the job's threads
    assert job.params["numerics"] == numerics.mode_name(numerics.PORTABLE)
