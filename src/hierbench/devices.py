"""Which device a run computes on: the config's ``device`` (auto, cpu or cuda), resolved once.

``cpu`` is the default because only the CPU gives bitwise-identical artifacts across reruns;
``cuda`` asks for an NVIDIA GPU and is refused before anything is scheduled when CUDA is absent;
``auto`` takes the GPU when there is one.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch loads in the jobs that compute, not when the workflow is planned
    import torch

DEVICE_KEY = "device"
SETTINGS: tuple[str, ...] = ("auto", "cpu", "cuda")
RUN_ANYWHERE = ("auto", "cpu")  # the settings no machine lacks
# cuBLAS is deterministic only with a fixed workspace per stream; with deterministic algorithms
# on and no such setting, torch refuses cuBLAS calls. The value is NVIDIA's documented one.
CUBLAS_WORKSPACE = ("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


class DeviceError(ValueError):
    """The configured device is unknown or not available on this machine."""


def resolve_device(setting: str, *, cuda_available: bool | None = None) -> torch.device:
    """The torch device of a setting; ``cuda`` without CUDA is an error naming the key."""
    import torch

    if setting not in SETTINGS:
        raise DeviceError(f"config key '{DEVICE_KEY}': {setting!r} is not one of {list(SETTINGS)}")
    available = torch.cuda.is_available() if cuda_available is None else cuda_available
    if setting == "cuda" and not available:
        raise DeviceError(
            f"config key '{DEVICE_KEY}': cuda was asked for, but this machine has no CUDA device "
            "(torch.cuda.is_available() is False); use cpu or auto"
        )
    return torch.device("cuda" if setting == "cuda" or (setting == "auto" and available) else "cpu")


def config_device(config: dict[str, Any]) -> torch.device:
    """The device of a (resolved or rule-level) config; ``cpu`` when it names none."""
    return resolve_device(config.get(DEVICE_KEY, "cpu"))


def gpus_per_job(config: dict[str, Any]) -> int:
    """The GPUs a features or training job asks its executor for (Snakemake's ``gpu``
    resource, which the SLURM plugin turns into ``--gpus``): one with ``device: cuda``, none
    otherwise (``auto`` uses a GPU only where a job's node happens to have one)."""
    return 1 if config.get(DEVICE_KEY, "cpu") == "cuda" else 0


def check_device_before_scheduling(config: dict[str, Any], *, jobs_run_here: bool) -> None:
    """Refuse a run whose jobs run on this machine and ask for a device it lacks (called
    before the first job). Jobs sent to a cluster resolve the device on their node instead:
    a login node without a GPU may submit ``device: cuda`` jobs to GPU nodes. ``cpu`` and
    ``auto`` run anywhere, so for them the planner never imports torch (seconds of CPU)."""
    if jobs_run_here and config.get(DEVICE_KEY, "cpu") not in RUN_ANYWHERE:
        config_device(config)


def prepare_cuda() -> None:
    """Settings a deterministic CUDA job needs before its first cuBLAS call: the fixed cuBLAS
    workspace (unless the caller chose one) and full-precision float32 matrix products (no
    TF32, which would change results between GPU generations)."""
    import torch

    name, value = CUBLAS_WORKSPACE
    os.environ.setdefault(name, value)
    torch.backends.cuda.matmul.fp32_precision = "ieee"
    torch.backends.cudnn.conv.fp32_precision = "ieee"


def use_deterministic_torch(device: torch.device | None = None) -> None:
    """Deterministic kernels everywhere, without NaN-filling every fresh allocation.

    An operation with no deterministic kernel raises instead of varying silently; on CUDA,
    cuBLAS gets the fixed workspace it needs for that (``devices.prepare_cuda``).
    ``fill_uninitialized_memory`` only helps to catch kernels that read memory they never
    wrote; none of ours do, and at batch 128 it costs dozens of extra fills per update.
    """
    import torch

    if device is not None and device.type == "cuda":
        prepare_cuda()
    torch.use_deterministic_algorithms(True)
    torch.utils.deterministic.fill_uninitialized_memory = False  # type: ignore[attr-defined]
