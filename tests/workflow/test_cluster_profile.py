"""The SLURM profile names only real rules and keeps the default profile's rerun settings; the
one-node cluster harness writes the configuration it should (no daemons are started here;
`make test-cluster` runs the cluster)."""

from __future__ import annotations

import importlib.util
import re
import stat
from pathlib import Path

import pytest
import yaml
from conftest import REPO, TINY, TINY_RUN, snakemake

from hierbench.runtools.rebuild_map import rule_blocks
from hierbench.runtools.rundiff import dataset_targets

SLURM = REPO / "profiles" / "slurm" / "config.yaml"
DEFAULT = REPO / "profiles" / "default" / "config.yaml"
# The rules that do the heavy lifting, each with its own memory and wall time.
HEAVY = (
    "backbone_features",
    "demo_cub",
    "demo_nabirds",
    "demo_table",
    "tune",
    "train_factorial",
    "train_curvature",
    "train_semantic",
    "train_hier_cell",
    "train_outer",
    "train_companion_cell",
)


def _profile() -> dict:
    return yaml.safe_load(SLURM.read_text())


def _rule_names() -> set[str]:
    """Every rule the rule files define, inherited ones (``use rule A as B with:``) too."""
    return {block.name for block in rule_blocks(REPO / "rules")}


def _harness():
    spec = importlib.util.spec_from_file_location("cluster", REPO / "tools" / "cluster.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_profile_keeps_the_default_profiles_rerun_settings():
    slurm, default = _profile(), yaml.safe_load(DEFAULT.read_text())
    assert slurm["executor"] == "slurm"
    for key in ("configfile", "rerun-incomplete", "show-failed-logs", "rerun-triggers"):
        assert slurm[key] == default[key], key
    assert "mtime" not in slurm["rerun-triggers"]


def test_every_rule_the_profile_names_exists():
    profile, rules = _profile(), _rule_names()
    named = {*profile["set-resources"], *profile["set-threads"], *profile["groups"]}
    assert named - rules == set()


def test_every_group_is_batched_and_every_heavy_rule_has_its_own_request():
    profile = _profile()
    assert set(profile["groups"].values()) == set(profile["group-components"])
    # tuning and training run batched; features and demo rendering each in a job of their own
    batched = {rule for rule in HEAVY if rule == "tune" or rule.startswith("train_")}
    assert set(HEAVY) & set(profile["groups"]) == batched
    for rule in HEAVY:
        assert {"mem_mb", "runtime"} <= set(profile["set-resources"][rule]), rule
    assert {"mem_mb", "runtime", "cpus_per_task"} <= set(profile["default-resources"])


def test_every_key_of_the_profile_is_commented():
    lines = SLURM.read_text().splitlines()
    for number, line in enumerate(lines):
        top_level = re.match(r"^([a-z-]+):", line)
        if top_level:
            above = lines[number - 1] if number else ""
            assert "#" in line or above.startswith("#"), f"uncommented key {top_level.group(1)}"


def test_the_cluster_configuration_names_its_own_files_and_plugins(tmp_path: Path):
    conf = _harness().slurm_conf(tmp_path, "node1", 4, 8000, (7001, 7002))
    settings = dict(line.split("=", 1) for line in conf.splitlines()[1:] if "=" in line)
    assert settings["SlurmctldHost"] == "node1"
    assert settings["SlurmUser"] == "root"
    assert settings["ProctrackType"] == "proctrack/linuxproc"
    assert settings["TaskPlugin"] == "task/none"
    assert settings["SelectType"] == "select/cons_tres"
    assert settings["SelectTypeParameters"] == "CR_Core"
    assert settings["AccountingStorageType"] == "accounting_storage/none"
    for key in ("StateSaveLocation", "SlurmdSpoolDir", "SlurmctldPidFile", "SlurmdLogFile"):
        assert settings[key].startswith(str(tmp_path)), key
    assert "NodeName=node1 CPUs=4 RealMemory=8000 State=UNKNOWN" in conf
    assert re.search(r"^PartitionName=\S+ Nodes=ALL Default=YES", conf, re.M)


def test_the_munge_key_is_private_and_never_replaced(tmp_path: Path):
    harness, key = _harness(), tmp_path / "key" / "munge.key"
    harness.write_munge_key(key)
    first = key.read_bytes()
    harness.write_munge_key(key)
    assert key.read_bytes() == first and len(first) == 1024
    assert stat.S_IMODE(key.stat().st_mode) == 0o400


def test_without_slurm_and_apt_get_the_check_skips(monkeypatch, capsys):
    harness = _harness()
    monkeypatch.setattr(harness.shutil, "which", lambda name: None)
    monkeypatch.setattr(harness, "SBIN", Path("/nonexistent"))
    assert harness.main(["check"]) == 0
    assert capsys.readouterr().out.startswith("SKIP: no SLURM test cluster on this machine")


@pytest.mark.slow
def test_a_dry_run_with_the_profile_resolves_the_features_request(repo_copy: Path):
    """The plugin is importable and the profile's requests reach a features job."""
    result = snakemake(repo_copy, "-n", "--workflow-profile", "profiles/slurm", *TINY)
    resources = re.search(r"rule backbone_features:\n(?: +.*\n)*? +resources: (.*)", result.stdout)[
        1
    ]
    # a backbone pass computes on one thread (numeric_mode: portable); the CPUs follow the threads
    assert "mem_mb=16000" in resources and "runtime=240" in resources
    assert "cpus_per_task=1" in resources


GPU_RULES = {"backbone_features", "tune"}
GPU_RULES |= {"select_semantic_duration", "select_outer_durations"}
GPU_RULES |= {r for r in HEAVY if r.startswith("train_")}


def _planned_jobs(stdout: str) -> list[tuple[str, dict[str, str]]]:
    """Every job of a dry run's plan: its rule and its resources."""
    jobs = re.findall(r"rule (\w+):\n((?: +.*\n)*?) +resources: (.*)\n", stdout)
    return [(rule, dict(item.split("=", 1) for item in line.split(", "))) for rule, _, line in jobs]


@pytest.mark.slow
def test_a_dry_run_of_the_paper_config_resolves_every_jobs_request(repo_copy: Path):
    """Every job of the paper's plan gets memory, wall time and CPUs; with ``device: cuda`` the
    features and training jobs ask for one GPU each, no other job for any."""
    for folder in ("data/CUB_200_2011", "data/nabirds", "weights"):
        (repo_copy / folder).mkdir(parents=True)
    (repo_copy / "weights/dinov2_vitb14_pretrain.pth").touch()  # read by jobs, not the plan
    profile = ("--workflow-profile", "profiles/slurm", "--slurm-no-account")
    paper = ("--configfile", "configs/paper.yaml")
    result = snakemake(repo_copy, "-n", *profile, *paper, "--config", "device=cuda")
    jobs = _planned_jobs(result.stdout)
    assert len(jobs) == int(re.search(r"^total +(\d+)$", result.stdout, re.M)[1])  # rule all too
    requests = _profile()["set-resources"]
    for rule, resources in jobs:
        assert {"mem_mb", "runtime", "cpus_per_task"} <= resources.keys(), rule
        for key, value in requests.get(rule, {}).items():
            assert resources[key] == str(value), (rule, key)
        assert resources.get("gpu", "0") == ("1" if rule in GPU_RULES else "0"), rule
    on_cpu = snakemake(repo_copy, "-n", *profile, *paper, "--config", "device=cpu")
    assert all(resources.get("gpu", "0") == "0" for _, resources in _planned_jobs(on_cpu.stdout))


def test_a_datasets_targets_are_its_artifacts_without_their_records(tmp_path: Path):
    for relative in (
        f"{TINY_RUN}/nabirds/cells/ER-42/model.safetensors",
        f"{TINY_RUN}/nabirds/cells/ER-42/model.safetensors.prov.json",
        f"{TINY_RUN}/nabirds/.snakemake_timestamp",
        f"{TINY_RUN}/nabirds/tables/effects.csv",
        f"{TINY_RUN}/nabirds/demo/nabirds/images/0338/a.jpg",  # a recorded folder's file
        f"{TINY_RUN}/nabirds/demo.prov.json",
        f"{TINY_RUN}/nabirds/tensorboard/events.out",
        f"{TINY_RUN}/nabirds/tensorboard.prov.json",
        f"{TINY_RUN}/nabirds/unrecorded/file.txt",  # a folder without a record: its files
        f"{TINY_RUN}/cub/cells/ER-42/model.safetensors",
    ):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("x")
    assert dataset_targets(tmp_path, TINY_RUN, "nabirds") == [
        f"{TINY_RUN}/nabirds/cells/ER-42/model.safetensors",
        f"{TINY_RUN}/nabirds/tables/effects.csv",
        f"{TINY_RUN}/nabirds/unrecorded/file.txt",
        f"{TINY_RUN}/nabirds/demo",  # a recorded folder is the one directory output it is
        f"{TINY_RUN}/nabirds/tensorboard",
    ]
    with pytest.raises(ValueError, match="holds no artifacts of dataset 'table'"):
        dataset_targets(tmp_path, TINY_RUN, "table")


def test_the_cluster_check_compares_the_tiny_configs_run_folder():
    assert _harness().TINY_RUN == TINY_RUN
