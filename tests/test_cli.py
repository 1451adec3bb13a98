"""The `hierbench` command line."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import REPO

from hierbench.cli import main
from hierbench.codehash import code_hash

SCHEMA = str(REPO / "schemas/config.schema.yaml")


def test_config_prints_the_resolved_config(capsys):
    assert main(["config", str(REPO / "config.yaml"), "--schema", SCHEMA]) == 0
    resolved = json.loads(capsys.readouterr().out)
    assert resolved["training"]["epochs"] == 100
    assert resolved["backbone"]["name"] == "efficientnet_lite0"


def test_config_error_exits_2_naming_the_key(tmp_path: Path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("head:\n  dropout: 2\n")
    assert main(["config", str(bad), "--schema", SCHEMA]) == 2
    assert "config key 'head.dropout'" in capsys.readouterr().err


def test_config_inputs_flag_reports_missing_data(capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    assert main(["config", "configs/paper.yaml", "--inputs"]) == 2
    assert "datasets.cub.root" in capsys.readouterr().err


def test_code_hash_matches_the_library(capsys):
    assert main(["code-hash", "inputs"]) == 0
    first_line = capsys.readouterr().out.splitlines()[0]
    assert first_line == code_hash(["inputs"])
