"""benchmarks/gpu.py: without CUDA it says so and exits 2; ``--smoke`` runs every measurement
at toy sizes on any device and writes its figures."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest
import torch
from conftest import REPO


def _benchmark():
    if str(REPO / "benchmarks") not in sys.path:  # its sibling module benchrows
        sys.path.insert(0, str(REPO / "benchmarks"))
    spec = importlib.util.spec_from_file_location("gpu_benchmark", REPO / "benchmarks/gpu.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_without_cuda_the_benchmark_says_the_figures_are_still_to_be_measured(capsys):
    assert _benchmark().main([]) == 2
    assert "still to be measured" in capsys.readouterr().out


@pytest.mark.slow  # a ViT-B forward and a few trained cells: about 15 s on 2 cores
def test_the_smoke_run_measures_every_figure(tmp_path, capsys):
    out = tmp_path / "gpu.json"
    assert _benchmark().main(["--smoke", "--out", str(out)]) == 0
    figures = json.loads(out.read_text())
    assert set(figures) == {"device", "features", "training", "bundle", "factorial"}
    for group in ("features", "training", "bundle", "factorial"):
        assert all(value > 0 for value in figures[group].values()), group
    factorial = figures["factorial"]
    parts = factorial["tuning_s"] + factorial["cells_s"] + factorial["scoring_s"]
    assert parts == pytest.approx(factorial["total_s"])
    printed = capsys.readouterr().out
    assert "images/s" in printed and "updates/s" in printed and "CUB factorial" in printed
    assert "cell-updates/s" in printed
