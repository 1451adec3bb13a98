"""Rebuild precision (#23): behaviour-free edits rerun nothing, and the published rebuild map
(edit this module or config key -> these rules rerun) is what Snakemake does."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml
from conftest import REPO, TINY, _run_snakemake, scheduled_rules

from hierbench.provenance import codehash
from hierbench.provenance.codehash import code_hash, known_modules, module_path
from hierbench.runtools.dag import dag_labels
from hierbench.runtools.rebuild_map import (
    CONFIG_PROBES,
    PLUGIN_ROWS,
    PROBE_LINE,
    RebuildMapError,
    Workspace,
    affected_rules,
    code_declarations,
    declared_modules,
    measure,
    module_groups,
    module_path_root,
    overlay,
    page_section,
    probe_edit,
    render_markdown,
    rule_blocks,
)

EXPECTED = REPO / "tests/fixtures/rebuild_map.json"
OVERLAY = "configs/rebuild-probe.yaml"


def _committed() -> dict:
    return json.loads(EXPECTED.read_text(encoding="utf-8"))


# ---- fast: the committed table, its page in the guide and the rule declarations agree


def test_the_committed_map_covers_every_module_and_config_probe():
    committed = _committed()
    assert sorted(committed["modules"]) == known_modules()
    assert sorted(committed["config"]) == sorted(key for key, _ in CONFIG_PROBES)
    examples = ["examples/lineage.py", "examples/ndcg.py", "examples/sphere.py"]
    assert sorted(committed[PLUGIN_ROWS]) == [*examples, "examples/triplet_margin.py"]


def test_the_rebuilds_page_shows_the_committed_map():
    page = (REPO / "docs/rebuilds.md").read_text(encoding="utf-8")
    assert page_section(page) == render_markdown(_committed()), (
        "docs/rebuilds.md's rebuild map differs from tests/fixtures/rebuild_map.json: "
        "run python tools/rebuild_map.py --write"
    )


def test_every_rule_that_runs_a_script_declares_its_code():
    declared = declared_modules(REPO / "rules")
    blocks = list(rule_blocks(REPO / "rules"))
    scripted = {block.name for block in blocks if "script:" in block.body}
    scripted |= {block.name for block in blocks if block.parent in scripted}
    assert len(scripted) >= 35
    assert scripted <= set(declared), sorted(scripted - set(declared))

    assert declared["train_factorial"] == ("stages.training",)
    assert declared["train_outer"] == ("stages.outer_training",)  # its own, alone
    assert declared["train_hier_cell"] == ("stages.hier",)  # its own
    assert declared["train_semantic"] == ("stages.semantic",)  # generated: the entry's stage
    assert declared["train_companion_cell"] == ("stages.companion",)
    assert declared["final_lock"] == ("stages.lock",)


def test_each_rule_runs_the_script_its_code_hashes():
    """Every script: directive is SCRIPT, the script code(script=...) names and hashes."""
    for block in rule_blocks(REPO / "rules"):
        directive = re.search(r"^    script:\s*(\S+)", block.body, re.MULTILINE)
        if directive:
            assert directive[1] == "SCRIPT", f"{block.name} runs {directive[1]}"
    for rule, (_, script) in code_declarations(REPO / "rules").items():
        assert (REPO / "workflow_scripts" / f"{script}.py").is_file(), (rule, script)


def test_an_inheriting_rule_without_code_takes_its_parents(tmp_path: Path):
    (tmp_path / "x.smk").write_text(
        'rule a:\n    params:\n        **code("m", script="s"),\n'
        "use rule a as b with:\n    output:\n        'b'\n"
        'use rule a as c with:\n    params:\n        **code("n", script="t"),\n'
    )
    assert code_declarations(tmp_path) == {
        "a": (("m",), "s"),
        "b": (("m",), "s"),
        "c": (("n",), "t"),
    }


def test_a_rule_with_two_code_declarations_is_an_error(tmp_path: Path):
    (tmp_path / "x.smk").write_text(
        'rule a:\n    params:\n        x=code("a"),\n        y=code("b"),\n'
    )
    with pytest.raises(RebuildMapError, match=r"x\.smk: rule a declares code\(\) twice"):
        declared_modules(tmp_path)


def test_a_generated_family_declares_each_entrys_code(tmp_path: Path):
    """``code(trained.stage, script=trained.script)`` in a loop reads as each entry's own."""
    from hierbench.cellkinds import training_rules

    (tmp_path / "x.smk").write_text(
        "for trained in training_rules():\n\n    rule:\n        name:\n"
        "            trained.rule\n        params:\n"
        "            **code(trained.stage, script=trained.script, files=[]),\n"
    )
    assert code_declarations(tmp_path) == {t.rule: ((t.stage,), t.script) for t in training_rules()}


