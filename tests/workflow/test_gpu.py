"""Training, evaluation embeddings and features on CUDA: what is bitwise reproducible there
(two runs on the same GPU and software) and what is not (the CPU's bytes). Without a CUDA
device every test here is skipped with the reason; the CPU half of the device plumbing is
tested in test_devices.py and test_training.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_companion import CONFIG, _tiny_training_data
from test_features import SMALL, backbone, image_root  # noqa: F401 (fixtures)
from test_training import _data, _spec

from hierbench.cells.checkpoints import embed
from hierbench.cells.companion import companion_spec
from hierbench.features.extraction import extract_features
from hierbench.losses.entailment_objective import companion_objective
from hierbench.losses.hier import HierObjective, HierSettings
from hierbench.training.trainer import train_cell

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="no CUDA device on this machine (torch.cuda.is_available() is False)",
)
CUDA = torch.device("cuda")
CELLS = [("E", "R"), ("E", "S"), ("H", "R"), ("H", "S")]


def _state_bytes(model: torch.nn.Module) -> dict[str, bytes]:
    return {k: v.detach().cpu().numpy().tobytes() for k, v in model.state_dict().items()}


@pytest.mark.parametrize(("geometry", "loss"), CELLS)
def test_a_factorial_cell_trains_bitwise_identically_twice_on_the_gpu(geometry, loss):
    x, y = _data()
    first, second = (train_cell(x, y, _spec(geometry, loss), device=CUDA) for _ in range(2))
    assert _state_bytes(first.model) == _state_bytes(second.model)
    assert first.log["loss"].tolist() == second.log["loss"].tolist()
    assert next(first.model.parameters()).device.type == "cpu"  # handed back on the CPU


@pytest.mark.parametrize(("geometry", "loss"), CELLS)
def test_the_fairness_invariants_do_not_depend_on_the_device(geometry, loss):
    x, y = _data()
    on_gpu = train_cell(x, y, _spec(geometry, loss), device=CUDA)
    on_cpu = train_cell(x, y, _spec(geometry, loss))
    assert on_gpu.initial_weight_hash == on_cpu.initial_weight_hash
    assert on_gpu.batch_order_hashes == on_cpu.batch_order_hashes
    assert on_gpu.updates == on_cpu.updates
    # The weights themselves are not the CPU's: dropout draws from CUDA's own generator and
    # the kernels sum in another order (stated in docs/cluster-gpu.md).


@pytest.mark.parametrize("head", ["E", "L"])
def test_a_companion_cell_trains_bitwise_identically_twice_on_the_gpu(head):
    x, labels, crops = _tiny_training_data()
    models = []
    for _ in range(2):
        spec = companion_spec("cub", head, 42, CONFIG)
        objective = companion_objective(spec, CONFIG, labels, crops)
        models.append(train_cell(x, labels, spec, objective=objective, device=CUDA).model)
    assert _state_bytes(models[0]) == _state_bytes(models[1])


def test_the_hier_baseline_trains_bitwise_identically_twice_on_the_gpu():
    x, y = _data()
    spec = _spec("H", "R")
    settings = HierSettings(proxies=6, topk=4, triplets_per_anchor=5)
    classes = sorted({int(c) for c in y[:, 0]})
    models = []
    for _ in range(2):
        objective = HierObjective(classes, spec.embedding_dim, 2.0, settings, 42, 0.98)
        models.append(train_cell(x, y, spec, objective=objective, device=CUDA).model)
    assert _state_bytes(models[0]) == _state_bytes(models[1])


def test_gpu_embeddings_are_reproducible_and_close_to_the_cpus():
    x, y = _data()
    model = train_cell(x, y, _spec("H", "S")).model
    on_gpu = [embed(model, x, device=CUDA) for _ in range(2)]
    on_cpu = embed(model, x, device=torch.device("cpu"))
    assert on_gpu[0].tobytes() == on_gpu[1].tobytes()
    np.testing.assert_allclose(on_gpu[0], on_cpu, rtol=1e-4, atol=1e-5)


def test_features_on_the_gpu_are_reproducible_and_close_to_the_cpus(backbone, image_root):  # noqa: F811
    root, images = image_root
    options = {"image_size": SMALL, "batch_size": 2, "num_workers": 0}
    first, second = (
        extract_features(backbone, images, root, device="cuda", **options) for _ in "ab"
    )
    assert first.dtype == np.float32 and first.tobytes() == second.tobytes()
    on_cpu = extract_features(backbone, images, root, device="cpu", **options)
    # float16 autocast on the GPU: close to the CPU's float32 features, never equal.
    np.testing.assert_allclose(first, on_cpu, rtol=0.05, atol=0.05)
