"""The effects package's names import on first use (effects/__init__.py, PEP 562): each name
comes from the module its TYPE_CHECKING import names, and a figure job does not import SciPy."""

from __future__ import annotations

import subprocess
import sys

import pytest

import hierbench.effects as effects
from hierbench.provenance.codehash import module_closure


def test_every_name_comes_from_the_module_its_import_names():
    homes = effects._homes()
    assert {"mean_sd", "arms_summary", "read_per_seed", "EffectsPlan"} <= set(homes)
    for name, home in homes.items():
        value = getattr(effects, name)
        assert value is getattr(sys.modules[home], name)
        assert name in dir(effects)
    assert effects.__all__ == sorted(homes)  # a star import gets every name


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        effects.no_such_name  # noqa: B018


def test_the_code_hash_follows_every_home_module():
    closure = set(module_closure(("effects",)))
    assert {home.removeprefix("hierbench.") for home in effects._homes().values()} <= closure


def test_the_curves_stage_does_not_import_the_statistics():
    probe = "import sys, hierbench.stages.curves; print('scipy.stats' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
