"""Every mistake of tests/user_errors.py ends in one line naming what is wrong: exit status 2,
no traceback, and nothing written."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from conftest import REPO
from user_errors import CASES, UserError

from hierbench.cli import main


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("case", CASES, ids=[case.mistake for case in CASES])
def test_a_mistake_gets_one_line_and_writes_nothing(
    case: UserError, tmp_path: Path, monkeypatch, capsys
):
    for name, text in case.files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    for package in case.without:  # None in sys.modules: not importable, find_spec gives None
        monkeypatch.setitem(sys.modules, package, None)
    before = _files(tmp_path)
    argv = shlex.split(case.command.format(tmp=tmp_path, repo=REPO))
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hierbench: error: "), captured.err
    assert case.says.format(tmp=tmp_path) in lines[0]
    assert "Traceback" not in captured.err and captured.out == ""
    assert _files(tmp_path) == before


def test_the_guide_table_lists_every_case():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "error_table", REPO / "docs" / "hooks" / "error_table.py"
    )
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    table = hook.error_table()
    assert table.count("\n| ") == len(CASES)
    for case in CASES:
        assert case.mistake in table