def test_a_generated_family_needs_its_rules_named_by_its_entries(tmp_path: Path):
    (tmp_path / "x.smk").write_text(
        "for trained in training_rules():\n\n    rule:\n        name:\n            'a'\n"
    )
    with pytest.raises(RebuildMapError, match=r"need 'name: trained\.<attribute>'"):
        list(rule_blocks(tmp_path))


@pytest.fixture
def package_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the library that the code hashes read (so edits to it are seen)."""
    target = tmp_path / "hierbench"
    shutil.copytree(codehash.PACKAGE_DIR, target, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(codehash, "PACKAGE_DIR", target)
    codehash.module_closure.cache_clear()
    yield target
    codehash.module_closure.cache_clear()


def test_a_probe_edit_changes_the_code_hash_of_exactly_the_rules_it_reaches(package_copy: Path):
    """The grouping the map relies on: every module's edit, in-process, for every rule."""
    declared = declared_modules(REPO / "rules")
    before = {rule: code_hash(modules) for rule, modules in declared.items()}
    for module in known_modules():
        with probe_edit(codehash.module_path(module)):
            changed = {
                rule for rule, modules in declared.items() if code_hash(modules) != before[rule]
            }
        assert changed == affected_rules(module, declared), module
    assert {rule: code_hash(modules) for rule, modules in declared.items()} == before


def test_final_training_evaluation_and_figures_depend_only_on_what_they_run():
    declared = declared_modules(REPO / "rules")
    final_training = {"train_factorial", "train_curvature", "train_outer"}
    evaluation = {rule for rule in declared if rule.startswith("evaluate_")}
    for module in ("metrics", "metrics.engine", "metrics.ot", "stages.tuning"):
        assert not affected_rules(module, declared) & final_training, module
    assert not affected_rules("training.trainer", declared) & evaluation
    for module in ("losses.supcon", "losses.regression", "losses.hier", "training.trainer"):
        assert "figures" not in affected_rules(module, declared), module
    assert affected_rules("losses.hier", declared) == {"train_hier_cell"}
    assert "final_lock" not in affected_rules("metrics.engine", declared)


def _fake_workspace(package_dir: Path, busy: set[Path], overlaps: list[Path]) -> Workspace:
    """A workspace whose dry run reports which of its files carries the probe line (or the
    overlay), and notes any probe that starts while another runs in it."""
    overlay_seen: list[dict] = []

    def scheduled(extra: Sequence[str]) -> dict[str, int]:
        if package_dir in busy:
            overlaps.append(package_dir)
        busy.add(package_dir)
        try:
            if extra:
                return {f"overlay {json.dumps(overlay_seen[-1], sort_keys=True)}": 1}
            edited = [
                path.relative_to(package_dir).as_posix()
                for path in sorted(package_dir.rglob("*.py"))
                if path.read_text(encoding="utf-8").endswith(PROBE_LINE)
            ]
            return dict.fromkeys(edited, 1)
        finally:
            busy.discard(package_dir)

    def write_overlay(tree: dict) -> list[str]:
        overlay_seen.append(tree)
        return ["--configfile", "probe.yaml"]

    return Workspace(package_dir, scheduled, write_overlay)


def test_probes_spread_over_workspaces_give_the_map_of_one(package_copy: Path, tmp_path: Path):
    second = Path(shutil.copytree(package_copy, tmp_path / "second" / "hierbench"))
    busy: set[Path] = set()
    overlaps: list[Path] = []
    alone = measure(REPO / "rules", [_fake_workspace(package_copy, busy, overlaps)])
    spread = measure(
        REPO / "rules",
        [_fake_workspace(path, busy, overlaps) for path in (package_copy, second)],
    )
    assert spread == alone and overlaps == []
    for members in module_groups(declared_modules(REPO / "rules")).values():
        edited = module_path(members[0]).relative_to(module_path_root()).as_posix()
        assert all(alone["modules"][member] == {edited: 1} for member in members), members
    assert alone["config"]["training.lr"] == {'overlay {"training": {"lr": 6e-05}}': 1}
    assert not any(
        path.read_text(encoding="utf-8").endswith(PROBE_LINE)
        for folder in (package_copy, second)
        for path in folder.rglob("*.py")
    )


