"""Set-up: pins agree everywhere, and an up-to-date venv is not reinstalled."""

from __future__ import annotations

import re
import subprocess
import tomllib

from conftest import REPO

PIN = re.compile(r"^([A-Za-z0-9_.\-]+)(?:\[[a-z,]+\])?==([^\s;]+)$")  # extras allowed


def _lock(name: str = "requirements.lock") -> dict[str, str]:
    pins = {}
    for line in (REPO / name).read_text().splitlines():
        if line and not line.startswith("#"):
            match = PIN.match(line.strip())
            assert match, f"{name} line is not an exact pin: {line!r}"
            pins[match.group(1).lower().replace("_", "-")] = match.group(2)
    return pins


def _pins(requirements: list[str]) -> dict[str, str]:
    pins = {}
    for requirement in requirements:
        match = PIN.match(requirement)
        assert match, f"pyproject dependency is not an exact pin: {requirement}"
        pins[match.group(1).lower().replace("_", "-")] = match.group(2)
    return pins


def test_direct_dependencies_are_exact_pins_that_match_the_lock():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    lock = _lock()
    extras = project["optional-dependencies"]
    pins = _pins(project["dependencies"] + extras["dev"] + extras["tracker"])
    for name, version in pins.items():
        assert lock.get(name) == version, f"{name}: pyproject {version} vs lock"
    assert "tensorboard" in pins  # configs/tiny.yaml exports to TensorBoard: make installs it


def test_the_bench_extra_is_its_lock_exactly_and_adds_to_the_main_lock():
    """pyproject's `bench` group pins what requirements-bench.lock pins, nothing in the main
    lock (so installing it with the main lock as constraints changes no other package)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    bench = _pins(project["optional-dependencies"]["bench"])
    assert bench == _lock("requirements-bench.lock")
    assert "scikit-learn" in bench
    assert not set(bench) & set(_lock()), "a bench pin is already in requirements.lock"


def test_torch_and_torchvision_are_pinned_together():
    lock = _lock()
    assert (lock["torch"], lock["torchvision"]) == ("2.14.1", "0.29.1")


def test_environment_yml_carries_the_same_pins():
    listed = re.findall(
        r"^\s+- ([A-Za-z0-9_.\-]+==\S+)$", (REPO / "environment.yml").read_text(), re.M
    )
    lock_lines = [
        line.strip()
        for line in (REPO / "requirements.lock").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert listed == lock_lines


def test_every_rule_with_a_script_names_the_conda_environment():
    """``--software-deployment-method conda`` gives every scripted rule environment.yml."""
    common = (REPO / "rules/common.smk").read_text()
    assert 'ENVIRONMENT = "../environment.yml"\n' in common
    stages = [path for path in sorted((REPO / "rules").glob("*.smk")) if path.name != "common.smk"]
    for path in stages:  # a rule made with ``use rule ... with:`` inherits its parent's
        text = path.read_text()
        scripts = len(re.findall(r"^ +script:\n", text, re.M))  # a generated rule is indented
        assert scripts, path.name
        named = re.findall(r"^( +)conda:\n +ENVIRONMENT\n\1script:\n", text, re.M)
        assert len(named) == scripts, path.name


def test_the_post_deploy_script_installs_this_checkout_without_dependencies(tmp_path):
    """Snakemake runs environment.post-deploy.sh inside the new environment; a stand-in pip
    records what it was asked to install (run from another folder: the path is the script's)."""
    stub = tmp_path / "bin" / "pip"
    stub.parent.mkdir()
    stub.write_text(f'#!/bin/sh\necho "$@" > {tmp_path / "args"}\n')
    stub.chmod(0o755)
    env = {"PATH": f"{stub.parent}:/usr/bin:/bin"}
    script = REPO / "environment.post-deploy.sh"
    subprocess.run(["bash", str(script)], cwd=tmp_path, env=env, check=True)
    args = (tmp_path / "args").read_text().split()
    assert args == ["install", "--no-deps", "--no-build-isolation", "--editable", str(REPO)]
    assert (REPO / "pyproject.toml").is_file()


def test_up_to_date_venv_needs_no_install():
    """`make -q venv` exits 0 only when the dependency stamp is current: nothing to install."""
    result = subprocess.run(["make", "-q", "venv"], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, "the venv stamp is stale; run `make venv`"
