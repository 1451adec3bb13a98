"""The numeric mode: which kernels and how many threads a job computes with, so that a run's
bytes do not depend on the machine that made them.

The same float32 sum rounds differently when it is split over 8-wide (AVX2) or 16-wide
(AVX-512) vector lanes, or over 1 or 2 threads; each math library picks both by itself at load
time (torch's ATen, MKL and oneDNN inside torch, OpenBLAS and its own SIMD loops inside numpy).
In the ``portable`` mode (the default) every job uses one kernel path, x86-64-v3 (AVX2 with
FMA: every x86-64 server and desktop CPU since 2013–2015, Intel and AMD), and computes on one
thread, whatever ``--cores`` says: its bytes are the same on any such machine. ``native`` lets
each library choose the fastest path for the CPU at hand (other machines give the same numbers
within rounding, not the same bytes).

The libraries read their settings when they load, so the workflow sets them in the environment
that every job inherits (:func:`pin_environment`, from the Snakefile, before any job starts);
each job then checks, as it starts, that they are in force (:func:`check_in_force`) and records
what it computed with (:func:`numerics_record`).
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any

MODE_KEY = "numeric_mode"
PORTABLE = "portable"
NATIVE = "native"
MODES: tuple[str, ...] = (PORTABLE, NATIVE)
# The environment variable naming the mode in force, set with the kernel settings below.
MODE_VARIABLE = "HIERBENCH_NUMERIC_MODE"
X86_64 = ("x86_64", "amd64")
# x86-64-v3 for each library that picks a kernel path by itself. Read once, at library load.
X86_64_V3: dict[str, str] = {
    "ATEN_CPU_CAPABILITY": "avx2",  # torch's own vectorised kernels
    # MKL (torch's BLAS): its AVX2 branch with fixed cache sizes and reductions (MKL's own
    # reproducibility mode; on a CPU not Intel's, MKL takes its AUTO branch in that mode)
    "MKL_CBWR": "AVX2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # oneDNN (torch's convolutions)
    "DNNL_MAX_CPU_ISA": "AVX2",  # its older name
    "OPENBLAS_CORETYPE": "Haswell",  # numpy's and scipy's BLAS: the AVX2 kernels
    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",  # numpy's AVX-512 loops
}
# The intra-op threads of a job's computation in the portable mode: one, so no sum is split
# differently on another core count; the run's parallelism is its jobs, side by side.
PORTABLE_THREADS = 1


class NumericModeError(ValueError):
    """A job computes in another numeric mode than the one its run was planned in."""


def is_x86_64(machine: str | None = None) -> bool:
    """Whether this (or ``machine``'s) architecture is x86-64, where the portable path exists."""
    return (machine or platform.machine()).lower() in X86_64


def mode_name(mode: str, machine: str | None = None) -> str:
    """The mode as records name it: ``portable-x86-64-v3`` (x86-64), ``portable-<arch>``
    (another architecture: one thread, its libraries' own kernels) or ``native``."""
    if mode not in MODES:
        raise NumericModeError(f"config key '{MODE_KEY}': {mode!r} is not one of {list(MODES)}")
    if mode == NATIVE:
        return NATIVE
    arch = (machine or platform.machine()).lower()
    return f"{PORTABLE}-x86-64-v3" if is_x86_64(arch) else f"{PORTABLE}-{arch}"


def kernel_settings(mode: str, machine: str | None = None) -> dict[str, str]:
    """The environment settings of ``mode`` on ``machine`` (this one by default)."""
    settings = {MODE_VARIABLE: mode_name(mode, machine)}
    if mode == PORTABLE and is_x86_64(machine):
        settings.update(X86_64_V3)
    return settings


def pin_environment(mode: str, environ: MutableMapping[str, str] | None = None) -> None:
    """Set ``mode``'s kernel settings in ``environ`` (the process's), overriding the user's:
    every job started from this process inherits them before it loads a math library."""
    target = os.environ if environ is None else environ
    target.update(kernel_settings(mode))


def compute_threads(mode: str, job_threads: int) -> int:
    """The intra-op threads a job computes with: one in the portable mode, the job's own
    (Snakemake's ``threads``) in the native one."""
    return PORTABLE_THREADS if mode_name(mode) != NATIVE else max(1, int(job_threads))


def mode_of(name: str) -> str:
    """The config value behind a recorded mode name."""
    return NATIVE if name == NATIVE else PORTABLE


def check_in_force(planned: str, environ: Mapping[str, str] | None = None) -> None:
    """Refuse a job whose kernels are not those of the mode its run was planned in (named as
    :func:`mode_name` names it): a job started outside the workflow, or with torch loaded
    before the settings were made."""
    source = os.environ if environ is None else environ
    running = source.get(MODE_VARIABLE)
    if running != planned:
        raise NumericModeError(
            f"this job was planned in the numeric mode {planned!r} but runs in "
            f"{running or 'none'!r}: start it with snakemake or hierbench run, which set the mode "
            f"(config key '{MODE_KEY}') before any job loads torch or numpy"
        )
    expected = kernel_settings(mode_of(planned))
    wrong = sorted(key for key, value in expected.items() if source.get(key) != value)
    if wrong:
        raise NumericModeError(
            f"numeric mode {planned!r}: the environment variable(s) {wrong} differ from the "
            f"mode's settings {dict((k, expected[k]) for k in wrong)}; unset them and rerun"
        )
    capability = torch_capability()
    wanted = expected.get("ATEN_CPU_CAPABILITY")
    if wanted and capability not in (None, wanted.upper()):
        raise NumericModeError(
            f"numeric mode {planned!r}: torch loaded its {capability} kernels, not "
            f"{wanted.upper()} (it was imported before the mode was set); rerun the job"
        )


def torch_capability() -> str | None:
    """The vector kernels torch runs (``AVX2``, ``AVX512``, ...), when the job loaded torch."""
    torch = sys.modules.get("torch")
    return None if torch is None else str(torch.backends.cpu.get_cpu_capability())


def numerics_record() -> dict[str, Any]:
    """What a job computed with: the mode, its kernel settings and torch's kernels and threads
    (each the same on every machine in the portable mode, so records are too)."""
    mode = os.environ.get(MODE_VARIABLE)
    torch = sys.modules.get("torch")
    settings = kernel_settings(mode_of(mode)) if mode else {}
    return {
        "mode": mode,
        "settings": {key: os.environ.get(key) for key in sorted(settings)},
        "torch_kernels": torch_capability(),
        "threads": None if torch is None else torch.get_num_threads(),
    }
