"""The config's device (auto, cpu, cuda): resolved once, and cuda without CUDA refused before
anything is scheduled, naming the key."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from conftest import REPO, TINY_RUN, snakemake

from hierbench.config import load_config
from hierbench.devices import (
    DeviceError,
    check_device_before_scheduling,
    config_device,
    resolve_device,
)


@pytest.mark.parametrize(
    ("setting", "available", "expected"),
    [("cpu", True, "cpu"), ("auto", True, "cuda"), ("auto", False, "cpu"), ("cuda", True, "cuda")],
)
def test_settings_resolve_to_a_device(setting, available, expected):
    assert resolve_device(setting, cuda_available=available) == torch.device(expected)


def test_cuda_without_cuda_and_unknown_settings_name_the_key():
    with pytest.raises(DeviceError, match=r"config key 'device': cuda was asked for"):
        resolve_device("cuda", cuda_available=False)
    with pytest.raises(DeviceError, match=r"config key 'device': 'tpu' is not one of"):
        resolve_device("tpu")


def test_the_shipped_configs_run_on_the_cpu_by_default():
    for name in ("config.yaml", "configs/tiny.yaml", "configs/table-example.yaml"):
        config = load_config(REPO / name, REPO / "schemas/config.schema.yaml")
        assert config["device"] == "cpu" and config_device(config) == torch.device("cpu")


def test_only_a_run_whose_jobs_run_here_is_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(DeviceError, match=r"config key 'device': cuda was asked for"):
        check_device_before_scheduling({"device": "cuda"}, jobs_run_here=True)
    check_device_before_scheduling({"device": "cuda"}, jobs_run_here=False)  # a cluster's nodes
    check_device_before_scheduling({"device": "auto"}, jobs_run_here=True)
    with pytest.raises(DeviceError, match=r"'gpu' is not one of"):
        check_device_before_scheduling({"device": "gpu"}, jobs_run_here=True)


def test_the_planner_checks_cpu_and_auto_without_importing_torch():
    code = (
        "import sys\n"
        "from hierbench.devices import check_device_before_scheduling as check\n"
        "for setting in ('cpu', 'auto'):\n"
        "    check({'device': setting}, jobs_run_here=True)\n"
        "print('torch' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_a_local_run_asking_for_cuda_stops_before_its_first_job(repo_copy):
    config = repo_copy / "cuda.yaml"
    config.write_text((repo_copy / "configs/tiny.yaml").read_text() + "\ndevice: cuda\n")
    target = f"{TINY_RUN}/cub/inputs/classes.txt"
    result = snakemake(repo_copy, target, "--configfile", str(config), check=False)
    assert result.returncode != 0
    assert "config key 'device': cuda was asked for" in result.stdout
    assert not (repo_copy / target).exists()
    assert "rule stage_input" not in result.stdout  # no job started
    # A dry run only shows the plan (a cluster's login node may lack the GPU its nodes have).
    assert "Job stats" in snakemake(repo_copy, "-n", "--configfile", str(config)).stdout
