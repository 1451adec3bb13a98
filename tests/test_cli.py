"""The `hierbench` command line."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from table_collections import FILES, IMAGES, TAXONOMY, tiny_cub_folder
from table_collections import table_dataset_folder as _dataset

from hierbench.cli import EVERYDAY, build_parser, main
from hierbench.provenance.codehash import code_hash, module_closure, module_hash

SCHEMA = str(REPO / "schemas/config.schema.yaml")


def test_config_prints_the_resolved_config(capsys):
    assert main(["config", str(REPO / "config.yaml"), "--schema", SCHEMA]) == 0
    resolved = json.loads(capsys.readouterr().out)
    assert resolved["training"]["epochs"] == 100
    assert resolved["backbone"]["name"] == "efficientnet_lite0"


def test_config_error_exits_2_naming_the_key(tmp_path: Path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("head:\n  dropout: 2\n")
    assert main(["config", str(bad), "--schema", SCHEMA]) == 2
    assert "config key 'head.dropout'" in capsys.readouterr().err


def test_config_inputs_flag_reports_missing_data(capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    assert main(["config", "configs/paper.yaml", "--inputs"]) == 2
    assert "datasets.cub.root" in capsys.readouterr().err


def test_code_hash_matches_the_library(capsys):
    assert main(["code-hash", "data.inputs"]) == 0
    first_line = capsys.readouterr().out.splitlines()[0]
    assert first_line == code_hash(["data.inputs"])


def test_taxonomy_cub_runs_from_a_folder_outside_the_repository(tmp_path: Path):
    """The default alias file (and its schema) are found without the repository as cwd."""
    classes = tmp_path / "classes.txt"
    classes.write_bytes((REPO / "resources/cub_classes.txt").read_bytes())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "hierbench.cli", "taxonomy", "cub", "--classes", str(classes)]
    result = subprocess.run(
        [*command, "--out", str(elsewhere / "x.parquet")],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "200 classes, 123 genera, 37 families" in result.stdout
    report = (elsewhere / "x_match_report.md").read_text()
    assert f"- Alias file: {REPO / 'resources/cub_aliases.json'}\n" in report


def test_the_default_alias_file_is_named_as_the_pipeline_names_it(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(REPO)
    out = tmp_path / "cub.parquet"
    assert (
        main(["taxonomy", "cub", "--classes", "resources/cub_classes.txt", "--out", str(out)]) == 0
    )
    report = (tmp_path / "cub_match_report.md").read_text()
    assert "- Alias file: resources/cub_aliases.json\n" in report


@pytest.mark.parametrize(
    "args, option",
    [
        (["taxonomy", "cub", "--classes", "{missing}"], "--classes"),
        (["taxonomy", "cub", "--classes", "{classes}", "--aliases", "{missing}"], "--aliases"),
        (["taxonomy", "cub", "--classes", "{classes}", "--checklist", "{missing}"], "--checklist"),
        (
            ["taxonomy", "nabirds", "--classes", "{missing}", "--hierarchy", "{classes}"],
            "--classes",
        ),
        (
            ["taxonomy", "nabirds", "--classes", "{classes}", "--hierarchy", "{missing}"],
            "--hierarchy",
        ),
        (["config", "{missing}"], "FILE"),
        (["config", "{classes}", "--schema", "{missing}"], "--schema"),
    ],
)
def test_a_missing_file_is_an_error_naming_its_option(tmp_path: Path, capsys, args, option):
    paths = {"missing": tmp_path / "nope.txt", "classes": REPO / "resources/cub_classes.txt"}
    out = [] if args[0] == "config" else ["--out", str(tmp_path / "t.parquet")]
    assert main([arg.format(**paths) for arg in args] + out) == 2
    error = capsys.readouterr().err
    assert f"hierbench: error: {option}: no such file {paths['missing']}\n" == error
    assert not (tmp_path / "t.parquet").exists()


def test_config_finds_the_shipped_schema_from_any_folder(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["config", str(REPO / "config.yaml")]) == 0
    assert json.loads(capsys.readouterr().out)["datasets"]["cub"]["classes"] == (
        "resources/cub_classes.txt"
    )


def test_unseal_archives_the_seal_with_its_reason(tmp_path: Path, capsys):
    lock = tmp_path / "results/cub/lock/final_lock.json"
    access_log = tmp_path / "logs/cub/lock/test_access.log"
    for path, text in ((lock, "{}"), (access_log, "2026-11-30 cub ER-42 (evaluate_cell)\n")):
        path.parent.mkdir(parents=True)
        path.write_text(text)
    run, logs = str(tmp_path / "results"), ["--logs", str(tmp_path / "logs")]
    assert main(["unseal", run, "cub", "--reason", "new checklist version", *logs]) == 0
    assert "archived in" in capsys.readouterr().out
    record = json.loads((tmp_path / "results/cub/reseals/001/reseal.json").read_text())
    assert record["reason"] == "new checklist version" and record["test_reads"] == 1
    assert not lock.exists() and not access_log.exists()
    assert main(["unseal", run, "cub", "--reason", "again", *logs]) == 0
    assert "nothing to unseal" in capsys.readouterr().out


def test_unseal_needs_a_reason(capsys):
    with pytest.raises(SystemExit):
        main(["unseal", "cub"])
    assert "--reason" in capsys.readouterr().err


def _table_config(tmp_path: Path, root: Path) -> Path:
    """A config with one table dataset, ``beetles``, read from ``root``."""
    config = tmp_path / "beetles.yaml"
    config.write_text(
        "datasets:\n"
        "  cub: {enabled: false}\n"
        "  nabirds: {enabled: false}\n"
        "  beetles:\n"
        "    kind: table\n"
        "    source: folder\n"
        f"    root: {root}\n"
        "    levels: [species, genus, family]\n"
    )
    return config


def test_check_dataset_prints_counts_per_level_and_writes_nothing(tmp_path: Path, capsys):
    root = _dataset(tmp_path / "beetles")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    config = _table_config(tmp_path, root)
    assert main(["check-dataset", str(config), "beetles", "--schema", SCHEMA]) == 0
    out = capsys.readouterr().out
    assert "is a valid table dataset" in out
    for label, count in (("images", 5), ("species (leaf)", 5), ("genus (middle)", 4)):
        assert re.search(rf"{re.escape(label)}\s+{count}\n", out), out
    assert re.search(r"family \(high\)\s+2\n", out) and re.search(r"train images\s+3\n", out)
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p != config)
    assert after == before


def test_check_dataset_warns_about_weak_queries_and_deep_opens_every_image(tmp_path: Path, capsys):
    def without_terns(text: str) -> str:
        return "".join(line + "\n" for line in text.splitlines() if "tern" not in line)

    root = _dataset(
        tmp_path / "beetles", without_terns(IMAGES), without_terns(TAXONOMY), files=FILES[:4]
    )  # 3 genera hold images: too few for the split's default counts
    config = _table_config(tmp_path, root)
    assert main(["check-dataset", str(config), "beetles", "--schema", SCHEMA]) == 0
    err = capsys.readouterr().err
    assert "warning: 2 genus group(s) hold a single species ('gulls', 'wrens')" in err
    assert "warning: datasets.beetles.splits.middles: 3 middle groups cannot be split" in err
    assert "cannot be read as an image" not in err  # only --deep opens the images
    assert main(["check-dataset", str(config), "beetles", "--schema", SCHEMA, "--deep"]) == 1
    out, err = capsys.readouterr()
    assert "is not a valid table dataset: 4 of its 4 images cannot be read" in out
    assert err.count("error: ") == err.count("cannot be read as an image") == 4


def test_check_dataset_names_the_file_and_line_of_a_flaw(tmp_path: Path, capsys):
    root = _dataset(tmp_path / "beetles", images=IMAGES + "a/9.jpg,robin,test,0,0,1,1\n")
    config = _table_config(tmp_path, root)
    assert main(["check-dataset", str(config), "beetles", "--schema", SCHEMA]) == 2
    err = capsys.readouterr().err
    assert f"{root / 'images.csv'}:7:" in err and "a/9.jpg" in err


def test_check_dataset_refuses_unknown_names_and_other_kinds(tmp_path: Path, capsys):
    config = _table_config(tmp_path, tmp_path)
    assert main(["check-dataset", str(config), "moths", "--schema", SCHEMA]) == 2
    assert "dataset 'moths' is not in the config" in capsys.readouterr().err


def test_check_dataset_checks_the_shipped_example_before_any_run(
    tmp_path: Path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    example = str(REPO / "configs/table-example.yaml")
    assert main(["check-dataset", example, "birds_of_prey_and_co", "--schema", SCHEMA]) == 0
    out = capsys.readouterr().out
    assert "birds_of_prey_and_co: the example collection is a valid table dataset" in out
    assert "rendered here as the pipeline will render it into runs/table-example/" in out
    for label, count in (("images", 216), ("species (leaf)", 36), ("genus (middle)", 12)):
        assert re.search(rf"{re.escape(label)}\s+{count}\n", out), out
    assert not list(tmp_path.iterdir())  # rendered in a temporary folder, nothing left here


def test_check_dataset_verifies_a_real_copy_against_its_release(tmp_path: Path, capsys):
    config = tmp_path / "real.yaml"
    root = tmp_path / "CUB_200_2011"
    config.write_text(f"datasets:\n  cub:\n    source: folder\n    root: {root}\n")
    tiny_cub_folder(root)
    assert main(["check-dataset", str(config), "cub", "--schema", SCHEMA]) == 2
    err = capsys.readouterr().err
    assert "not the cub release: images 2 (the release has 11,788); classes 2" in err
    demo = tmp_path / "demo.yaml"
    demo.write_text("datasets:\n  cub:\n    source: demo\n")
    assert main(["check-dataset", str(demo), "cub", "--schema", SCHEMA]) == 2
    assert "check-dataset verifies a real copy" in capsys.readouterr().err


def test_code_hash_lists_each_covered_module_with_its_normalised_hash(capsys):
    assert main(["code-hash", "data.inputs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    listed = dict(reversed(line.split()) for line in lines[2:])
    assert set(listed) == set(module_closure(("data.inputs",)))
    assert listed["data.inputs"] == module_hash("data.inputs")


def test_code_hash_form_prints_what_is_hashed(capsys):
    assert main(["code-hash", "--form", "provenance.hashing"]) == 0
    form = capsys.readouterr().out.strip()
    assert form.startswith("Module(body=[") and "sha256" in form
    assert '"""' not in form


