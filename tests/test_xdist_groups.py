"""The suite's pytest-xdist work units (tests/xdist_groups.py): a session fixture that tests in
several files share is built once, by one worker, whatever the pytest and xdist releases."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
SHARED_FILES = 4
OTHER_FILES = 4
TESTS_PER_FILE = 3

CONFTEST = """
import os
import sys

import pytest

sys.path.insert(0, {tests!r})
from xdist_groups import group_tests


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    group_tests(config, items, {{"shared_build": "shared"}})


@pytest.fixture(scope="session")
def shared_build():
    with open({log!r}, "a") as log:
        log.write(os.environ.get("PYTEST_XDIST_WORKER", "main") + "\\n")
"""


def _suite(root: Path, log: Path) -> None:
    """Test files of which half take the shared session fixture."""
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "conftest.py").write_text(CONFTEST.format(tests=str(TESTS), log=str(log)))
    for index in range(SHARED_FILES + OTHER_FILES):
        argument = "shared_build" if index < SHARED_FILES else ""
        body = "".join(
            f"def test_{number}({argument}):\n    pass\n\n\n" for number in range(TESTS_PER_FILE)
        )
        (root / f"test_file_{index}.py").write_text(body)


@pytest.mark.slow
def test_tests_sharing_a_session_build_run_in_one_worker(tmp_path: Path):
    log = tmp_path / "builds.txt"
    suite = tmp_path / "suite"
    suite.mkdir()
    _suite(suite, log)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "3",
            "--dist",
            "loadgroup",
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        cwd=suite,
        capture_output=True,
        text=True,
    )
    total = (SHARED_FILES + OTHER_FILES) * TESTS_PER_FILE
    assert result.returncode == 0 and f"{total} passed" in result.stdout, result.stdout
    assert len(log.read_text().splitlines()) == 1, log.read_text()
