"""The numeric mode (hierbench.provenance.numerics): its settings, its check and its record."""

from __future__ import annotations

import pytest

from hierbench.provenance import numerics
from hierbench.provenance.numerics import (
    MODE_VARIABLE,
    NATIVE,
    PORTABLE,
    X86_64_V3,
    NumericModeError,
    check_in_force,
    compute_threads,
    kernel_settings,
    mode_name,
    pin_environment,
)


def test_portable_on_x86_64_pins_every_library_to_avx2():
    settings = kernel_settings(PORTABLE, "x86_64")
    assert settings[MODE_VARIABLE] == "portable-x86-64-v3"
    assert settings["ATEN_CPU_CAPABILITY"] == "avx2"
    assert settings["MKL_CBWR"].startswith("AVX2")
    assert settings["ONEDNN_MAX_CPU_ISA"] == "AVX2"
    assert settings["OPENBLAS_CORETYPE"] == "Haswell"
    assert "X86_V4" in settings["NPY_DISABLE_CPU_FEATURES"].split()


def test_other_architectures_and_native_set_only_the_mode():
    assert kernel_settings(PORTABLE, "aarch64") == {MODE_VARIABLE: "portable-aarch64"}
    assert kernel_settings(NATIVE, "x86_64") == {MODE_VARIABLE: NATIVE}


def test_an_unknown_mode_names_the_key():
    with pytest.raises(NumericModeError, match="numeric_mode"):
        mode_name("fast")


def test_pin_overrides_what_the_user_set():
    environ = {"ATEN_CPU_CAPABILITY": "avx512", "OPENBLAS_CORETYPE": "SkylakeX", "HOME": "/h"}
    pin_environment(PORTABLE, environ)
    if numerics.is_x86_64():
        assert {k: environ[k] for k in X86_64_V3} == X86_64_V3
    assert environ["HOME"] == "/h"


def test_threads_are_one_in_the_portable_mode_whatever_the_cores():
    assert compute_threads(PORTABLE, 2) == compute_threads(PORTABLE, 64) == 1
    assert compute_threads(NATIVE, 8) == 8


def test_a_job_outside_its_planned_mode_is_refused(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(numerics, "torch_capability", lambda: None)  # torch not loaded yet
    planned = mode_name(PORTABLE)
    environ = kernel_settings(PORTABLE)
    check_in_force(planned, environ)  # in force: nothing raised
    with pytest.raises(NumericModeError, match="planned in the numeric mode"):
        check_in_force(planned, kernel_settings(NATIVE))
    with pytest.raises(NumericModeError, match="planned in the numeric mode"):
        check_in_force(planned, {})
    if numerics.is_x86_64():
        changed = {**environ, "ONEDNN_MAX_CPU_ISA": "AVX512_CORE"}
        with pytest.raises(NumericModeError, match="ONEDNN_MAX_CPU_ISA"):
            check_in_force(planned, changed)


def test_torch_loaded_with_other_kernels_is_refused(monkeypatch: pytest.MonkeyPatch):
    if not numerics.is_x86_64():
        pytest.skip("the portable kernel path is x86-64's")
    monkeypatch.setattr(numerics, "torch_capability", lambda: "AVX512")
    with pytest.raises(NumericModeError, match="AVX512 kernels"):
        check_in_force(mode_name(PORTABLE), kernel_settings(PORTABLE))


def test_the_record_names_the_mode_and_its_settings(monkeypatch: pytest.MonkeyPatch):
    for key, value in kernel_settings(PORTABLE).items():
        monkeypatch.setenv(key, value)
    record = numerics.numerics_record()
    assert record["mode"] == mode_name(PORTABLE)
    assert record["settings"] == dict(sorted(kernel_settings(PORTABLE).items()))
