"""The config schema: key-named errors, descriptions and defaults everywhere, shipped configs."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, snakemake

from hierbench.config import (
    ConfigError,
    _resolve,
    check_inputs_exist,
    load_config,
    load_yaml,
    locked_config,
    missing_inputs,
    named_sources,
    training_config,
    validate_config,
)
from hierbench.effects.intervals import IntervalSettings

SCHEMA = load_yaml(REPO / "schemas/config.schema.yaml")


def _error(config: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        validate_config(config, SCHEMA)
    return str(caught.value)


def test_wrong_type_names_the_key():
    message = _error({"training": {"epochs": "many"}})
    assert "'training.epochs'" in message and "not of type 'integer'" in message


def test_wrong_type_in_a_list_names_the_index():
    message = _error({"training": {"seeds": [42, "x"]}})
    assert "training.seeds[1]" in message


def test_unknown_key_names_the_key_and_the_allowed_ones():
    message = _error({"datasets": {"cub": {"sourc": "demo"}}})
    assert "unknown config key 'datasets.cub.sourc' (did you mean 'source'?)" in message
    assert "'source'" in message
    assert "did you mean" not in _error({"training": {"zzzz": 1}})  # nothing near: no guess


def test_interval_settings_are_checked_and_default():
    assert "'effects.intervals.level'" in _error({"effects": {"intervals": {"level": 95}}})
    assert "'effects.intervals.replicates'" in _error({"effects": {"intervals": {"replicates": 5}}})
    config: dict[str, Any] = {}
    validate_config(config, SCHEMA)
    assert IntervalSettings.from_config(config) == IntervalSettings(0.95, 10_000, 0)


def test_a_yaml_error_and_a_missing_file_name_the_file_and_line(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("run: results\ntraining:\n  epochs: [1,\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(broken))}:4: not valid YAML: "):
        load_yaml(broken)
    with pytest.raises(ConfigError, match=r"absent.yaml: no such file$"):
        load_yaml(tmp_path / "absent.yaml")


def test_unknown_top_level_key():
    assert "unknown config key 'trainng'" in _error({"trainng": {}})


def test_missing_required_key_names_the_key():
    message = _error({"datasets": {"nabirds": {"hyperbolic": {"radius": 0.4}}}})
    assert "missing required config key 'datasets.nabirds.hyperbolic.curvature'" in message


def test_all_errors_reported_together():
    message = _error({"training": {"epochs": "x", "lr": "y"}, "extra": 1})
    assert "training.epochs" in message and "training.lr" in message and "'extra'" in message


def test_enum_violation_names_the_key():
    assert "'datasets.cub.source'" in _error({"datasets": {"cub": {"source": "web"}}})


def test_defaults_fill_an_empty_config_with_the_paper_protocol():
    config = validate_config({}, SCHEMA)
    assert config["training"]["epochs"] == 100
    assert config["training"]["lr"] == pytest.approx(5e-5)
    assert config["datasets"]["cub"]["hyperbolic"] == {"curvature": 2.0, "radius": 0.4}
    assert config["datasets"]["nabirds"]["hyperbolic"] == {"curvature": 0.1, "radius": 0.4}
    assert config["datasets"]["nabirds"]["splits"]["parents"] == {
        "train": 242,
        "validation": 81,
        "test": 81,
    }
    assert config["tuning"]["taus"] == [0.07, 0.10, 0.20, 0.30, 0.50, 1.00]


def _walk_properties(node: dict[str, Any], path: str):
    """Every key of the schema: properties, the schema of other keys (a dataset under a name of
    its own, ``<name>``) and each kind's branch."""
    node = _resolve(node, SCHEMA)
    required = set(node.get("required", []))
    for name, sub in node.get("properties", {}).items():
        resolved = _resolve(sub, SCHEMA)
        yield f"{path}.{name}".lstrip("."), resolved, name in required
        yield from _walk_properties(resolved, f"{path}.{name}")
    if isinstance(node.get("additionalProperties"), dict):
        yield from _walk_properties(node["additionalProperties"], f"{path}.<name>")
    for branch in node.get("allOf", []):
        yield from _walk_properties(branch["then"], path)


def test_the_schema_walk_reaches_a_table_datasets_keys():
    keys = {key for key, _, _ in _walk_properties(SCHEMA, "")}
    assert "datasets.<name>.splits.middles.train" in keys and "datasets.<name>.levels" in keys