def test_a_closed_pipe_ends_quietly(monkeypatch, capsys):
    """``hierbench config FILE | head -1``: the reader leaves early; no traceback, status 0."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone: every write fails with EPIPE
    with os.fdopen(write_end, "w") as closed:
        monkeypatch.setattr(sys, "stdout", closed)
        assert main(["config", str(REPO / "config.yaml")]) == 0
    assert capsys.readouterr().err == ""


def test_effects_out_on_a_file_is_one_line_and_writes_nothing(tmp_path: Path, capsys):
    occupied = tmp_path / "tables"
    occupied.write_text("mine")
    per_seed = tmp_path / "per_seed.parquet"
    assert main(["effects", str(per_seed), "--out", str(occupied)]) == 2
    assert (
        capsys.readouterr().err
        == f"hierbench: error: --out: {occupied} is a file; name a folder for the tables\n"
    )
    assert occupied.read_text() == "mine" and sorted(tmp_path.iterdir()) == [occupied]


def _subcommands(parser, words=("hierbench",)):
    """Every subcommand parser below ``parser``, with its words."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield (*words, name), child
                yield from _subcommands(child, (*words, name))


def test_one_grammar_examples_help_and_the_run_first():
    """Every command shows an example and helps every argument; every command that acts on a
    run takes the run folder as its first positional argument, always given (never silently
    the demo's)."""
    parser = build_parser()
    for words, sub in _subcommands(parser):
        assert (sub.epilog or "").startswith(f"example: {' '.join(words)}"), words
        for action in sub._actions:
            if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                assert action.help, (words, action.dest)
        if words[-1] in ("status", "audit", "jobs", "resume", "unseal"):
            first = next(a for a in sub._actions if not a.option_strings)
            assert (first.metavar, first.nargs, first.default) == ("RUN", None, None), words
    unseal = parser.parse_args(["unseal", "results", "cub", "--reason", "r"])
    assert (unseal.run, unseal.dataset) == (Path("results"), "cub")
    with pytest.raises(SystemExit):
        parser.parse_args(["status"])
    help_text = parser._subparsers._group_actions[0].choices["effects"].format_help()
    assert "(default: 10000)" in help_text and "(default: 0)" in help_text


