"""The config's device (auto, cpu, cuda): resolved once, and cuda without CUDA refused before
anything is scheduled, naming the key."""

from __future__ import annotations

import pytest
import torch
from conftest import REPO

from hierbench.config import load_config
from hierbench.devices import DeviceError, config_device, resolve_device


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


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_a_dry_run_asking_for_cuda_stops_before_scheduling(tmp_path, monkeypatch):
    import os
    import subprocess
    import sys
    from pathlib import Path

    config = tmp_path / "cuda.yaml"
    config.write_text((REPO / "configs/tiny.yaml").read_text() + "\ndevice: cuda\n")
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    result = subprocess.run(
        [snakemake, "-n", "--configfile", str(config)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "HF_HUB_OFFLINE": "1",
        },
    )
    assert result.returncode != 0
    assert "config key 'device': cuda was asked for" in result.stdout + result.stderr
    assert "Job stats" not in result.stdout