def test_measure_needs_a_workspace():
    with pytest.raises(RebuildMapError, match="at least one workspace"):
        measure(REPO / "rules", [])


def test_overlay_sets_one_dotted_key():
    assert overlay("datasets.cub.splits.validation_fraction", 0.3) == {
        "datasets": {"cub": {"splits": {"validation_fraction": 0.3}}}
    }


def test_probe_edit_restores_the_file(tmp_path: Path):
    path = tmp_path / "m.py"
    path.write_bytes(b"x = 1\n")
    with probe_edit(path):
        assert path.read_text() == "x = 1\n" + PROBE_LINE
    assert path.read_bytes() == b"x = 1\n"


# ---- slow: what Snakemake schedules on the tiny run


def _scheduler(repo: Path):
    return lambda extra: scheduled_rules(repo, *(extra or TINY))


def _overlay_writer(repo: Path):
    def write(tree: dict) -> list[str]:
        (repo / OVERLAY).write_text(yaml.safe_dump(tree, sort_keys=True))
        return ["--configfile", "configs/tiny.yaml", OVERLAY]

    return write


def test_the_rebuild_map_matches_the_committed_table(built_repo: Path, tmp_path: Path):
    """Every module group and config probe, dry-run two at a time (each in its own copy of the
    complete run); python tools/rebuild_map.py --write rewrites the table (and docs/rebuilds.md)
    after a deliberate change."""
    second = Path(shutil.copytree(built_repo, tmp_path / "second", symlinks=True))
    workspaces = [
        Workspace(repo / "src/hierbench", _scheduler(repo), _overlay_writer(repo))
        for repo in (built_repo, second)
    ]
    measured = measure(built_repo / "rules", workspaces)
    measured = json.loads(json.dumps(measured))
    committed = _committed()
    del committed[PLUGIN_ROWS]  # measured by the workflow tests that edit the examples
    assert measured == committed


def _library_files(repo: Path, packages: tuple[str, ...]) -> list[Path]:
    return sorted(
        path for name in packages for path in (repo / "src/hierbench" / name).glob("*.py")
    )


def _comment(source: str) -> str:
    return source + "\n# a note a user appended\n"


def _docstring(source: str) -> str:
    docstring = ast.get_docstring(ast.parse(source), clean=False)
    if docstring is None:
        return '"""A docstring a user added."""\n' + source
    return source.replace(docstring, docstring + "\n\nA paragraph a user added.", 1)


def _reformat(source: str) -> str:
    return ast.unparse(ast.parse(source)) + "\n"


@pytest.mark.parametrize("edit", [_comment, _docstring, _reformat], ids=lambda f: f.__name__)
def test_edits_without_behaviour_to_metrics_losses_and_geometry_schedule_nothing(
    built_repo: Path, edit
):
    files = _library_files(built_repo, ("metrics", "losses", "geometry"))
    assert len(files) >= 15
    for path in files:
        source = path.read_text(encoding="utf-8")
        path.write_text(edit(source), encoding="utf-8")
        assert path.read_text(encoding="utf-8") != source
    assert scheduled_rules(built_repo, *TINY) == Counter()


def test_a_one_character_change_to_the_metric_engine_reruns_no_regression_cell(
    built_repo: Path,
):
    engine = built_repo / "src/hierbench/metrics/engine.py"
    source = engine.read_text(encoding="utf-8")
    assert source.count("_BLOCK_ROWS = 64") == 1  # queries ranked together
    engine.write_text(source.replace("_BLOCK_ROWS = 64", "_BLOCK_ROWS = 65"))
    result = _run_snakemake(built_repo, ("--dag", "dot", *TINY), subprocess.PIPE)
    assert result.returncode == 0, result.stderr
    labels = [label for label, runs in dag_labels(result.stdout) if runs]
    rules = Counter(label.split("\\n", 1)[0] for label in labels)
    assert rules["tune"] == 2 and rules["tuning_selection"] == 2  # one tuning bundle each
    assert rules["evaluate_cell"] == 2  # two datasets, each factorial scored in one job
    assert rules["select_semantic_duration"] == 4
    assert rules["train_factorial"] == 2  # each dataset's factorial bundle: it holds S cells
    # every outer split's epochs are chosen again on validation (scored by the engine), and
    # every arm of it trains again for them
    assert rules["select_outer_durations"] == 3 and rules["train_outer"] == 9
    assert "train_curvature" not in rules  # its bundles hold Regression cells only