TABLE = {"kind": "table", "levels": ["species", "genus", "family"], "root": "data/beetles"}


def test_a_dataset_under_a_name_of_its_own_takes_its_kinds_defaults():
    config = validate_config({"datasets": {"beetles": TABLE}}, SCHEMA)
    beetles = config["datasets"]["beetles"]
    assert beetles["splits"]["protocol"] == "middle-disjoint"
    assert beetles["splits"]["middles"] == {"train": 0.6, "validation": 0.2, "test": 0.2}
    assert beetles["aggregation"] == "query_micro" and beetles["source"] == "folder"
    assert "kind" not in config["datasets"]["cub"]  # the bird entries stay as they were
    renamed = validate_config({"datasets": {"cub_small": {"kind": "cub"}}}, SCHEMA)
    assert renamed["datasets"]["cub_small"]["taxonomy"]["fuzzy_threshold"] == 90


@pytest.mark.parametrize(
    ("datasets", "expected"),
    [
        ({"bad name!": TABLE}, "'datasets.bad name!': the name 'bad name!' may hold only"),
        ({"cbu": {"source": "demo"}}, "unknown dataset 'datasets.cbu' (did you mean 'cub'?)"),
        (
            {"beetles": {"levels": ["a", "b", "c"]}},
            "unknown dataset 'datasets.beetles': the bird datasets are 'cub' and 'nabirds'; a "
            "dataset of your own needs kind: table",
        ),
        ({"beetles": {"kind": "table"}}, "missing required config key 'datasets.beetles.levels'"),
        ({"beetles": {**TABLE, "kind": "insects"}}, "'datasets.beetles.kind'"),
        ({"beetles": {**TABLE, "typo": 1}}, "unknown config key 'datasets.beetles.typo'"),
        ({"cub": {"kind": "table"}}, "'datasets.cub.kind'"),
    ],
)
def test_dataset_names_and_kinds_are_checked_naming_the_key(datasets, expected):
    assert expected in _error({"datasets": datasets})


def test_every_key_has_a_description_and_a_default_unless_required():
    keys = list(_walk_properties(SCHEMA, ""))
    assert len(keys) > 50
    undocumented = [key for key, node, _ in keys if not node.get("description")]
    # A const key (a bird dataset's optional `kind`) has one value: nothing to default to.
    no_default = [
        key
        for key, node, required in keys
        if "default" not in node and "const" not in node and not required
    ]
    assert undocumented == []
    assert no_default == []


def test_required_keys_get_their_values_from_the_parent_default():
    config = validate_config({}, SCHEMA)
    assert config["datasets"]["cub"]["hyperbolic"]["radius"] == 0.4


def test_shipped_configs_are_valid():
    demo = load_config(REPO / "config.yaml", REPO / "schemas/config.schema.yaml")
    paper = load_config(REPO / "configs/paper.yaml", REPO / "schemas/config.schema.yaml")
    assert demo["datasets"]["cub"]["source"] == "demo"
    assert paper["datasets"]["cub"]["splits"]["query_gallery"]["queries"] == 870
    # NABirds' draws as shares of the test side: the paper's 1,003 and 4,014 of its 5,017, and
    # no stop when a real pool's test side holds another number
    draws = paper["datasets"]["nabirds"]["splits"]["query_gallery"]
    assert (round(draws["queries"] * 5017), round(draws["gallery"] * 5017)) == (1003, 4014)
    assert paper["datasets"]["nabirds"]["splits"]["leaves"] == {
        "train": 328,
        "validation": 114,
        "test": 113,
    }
    assert missing_inputs(demo, REPO) == []


def test_paper_config_spells_out_every_number_it_depends_on():
    """configs/paper.yaml states the protocol itself rather than leaning on schema defaults."""
    raw = load_yaml(REPO / "configs/paper.yaml")
    for section in ("head", "training", "tuning", "evaluation", "backbone"):
        assert raw[section], section
    assert raw["training"]["regression_targets"] == {"c": 0.2, "m": 0.5, "h": 0.8, "o": 1.0}
    assert raw["head"] == {"hidden_dim": 256, "embedding_dim": 32, "dropout": 0.1}


