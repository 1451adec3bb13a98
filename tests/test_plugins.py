"""Plugins of every kind (hierbench.plugins): a reference's source found without running it,
and one error naming the config key when it cannot be found or loaded."""

from __future__ import annotations

import pytest

from hierbench.plugins import PluginError, load_plugin, plugin_source

GROUP = "hierbench.objectives"


def test_a_plugins_source_is_found_without_running_it(tmp_path):
    plugin = tmp_path / "loud.py"
    plugin.write_text("raise SystemExit('ran')\nOBJ = 1\n")
    assert plugin_source(f"{plugin}:OBJ", "k", GROUP) == plugin.resolve()
    protocol = plugin_source("hierbench.protocol:LOSSES", "k", GROUP)
    assert protocol.name == "protocol.py" and protocol.parent.name == "hierbench"


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("nowhere/plugin.py:OBJ", r"no file nowhere/plugin.py"),
        ("hierbench_no_such_module:OBJ", r"cannot find module 'hierbench_no_such_module'"),
        ("hierbench.protocol:NOPE", r"hierbench.protocol defines no 'NOPE'"),
        ("plain", r"is not 'package.module:NAME'"),
        ("entry-point:nothing-installed", r"no entry point 'nothing-installed'"),
    ],
)
def test_a_plugin_that_cannot_be_found_is_one_error_naming_the_key(reference, message):
    with pytest.raises(PluginError, match=rf"^plugins.objectives.T: .*{message}"):
        plugin_source(reference, "plugins.objectives.T", GROUP)


def test_loading_runs_the_module_and_names_what_it_lacks(tmp_path):
    plugin = tmp_path / "small.py"
    plugin.write_text("VALUE = 3\n")
    assert load_plugin(f"{plugin}:VALUE", "k", GROUP) == 3
    with pytest.raises(
        PluginError, match=r"^k: hierbench_plugin_small has no 'OTHER'; it has \['VALUE'\]"
    ):
        load_plugin(f"{plugin}:OTHER", "k", GROUP)


class _Narrow(PluginError):
    """A kind's own error type."""


def test_a_kind_gets_its_own_error_type():
    with pytest.raises(_Narrow, match="no file"):
        plugin_source("nowhere.py:X", "k", GROUP, _Narrow)


def test_a_missing_plugin_file_is_named_in_the_folder_it_was_looked_for_in(tmp_path, monkeypatch):
    """A config's relative path arrives made absolute from the config's folder: the error
    names that folder, never the folder the command was typed in; a path still relative is
    the working folder's, and the error says so."""
    monkeypatch.chdir(tmp_path)
    project = tmp_path / "my project"
    with pytest.raises(PluginError) as absolute:
        plugin_source(f"{project}/losses/t.py:OBJ", "plugins.objectives.T", GROUP)
    assert str(absolute.value) == f"plugins.objectives.T: no file t.py in {project / 'losses'}"
    with pytest.raises(PluginError) as relative:
        load_plugin("losses/t.py:OBJ", "k", GROUP)
    assert str(relative.value) == f"k: no file losses/t.py in {tmp_path} (the working folder)"