def test_only_hierbench_run_passes_arguments_on(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["status", "runs/tiny", "--", "--dry-run"])
    assert stopped.value.code == 2
    assert "status passes nothing on: leave out -- and what follows it" in capsys.readouterr().err


def test_the_help_groups_every_command_into_everyday_and_plumbing_with_an_example(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert text.startswith("usage: hierbench [-h] [--version] COMMAND ...")
    everyday, plumbing = text.split("everyday commands:\n")[1].split("plumbing:\n")
    groups = {
        title: [line.split()[0] for line in part.splitlines() if line[:3].strip() and "  " in line]
        for title, part in (("everyday", everyday), ("plumbing", plumbing))
    }
    commands = [name for name in EVERYDAY] + groups["plumbing"]
    assert groups["everyday"] == list(EVERYDAY) and "code-hash" in groups["plumbing"]
    assert sorted(commands) == sorted(build_parser()._subparsers._group_actions[0].choices)
    examples = [line for line in text.splitlines() if line.strip().startswith("example: hierbench")]
    assert len(examples) == len(commands)


def test_the_run_log_is_readable_line_by_line_while_the_run_goes_on(tmp_path):
    from hierbench.cli.study import open_run_log

    path = tmp_path / "snakemake.log"
    with open_run_log(path) as log:
        log.write("[Fri Dec  4 23:00:00 2026]\n")
        log.write("1 of 9 steps (11%) done\n")
        # what `hierbench status` or a `tail -f` reads now, before the run ends
        assert path.read_text(encoding="utf-8").endswith("1 of 9 steps (11%) done\n")