def test_missing_real_data_is_one_message_naming_every_folder(tmp_path: Path):
    paper = load_config(REPO / "configs/paper.yaml", REPO / "schemas/config.schema.yaml")
    with pytest.raises(ConfigError) as caught:
        check_inputs_exist(paper, tmp_path)
    message = str(caught.value)
    assert "datasets.cub.root: folder 'data/CUB_200_2011' does not exist" in message
    assert "datasets.nabirds.root: folder 'data/nabirds'" in message
    assert "backbone.weights: file 'weights/dinov2_vitb14_pretrain.pth'" in message


def test_one_missing_input_is_one_line_naming_its_key(tmp_path: Path):
    """``hierbench run`` prints it as its one error line (exit 2, nothing written)."""
    demo = load_config(REPO / "config.yaml", REPO / "schemas/config.schema.yaml")
    demo["datasets"]["cub"].update(source="folder", root="photos")
    with pytest.raises(ConfigError) as caught:
        check_inputs_exist(demo, REPO)
    message = str(caught.value)
    assert message.startswith(
        "the configuration points at a missing input: datasets.cub.root: folder 'photos' does "
        "not exist; put the CUB_200_2011 folder ("
    )
    assert message.endswith(") there or change the key") and "\n" not in message


def test_present_real_data_passes(tmp_path: Path):
    paper = load_config(REPO / "configs/paper.yaml", REPO / "schemas/config.schema.yaml")
    (tmp_path / "data/CUB_200_2011").mkdir(parents=True)
    (tmp_path / "data/nabirds").mkdir(parents=True)
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights/dinov2_vitb14_pretrain.pth").write_bytes(b"x")
    shutil.copytree(REPO / "resources", tmp_path / "resources")
    check_inputs_exist(paper, tmp_path)


def test_a_missing_shipped_input_is_named_by_its_key(tmp_path: Path):
    demo = load_config(REPO / "config.yaml", REPO / "schemas/config.schema.yaml")
    demo["datasets"]["cub"]["taxonomy"]["aliases"] = "elsewhere/aliases.json"
    demo["datasets"]["nabirds"]["hierarchy"] = "resources"  # a folder, not a file
    assert missing_inputs(demo, REPO) == [
        "datasets.cub.taxonomy.aliases: no file 'elsewhere/aliases.json'; restore the shipped "
        "file or change the key",
        "datasets.nabirds.hierarchy: no file 'resources'; restore the shipped file or change "
        "the key",
    ]


def test_dry_run_and_lint_pass_on_the_default_config(repo_copy: Path):
    assert "Congratulations" in snakemake(repo_copy, "--lint").stdout
    snakemake(repo_copy, "-n")


def test_dry_run_on_paper_config_without_data_names_the_missing_folder(repo_copy: Path):
    result = snakemake(repo_copy, "-n", "--configfile", "configs/paper.yaml", check=False)
    assert result.returncode != 0
    output = result.stdout
    assert "datasets.cub.root: folder 'data/CUB_200_2011' does not exist" in output


def test_bad_config_file_stops_the_dry_run_naming_the_key(repo_copy: Path):
    (repo_copy / "bad.yaml").write_text("training:\n  epochs: ten\n")
    result = snakemake(repo_copy, "-n", "--configfile", "bad.yaml", check=False)
    assert result.returncode != 0
    assert "bad.yaml: invalid configuration: config key 'training.epochs'" in result.stdout


def test_the_locked_config_leaves_out_other_datasets_and_the_seal_policy():
    config = {
        "training": {"lr": 5e-5},
        "seal": {"on_change": "refuse"},
        "datasets": {"cub": {"source": "demo"}, "nabirds": {"source": "demo"}},
    }
    assert locked_config(config, "cub") == {
        "training": {"lr": 5e-5},
        "datasets": {"cub": {"source": "demo"}},
    }


def test_training_params_leave_out_sealed_only_keys_and_add_asked_controls():
    config = {
        "head": {"hidden_dim": 8},
        "training": {"lr": 5e-5},
        "tuning": {"seed": 42},
        "evaluation": {"recall_ks": [1], "ot_ks": [10]},
        "datasets": {
            "cub": {
                "hyperbolic": {"curvature": 2.0, "radius": 0.4},
                "tau": {"E": None, "H": None},
                "controls": {"semantic": {"enabled": True}, "curvature": {"enabled": False}},
                "source": "demo",
            }
        },
    }
    plain = training_config(config, "cub")
    assert plain["evaluation"] == {"recall_ks": [1]}
    assert set(plain["datasets"]["cub"]) == {"hyperbolic", "tau"}
    semantic = training_config(config, "cub", controls=("semantic",))
    assert semantic["datasets"]["cub"]["controls"] == {"semantic": {"enabled": True}}


