"""`hierbench audit`: every artifact verified against its record; tampering is named."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import TINY_RUN

from hierbench.cli import main


def _flip_byte(path: Path, offset: int = 100) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def test_a_complete_run_verifies_and_writes_the_manifest(built_repo: Path, capsys, monkeypatch):
    monkeypatch.chdir(built_repo)
    assert main(["audit", TINY_RUN]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    verified = int(last.split()[0])
    assert last == f"{verified} artifacts verified, 0 failed" and verified > 200
    manifest = pd.read_parquet(built_repo / f"{TINY_RUN}/MANIFEST.parquet")
    assert len(manifest) == verified
    assert {
        "path",
        "sha256",
        "bytes",
        "rule",
        "wildcards",
        "params_sha256",
        "code",
        "inputs",
    } <= set(manifest.columns)


@pytest.mark.parametrize(
    "artifact",
    [
        f"{TINY_RUN}/cub/cells/HS-42/model.safetensors",
        f"{TINY_RUN}/cub/splits/dev.parquet",
        f"{TINY_RUN}/nabirds/features/dev.parquet",
    ],
)
def test_one_changed_byte_is_named(built_repo: Path, artifact: str, capsys, monkeypatch):
    monkeypatch.chdir(built_repo)
    _flip_byte(built_repo / artifact)
    assert main(["audit", TINY_RUN]) == 1
    out = capsys.readouterr().out
    assert f"FAIL {artifact}: sha256 mismatch" in out
    assert f"input {artifact} changed" in out
    assert out.splitlines()[-1].endswith("failed") and " 0 failed" not in out.splitlines()[-1]


def test_missing_and_unrecorded_artifacts_are_named(built_repo: Path, capsys, monkeypatch):
    monkeypatch.chdir(built_repo)
    (built_repo / f"{TINY_RUN}/cub/tables/summary.md").unlink()
    (built_repo / f"{TINY_RUN}/cub/stray.txt").write_text("who made me?")
    assert main(["audit", TINY_RUN, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    problems = {
        item["path"]: item["problems"] for item in report["artifacts"] if not item["passed"]
    }
    assert problems[f"{TINY_RUN}/cub/tables/summary.md"] == ["artifact missing"]
    assert problems[f"{TINY_RUN}/cub/stray.txt"] == ["no provenance record"]
    assert report["summary"]["failed"] == len(problems)
    software = next(item["software"] for item in report["artifacts"] if item["passed"])
    assert software["packages"]["geoopt"] == "0.5.1"
