"""Which device a run computes on: the config's ``device`` (auto, cpu or cuda), resolved once.

``cpu`` is the default because only the CPU gives bitwise-identical artifacts across reruns;
``cuda`` asks for an NVIDIA GPU and is refused before anything is scheduled when CUDA is absent;
``auto`` takes the GPU when there is one.
"""

from __future__ import annotations

from typing import Any

import torch

DEVICE_KEY = "device"
SETTINGS: tuple[str, ...] = ("auto", "cpu", "cuda")


class DeviceError(ValueError):
    """The configured device is unknown or not available on this machine."""


def resolve_device(setting: str, *, cuda_available: bool | None = None) -> torch.device:
    """The torch device of a setting; ``cuda`` without CUDA is an error naming the key."""
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
