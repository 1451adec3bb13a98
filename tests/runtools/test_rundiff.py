"""Two runs compared: identical bytes except the artifacts that hold a time, and their records."""

from __future__ import annotations

import json
from pathlib import Path

from hierbench.runtools.rundiff import (
    compare_runs,
    dataset_targets,
    is_timed,
    software_environments,
)


def _write(repo: Path, relative: str, text: str) -> None:
    path = repo / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _run(repo: Path, lock_time: str, eval_bytes: str = "scores") -> Path:
    _write(repo, "results/cub/lock/final_lock.json", lock_time)
    _write(repo, "results/cub/lock/final_lock.json.prov.json", json.dumps({"inputs": []}))
    _write(repo, "results/cub/cells/ER-42/train_log.parquet", lock_time)
    _write(repo, "results/cub/eval/ER-42.parquet", eval_bytes)
    record = {"inputs": ["results/cub/lock/final_lock.json"], "input_hash": lock_time}
    _write(repo, "results/cub/eval/ER-42.parquet.prov.json", json.dumps(record))
    _write(repo, "results/cub/curves/training_curves_factorial.png", "curves")
    record = {"inputs": ["results/cub/cells/ER-42/train_log.parquet"], "input_hash": lock_time}
    _write(repo, "results/cub/curves/training_curves_factorial.png.prov.json", json.dumps(record))
    _write(repo, "results/cub/.snakemake_timestamp", lock_time)
    return repo


def test_only_the_timed_artifacts_and_their_records_may_differ(tmp_path: Path):
    diff = compare_runs(_run(tmp_path / "a", "t1"), _run(tmp_path / "b", "t2"))
    assert diff.identical
    assert diff.compared == 7
    assert diff.exempt == [
        "results/cub/cells/ER-42/train_log.parquet",
        "results/cub/curves/training_curves_factorial.png.prov.json",
        "results/cub/eval/ER-42.parquet.prov.json",
        "results/cub/lock/final_lock.json",
        "results/cub/lock/final_lock.json.prov.json",
    ]


def test_a_changed_artifact_and_a_missing_one_are_named(tmp_path: Path):
    first = _run(tmp_path / "a", "t1")
    second = _run(tmp_path / "b", "t1", eval_bytes="other scores")
    _write(first, "results/cub/extra.json", "{}")
    diff = compare_runs(first, second)
    assert not diff.identical
    assert diff.differing == ["results/cub/eval/ER-42.parquet"]
    assert diff.only_first == ["results/cub/extra.json"]
    assert diff.only_second == []


def test_timed_paths():
    assert is_timed("results/nabirds/lock/final_lock.json")
    assert is_timed("results/cub/cells/outer/outer-1/HS-42/train_log.parquet")
    assert not is_timed("results/cub/lock/reseal_history.md")


def _record(
    repo: Path,
    relative: str,
    packages: dict[str, str],
    threads: int,
    numerics: dict | None = None,
) -> None:
    software = {"python": "3.11.9", "environment": packages}
    software["torch_runtime"] = {"device": "cpu", "threads": threads}
    if numerics is not None:
        software["numerics"] = numerics
    _write(repo, relative, json.dumps({"inputs": [], "software": software}))


def _numerics(mode: str, kernels: str | None) -> dict:
    """A record's numeric mode: its settings, and torch's kernels where the job loaded torch."""
    threads = None if kernels is None else 1
    settings = {"HIERBENCH_NUMERIC_MODE": mode}
    return {"mode": mode, "settings": settings, "torch_kernels": kernels, "threads": threads}


def test_one_environment_whether_or_not_a_job_loaded_torch(tmp_path: Path):
    mode = "portable-x86-64-v3"
    _record(tmp_path, "results/a.parquet.prov.json", {}, 1, _numerics(mode, "AVX2"))
    _record(tmp_path, "results/b.parquet.prov.json", {}, 1, _numerics(mode, None))
    assert len(software_environments(tmp_path)) == 1
    manifest = {"rule": "cli:audit", "inputs": [], "software": {"python": "3.11.9"}}
    _write(tmp_path, "results/MANIFEST.parquet.prov.json", json.dumps(manifest))
    assert len(software_environments(tmp_path)) == 1  # the audit's own record is not a job's
    _record(tmp_path, "results/c.parquet.prov.json", {}, 1, _numerics("native", "AVX512"))
    assert len(software_environments(tmp_path)) == 2


def test_one_environment_when_only_torch_threads_differ(tmp_path: Path):
    _record(tmp_path, "results/a.parquet.prov.json", {"torch": "2.14.1"}, threads=1)
    _record(tmp_path, "results/b/c.parquet.prov.json", {"torch": "2.14.1"}, threads=8)
    assert software_environments(tmp_path) == [
        {"python": "3.11.9", "environment": {"torch": "2.14.1"}}
    ]


def test_a_job_with_other_packages_is_a_second_environment(tmp_path: Path):
    _record(tmp_path, "results/a.parquet.prov.json", {"torch": "2.14.1"}, threads=1)
    _record(tmp_path, "results/b.parquet.prov.json", {"torch": "2.13.0"}, threads=1)
    assert len(software_environments(tmp_path)) == 2


def test_a_recorded_folder_is_one_target(tmp_path: Path):
    """The demo and the tracker export are directory outputs: the folder is the target, never
    a file inside it."""
    run = tmp_path / "results/cub"
    _write(tmp_path, "results/cub/tables/summary.md", "x")
    _write(tmp_path, "results/cub/tables/summary.md.prov.json", "{}")
    _write(tmp_path, "results/cub/tensorboard/cells/ER-42/events.out.tfevents.0.hierbench", "e")
    _write(tmp_path, "results/cub/tensorboard.prov.json", "{}")
    _write(tmp_path, "results/cub/demo/CUB_200_2011/images.txt", "1 a.jpg")
    _write(tmp_path, "results/cub/demo/CUB_200_2011.prov.json", "{}")
    assert run.is_dir()
    assert dataset_targets(tmp_path, "results", "cub") == [
        "results/cub/tables/summary.md",
        "results/cub/demo/CUB_200_2011",
        "results/cub/tensorboard",
    ]