def test_the_paper_scale_rehearsal_is_the_paper_protocol_on_rendered_data():
    """configs/paper-scale.yaml differs from configs/paper.yaml only where it must: rendered
    sources, the shipped CNN and the CPU."""
    schema = REPO / "schemas/config.schema.yaml"
    paper = load_config(REPO / "configs/paper.yaml", schema)
    scale = load_config(REPO / "configs/paper-scale.yaml", schema)
    for name in ("cub", "nabirds"):
        assert scale["datasets"][name]["source"] == "demo"
        for config in (paper, scale):
            for key in ("source", "root", "demo"):
                config["datasets"][name].pop(key)
    assert scale["backbone"]["name"] == "efficientnet_lite0" and scale["device"] == "cpu"
    assert (paper["run"], scale["run"]) == ("runs/paper", "runs/paper-scale")
    for config in (paper, scale):
        config.pop("backbone")
        config.pop("device")
        config.pop("run")
    assert scale == paper
    images = {
        name: block["demo"]["images_per_class"]
        for name, block in load_yaml(REPO / "configs/paper-scale.yaml")["datasets"].items()
    }
    assert images == {"cub": 59, "nabirds": 44}  # 11,800 CUB images; 24,420 >= the 24,038 pool


def test_the_nabirds_rehearsal_overlay_changes_its_run_cub_and_hier_epochs_only():
    """configs/overlays/paper-scale-nabirds.yaml, merged as Snakemake merges two config files,
    is configs/paper-scale.yaml with its own run folder, CUB off and 3 HIER-style epochs."""
    from snakemake.utils import update_config

    schema = load_yaml(REPO / "schemas/config.schema.yaml")
    merged = load_yaml(REPO / "configs/paper-scale.yaml")
    update_config(merged, load_yaml(REPO / "configs/overlays/paper-scale-nabirds.yaml"))
    overlaid = validate_config(merged, schema)
    scale = load_config(REPO / "configs/paper-scale.yaml")
    assert overlaid["run"] == "runs/paper-scale-nabirds" != scale["run"]
    assert overlaid["datasets"]["cub"]["enabled"] is False
    hier = overlaid["datasets"]["nabirds"]["controls"]["baselines"]["hier"]
    assert (
        hier["epochs"],
        scale["datasets"]["nabirds"]["controls"]["baselines"]["hier"]["epochs"],
    ) == (3, None)
    hier["epochs"] = None
    overlaid["run"] = scale["run"]
    overlaid["datasets"]["cub"]["enabled"] = True
    assert overlaid == scale


def test_a_final_cells_config_holds_no_tuning_or_scoring_keys():
    """Changing the τ search or validation scoring reruns no Regression cell (#23)."""
    config = load_config(REPO / "configs/tiny.yaml", REPO / "schemas/config.schema.yaml")
    full = training_config(config, "cub")
    cell = training_config(config, "cub", scoring=False)
    assert {"tuning", "evaluation"} <= set(full) and not {"tuning", "evaluation"} & set(cell)
    assert {key: value for key, value in full.items() if key in cell} == cell


def test_a_problem_names_the_overlaid_file_its_key_comes_from(tmp_path):
    base, overlay = tmp_path / "base.yaml", tmp_path / "overlay.yaml"
    base.write_text("training: {epochs: 2}\ntrainng: {epochs: 1}\n")
    overlay.write_text("training: {epochs: x}\ndatasets:\n  cbu: {source: demo}\n")
    merged = {**load_yaml(base), **load_yaml(overlay)}
    with pytest.raises(ConfigError) as caught:
        validate_config(merged, SCHEMA)
    lines = str(named_sources(caught.value, [base, overlay])).splitlines()
    assert lines[0] == "invalid configuration:"
    assert any(line.startswith(f"  {overlay}: unknown dataset 'datasets.cbu'") for line in lines)
    assert any(line.startswith(f"  {base}: unknown config key 'trainng'") for line in lines)
    assert any(line.startswith(f"  {overlay}: config key 'training.epochs'") for line in lines)
    single = named_sources(ConfigError("invalid configuration: config key 'run': bad"), [base])
    assert str(single) == "invalid configuration: config key 'run': bad"  # no file sets run
