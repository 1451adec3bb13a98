"""Provenance records: which rule, wildcards, parameters, inputs, code and software made a file.

A record holds no timestamps, so rebuilding an artifact from the same inputs yields the same
record byte for byte; times belong in logs and in the Final lock.
"""

from __future__ import annotations

import functools
import os
import platform
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from hierbench.provenance.hashing import sha256_path
from hierbench.provenance.numerics import numerics_record

RECORD_VERSION = 1

# Packages whose exact versions are written into every record.
RECORDED_PACKAGES: tuple[str, ...] = (
    "hierbench",
    "birdnames",
    "geoopt",
    "matplotlib",
    "numpy",
    "pandas",
    "pillow",
    "pyarrow",
    "rapidfuzz",
    "safetensors",
    "snakemake",
    "timm",
    "torch",
    "torchvision",
)


@dataclass(frozen=True)
class JobContext:
    """What made an artifact: the rule, its wildcards and parameters, inputs and code hash."""

    rule: str
    wildcards: dict[str, str] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    inputs: tuple[str, ...] = ()
    code: str = ""


def package_version(name: str) -> str | None:
    """Installed version of a distribution, or None when it is not installed."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def torch_record() -> dict[str, Any] | None:
    """Torch's device and thread count, when the job loaded torch (None otherwise), and the
    GPU model when the job used CUDA (GPU results may differ between models)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    device = "cuda" if torch.cuda.is_available() else "cpu"
    gpu = torch.cuda.get_device_name() if torch.cuda.is_initialized() else None
    return {"device": device, "threads": torch.get_num_threads(), "gpu": gpu}


def installed_distributions() -> dict[str, str]:
    """Every installed distribution with its exact version (the whole environment), sorted."""
    found = {dist.metadata["Name"]: dist.version for dist in metadata.distributions()}
    return dict(sorted((name.lower(), version) for name, version in found.items() if name))


@functools.lru_cache(maxsize=1)
def _static_software() -> dict[str, Any]:
    """Python, platform, the key packages and every installed distribution, with versions."""
    return {
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
        "platform": f"{platform.system()}-{platform.machine()}",
        "packages": {name: package_version(name) for name in RECORDED_PACKAGES},
        "environment": installed_distributions(),
    }


def software_record() -> dict[str, Any]:
    """What software made an artifact: versions, platform, torch's device and threads, and the
    numeric mode it computed in (:mod:`hierbench.provenance.numerics`)."""
    return {**_static_software(), "torch_runtime": torch_record(), "numerics": numerics_record()}


@functools.lru_cache(maxsize=4096)
def _cached_file_hash(path: str, size: int, mtime_ns: int) -> str:
    """Hash of an input file, cached on its size and modification time within one process."""
    return sha256_path(path)


def input_hash(path: str | os.PathLike[str]) -> str:
    """``hashing.sha256_path`` of an input, each file hashed once per job while unchanged."""
    target = Path(path)
    if target.is_file():
        stat = target.stat()
        return _cached_file_hash(str(target), stat.st_size, stat.st_mtime_ns)
    return sha256_path(target)


def build_record(
    target: str | os.PathLike[str],
    sha256: str,
    size: int,
    job: JobContext,
    *,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Assemble the provenance record of one artifact (JSON-ready, no timestamps)."""
    return {
        "record_version": RECORD_VERSION,
        "path": Path(target).as_posix(),
        "sha256": sha256,
        "bytes": size,
        "rule": job.rule,
        "wildcards": dict(sorted(job.wildcards.items())),
        "params": job.params,
        "inputs": {Path(p).as_posix(): input_hash(p) for p in sorted(job.inputs)},
        "code": job.code,
        "software": software_record(),
        "facts": extra or {},
    }
