"""`hierbench compare`: two run folders, what differs, why, and the tables side by side.

The runs are small synthetic pipelines written here: each artifact's bytes follow from its
parameters and its inputs' bytes, and each has a provenance record in the real format, so a
change propagates downstream as it would in a real run.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from hierbench.cli import main
from hierbench.provenance.artifacts import PROVENANCE_SUFFIX
from hierbench.runs import logs_folder
from hierbench.runtools.compare import NotARunError, compare_runs_report, load_run, render_markdown
from hierbench.runtools.pathpatterns import path_pattern
from hierbench.runtools.tablediff import diff_table, key_columns

CELLS = ("ER-42", "ES-42", "HR-42", "HS-42")
SOURCE = "resources/cub_classes.txt"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _effects(shift: float = 0.0) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "dataset": ["cub"] * 3,
            "level": ["leaf", "middle", "high"],
            "metric": ["map"] * 3,
            "effect": ["geom_R"] * 3,
            "mean": [0.25 + shift, 0.5, 0.75],
            "sd": [0.01, 0.02, 0.03],
            "n": [3, 3, 3],
        }
    )


class Pipeline:
    """Writes artifacts and their records into ``root / prefix`` as the pipeline would."""

    def __init__(
        self,
        root: Path,
        prefix: str,
        torch: str = "2.14.1",
        eval_code: str = "e1",
        threads: int = 1,
        mode: str | None = None,
    ):
        self.root, self.prefix, self.torch, self.eval_code = root, prefix, torch, eval_code
        self.threads, self.mode = threads, mode
        self.folder = root / prefix

    def publish(self, rel: str, content: bytes | pd.DataFrame, rule: str, **job) -> str:
        target = self.folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, pd.DataFrame):
            content.to_parquet(target, index=False)
        else:
            target.write_bytes(content)
        inputs = {
            (path if path.startswith("resources/") else f"{self.prefix}/{path}"): _sha(
                (self.root if path.startswith("resources/") else self.folder) / path
            )
            for path in job.get("inputs", ())
        }
        record = {
            "record_version": 1,
            "path": f"{self.prefix}/{rel}",
            "sha256": _sha(target),
            "bytes": target.stat().st_size,
            "rule": rule,
            "wildcards": {"dataset": "cub"},
            "params": job.get("params", {}),
            "inputs": inputs,
            "code": job.get("code", f"code-of-{rule}"),
            "software": {
                "python": "3.11.7",
                "implementation": "cpython",
                "platform": "Linux-x86_64",
                "packages": {"torch": self.torch, "pandas": "3.1.1"},
                "environment": {"torch": self.torch, "pandas": "3.1.1"},
                "torch_runtime": {"device": "cpu", "threads": self.threads},
                **({"numerics": {"mode": self.mode, "torch_kernels": "AVX2"}} if self.mode else {}),
            },
            "facts": {},
        }
        (target.parent / (target.name + PROVENANCE_SUFFIX)).write_text(json.dumps(record))
        return _sha(target)

    def run(self, lr: float = 5e-05, clock: str = "09:00", shift: float = 0.0) -> Path:
        """The whole toy pipeline: taxonomy, splits, features, cells, lock, eval, tables."""
        config = {"training": {"lr": lr, "epochs": 100}, "head": {"dropout": 0.1}}
        classes = (self.root / SOURCE).read_bytes()
        tax = self.publish(
            "cub/taxonomy/taxonomy.parquet", b"tax" + classes, "taxonomy_cub", inputs=[SOURCE]
        )
        splits = self.publish(
            "cub/splits/dev.parquet",
            tax.encode(),
            "splits",
            inputs=["cub/taxonomy/taxonomy.parquet"],
        )
        features = self.publish(
            "cub/features/dev.parquet",
            splits.encode(),
            "features_dev",
            inputs=["cub/splits/dev.parquet"],
        )
        models = []
        for cell in CELLS:
            made = f"{cell} lr={lr} {features}".encode()
            inputs = ["cub/features/dev.parquet", "cub/splits/dev.parquet"]
            job = {"inputs": inputs, "params": {"config": config}}
            models.append(
                self.publish(f"cub/cells/{cell}/model.safetensors", made, "train_cell", **job)
            )
            self.publish(
                f"cub/cells/{cell}/train_log.parquet", made + clock.encode(), "train_cell", **job
            )
        lock = f"{clock} {models}".encode()
        self.publish(
            "cub/lock/final_lock.json",
            lock,
            "final_lock",
            inputs=[f"cub/cells/{c}/model.safetensors" for c in CELLS],
            params={"access_log": f"{logs_folder(self.prefix)}/cub/lock/test_access.log"},
        )
        evals = []
        for cell, model in zip(CELLS, models, strict=True):
            inputs = [f"cub/cells/{cell}/model.safetensors", "cub/lock/final_lock.json"]
            evals.append(f"cub/eval/{cell}.parquet")
            self.publish(
                evals[-1], model.encode(), "evaluate_cell", inputs=inputs, code=self.eval_code
            )
        out_dir = {"out_dir": f"{self.prefix}/cub/tables"}
        self.publish(
            "cub/tables/effects_summary.parquet",
            _effects(shift),
            "effect_tables",
            inputs=evals,
            params=out_dir,
        )
        self.publish(
            "cub/tables/per_seed.parquet", _effects(), "effect_tables", inputs=evals, params=out_dir
        )
        return self.folder


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "resources").mkdir()
    (tmp_path / SOURCE).write_text("1 Black_footed_Albatross\n")
    return tmp_path


def _changes(report: dict) -> list[tuple[str, tuple, list[str]]]:
    """Each cause group as (rule, changes, artifacts)."""
    return [
        (g["rule"], tuple(tuple(c.values()) for c in g["changes"]), g["artifacts"])
        for g in report["causes"]
    ]


def _stages(report: dict, identical: bool) -> list[str]:
    return [s["stage"] for s in report["stages"] if s["identical"] is identical]


def test_runs_in_different_folders_with_different_times_are_identical(root: Path):
    a = Pipeline(root, "results").run(clock="09:00")
    b = Pipeline(root, "runs/tiny").run(clock="17:45")
    assert _sha(a / "cub/lock/final_lock.json") != _sha(b / "cub/lock/final_lock.json")
    assert load_run(b).records["cub/tables/per_seed.parquet"]["params"] == {
        "out_dir": "<run>/cub/tables"
    }
    assert load_run(b).records["cub/lock/final_lock.json"]["params"] == {
        "access_log": "<run>/logs/cub/lock/test_access.log"  # runs/tiny/logs/..., results/logs/...
    }
    report = compare_runs_report(a, b)
    assert report["identical"] and not report["causes"] and not report["consequences"]
    assert report["compared"] == 18 and report["timed"] == 5
    assert render_markdown(report) == (
        f"identical: {a} and {b} (18 artifacts; timed artifacts compared by their provenance only)"
    )


def test_a_changed_learning_rate_is_the_first_difference_and_the_rest_follow(root: Path):
    a = Pipeline(root, "runs/a").run(lr=5e-05)
    b = Pipeline(root, "runs/b").run(lr=6e-05, clock="10:00", shift=0.125)
    report = compare_runs_report(a, b)
    cells = [
        f"cub/cells/{cell}/{name}"
        for cell in CELLS
        for name in ("model.safetensors", "train_log.parquet")
    ]
    assert _changes(report) == [
        ("train_cell", (("param", "config.training.lr", "5e-05", "6e-05"),), sorted(cells))
    ]
    consequences = {item["path"] for item in report["consequences"]}
    assert {"cub/lock/final_lock.json", "cub/eval/ER-42.parquet"} <= consequences
    assert "cub/tables/effects_summary.parquet" in consequences
    assert _stages(report, True) == ["cub/taxonomy", "cub/splits", "cub/features"]
    assert _stages(report, False) == ["cub/cells", "cub/lock", "cub/eval", "cub/tables"]
    text = render_markdown(report)
    assert (
        "- `config.training.lr` 5e-05 → 6e-05: 8 artifacts of 1 rule\n"
        "  - train_cell: 8 artifacts in cub/cells\n"
    ) in text
    assert "identical: cub/taxonomy, cub/splits, cub/features\n" in text
    assert "evaluate_cell" not in text and "effect_tables" not in text


def test_tables_are_shown_side_by_side_with_their_difference(root: Path):
    a = Pipeline(root, "runs/a").run()
    b = Pipeline(root, "runs/b").run(shift=0.125)
    tables = compare_runs_report(a, b)["tables"]
    assert tables["identical"] == 1 and tables["only_a"] == tables["only_b"] == []
    [table] = tables["differing"]
    assert table["table"] == "cub/tables/effects_summary.parquet"
    assert table["keys"] == ["dataset", "level", "metric", "effect"]
    [row] = table["rows"]
    assert row["key"] == {"dataset": "cub", "level": "leaf", "metric": "map", "effect": "geom_R"}
    assert row["cells"] == {"mean": {"a": 0.25, "b": 0.375, "delta": 0.125}}
    text = render_markdown(compare_runs_report(a, b))
    assert "| dataset | level | metric | effect | mean A | mean B | mean Δ |" in text
    assert "| cub | leaf | map | geom_R | 0.25 | 0.375 | +0.125 |" in text


def test_a_table_in_one_run_only_is_listed_by_name(root: Path):
    a = Pipeline(root, "runs/a").run()
    pipeline = Pipeline(root, "runs/b")
    b = pipeline.run()
    pipeline.publish("cub/tables/controls/extra.parquet", _effects(), "controls_tables")
    report = compare_runs_report(a, b)
    assert report["tables"]["only_b"] == ["cub/tables/controls/extra.parquet"]
    assert report["only_b"] == ["cub/tables/controls/extra.parquet"] and not report["identical"]
    text = render_markdown(report)
    assert "Tables only in B: `cub/tables/controls/extra.parquet`" in text
    assert "Artifacts only in B (1): `cub/tables/controls/extra.parquet`" in text


def test_a_package_version_is_a_first_difference(root: Path):
    a = Pipeline(root, "runs/a").run()
    b = Pipeline(root, "runs/b", torch="2.15.0").run()
    report = compare_runs_report(a, b)
    assert {change for _, changes, _ in _changes(report) for change in changes} == {
        ("software", "torch", "2.14.1", "2.15.0")
    }
    assert "- `torch` 2.14.1 → 2.15.0: " in render_markdown(report)


def test_torch_threads_are_a_first_difference(root: Path):
    # CPU kernels round by thread count: the same run on 1 and 2 cores gives other features
    a = Pipeline(root, "runs/a").run()
    b = Pipeline(root, "runs/b", threads=2).run()
    changes = {
        change for _, changes, _ in _changes(compare_runs_report(a, b)) for change in changes
    }
    assert changes == {("software", "torch threads", "1", "2")}


def test_a_changed_code_hash_names_the_rule_and_leaves_upstream_identical(root: Path):
    a = Pipeline(root, "runs/a").run()
    b = Pipeline(root, "runs/b", eval_code="e2").run()
    report = compare_runs_report(a, b)
    [(rule, changes, artifacts)] = _changes(report)
    assert rule == "evaluate_cell" and changes == (("code", "code", "e1", "e2"),)
    assert artifacts == [f"cub/eval/{cell}.parquet" for cell in CELLS]
    assert "cub/cells" in _stages(report, True)
    assert (
        "- code hash e1 → e2: 4 artifacts of 1 rule\n  - evaluate_cell: 4 artifacts in cub/eval"
        in (render_markdown(report))
    )


def test_a_changed_source_input_is_the_first_difference(root: Path):
    a = Pipeline(root, "runs/a").run()
    old = _sha(root / SOURCE)
    (root / SOURCE).write_text("1 Laysan_Albatross\n")
    b = Pipeline(root, "runs/b").run()
    report = compare_runs_report(a, b)
    [(rule, changes, artifacts)] = _changes(report)
    assert rule == "taxonomy_cub" and artifacts == ["cub/taxonomy/taxonomy.parquet"]
    assert changes == (("source", SOURCE, old, _sha(root / SOURCE)),)
    assert len(report["consequences"]) == 17
    # the toy tables do not depend on their inputs: same content, so their stage agrees
    assert _stages(report, True) == ["cub/tables"]
    assert f"source input `{SOURCE}` {old[:12]} → " in render_markdown(report)


def test_timed_artifacts_with_other_bytes_are_not_differences(root: Path):
    a = Pipeline(root, "runs/a").run(clock="09:00")
    b = Pipeline(root, "runs/b").run(clock="23:59")
    records_a, records_b = load_run(a).records, load_run(b).records
    for path in ("cub/lock/final_lock.json", "cub/cells/ER-42/train_log.parquet"):
        assert records_a[path]["sha256"] != records_b[path]["sha256"]
    lock = "<run>/cub/lock/final_lock.json"
    eval_inputs = [r["cub/eval/ER-42.parquet"]["inputs"][lock] for r in (records_a, records_b)]
    assert eval_inputs[0] != eval_inputs[1]  # the eval records carry the lock's time
    report = compare_runs_report(a, b)
    assert report["identical"] and all(stage["identical"] for stage in report["stages"])


def test_a_folder_that_is_not_a_run_is_an_error_naming_it(tmp_path: Path):
    with pytest.raises(NotARunError, match=f"{tmp_path / 'nope'} is not a run"):
        load_run(tmp_path / "nope")
    (tmp_path / "empty/cub").mkdir(parents=True)
    empty = tmp_path / "empty"
    with pytest.raises(NotARunError, match=f"{empty} is not a run: no provenance records under it"):
        load_run(empty)


def test_the_cli_prints_markdown_or_json_and_exits_0_when_runs_differ(root: Path, capsys):
    a = Pipeline(root, "runs/a").run()
    b = Pipeline(root, "runs/b").run(lr=6e-05)
    assert main(["compare", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"# {a} (A) vs {b} (B)\n") and "`config.training.lr`" in text
    assert main(["compare", str(a), str(b), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report == json.loads(json.dumps(compare_runs_report(a, b)))
    assert report["causes"][0]["changes"][0]["key"] == "config.training.lr"
    assert main(["compare", str(a), str(a)]) == 0
    assert capsys.readouterr().out.startswith("identical: ")


def test_the_cli_refuses_a_folder_that_is_not_a_run(root: Path, capsys):
    a = Pipeline(root, "runs/a").run()
    assert main(["compare", str(a), str(root / "resources")]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"hierbench: error: {root / 'resources'} is not a run: no provenance records under it "
        "(a run folder is a config's key run, e.g. results or runs/tiny)\n"
    )


def test_rows_are_matched_on_text_and_seed_columns_else_by_order():
    per_seed = pd.DataFrame(
        {"arm": ["ER", "ER", "HR"], "seed": [42, 7, 42], "n": [1, 1, 1], "value": [1.0, 2.0, 3.0]}
    )
    assert key_columns(per_seed, per_seed) == ["arm", "seed"]
    changed = per_seed.assign(value=[1.0, 2.5, 3.0])
    [row] = diff_table(per_seed, changed)["rows"]
    assert row["key"] == {"arm": "ER", "seed": 7} and row["cells"]["value"]["delta"] == 0.5
    twice = pd.DataFrame({"arm": ["ER", "ER"], "value": [1.0, 2.0]})
    diff = diff_table(twice, twice.assign(value=[1.0, 4.0]))
    assert diff["matched_by"] == "row order" and diff["rows"][0]["key"] == {"#row": 1}


def test_rows_in_one_table_only_and_text_values_are_shown():
    a = pd.DataFrame({"arm": ["ER", "HR"], "mean_sd": ["0.5 ± 0.1", "0.6 ± 0.1"]})
    b = pd.DataFrame({"arm": ["ER", "HS"], "mean_sd": ["0.5 ± 0.2", "0.7 ± 0.1"]})
    rows = diff_table(a, b)["rows"]
    assert [(row["key"]["arm"], row["in"]) for row in rows] == [
        ("ER", "both"),
        ("HR", "a"),
        ("HS", "b"),
    ]
    assert rows[0]["cells"] == {"mean_sd": {"a": "0.5 ± 0.1", "b": "0.5 ± 0.2"}}
    assert key_columns(a, b) == ["arm"] and key_columns(a, a) == ["arm", "mean_sd"]


def test_path_patterns_are_compact_and_say_what_else_they_match():
    cells = [f"cub/cells/{c}/model.safetensors" for c in CELLS]
    universe = [*cells, "cub/cells/ER-42/record.json", "cub/eval/ER-42.parquet"]
    assert path_pattern(cells, universe) == ("`cub/cells/*-42/model.safetensors`", 4)
    assert path_pattern(cells[:2], universe)[0] == ", ".join(f"`{p}`" for p in cells[:2])
    assert path_pattern([*cells, "cub/cells/ER-42/record.json"], universe)[1] == 5


def test_markdown_shows_summary_tables_row_by_row_and_lists_the_others():
    from hierbench.runtools.tablediff import is_summary_table

    assert is_summary_table("cub/tables/arms_summary.parquet")
    assert is_summary_table("cub/tables/effects_summary.parquet")
    assert not is_summary_table("cub/tables/per_seed.parquet")
    assert not is_summary_table("cub/tables/controls/semantic.parquet")
    assert not is_summary_table("cub/outer/outer-1/scores.parquet")
