"""`hierbench compare RUN_OR_TABLE --published TABLE`: the published table against itself and a
shifted copy, the note on the embedded demo (on small fabricated run folders), the CSV it
writes, and the mistakes it answers in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO
from test_reproduction import SHIFTED_EFFECTS, shifted

from hierbench.cli import main
from hierbench.effects import read_per_seed
from hierbench.effects.per_seed_sources import is_demo_dataset, run_of_table
from hierbench.effects.reproduction import COMPARISON_COLUMNS
from hierbench.protocol import FACTORIAL_EFFECTS

PUBLISHED = REPO / "tests/fixtures/published/paper_per_seed_map.csv"
DEMO_NOTE = "Note: in {run}, cub is the embedded demo"


def compare(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run `hierbench compare` with ``args``; its status, stdout and stderr."""
    status = main(["compare", *map(str, args)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def fabricated_run(root: Path, content: str | None, demo_folder: bool = False) -> Path:
    """A run folder holding only the published CUB rows as cub/tables/per_seed.parquet, with a
    layout fingerprint record of ``content`` (none when None) and a cub/demo/ folder if asked."""
    run = root / "run"
    tables = run / "cub" / "tables"
    tables.mkdir(parents=True)
    published = read_per_seed(PUBLISHED)
    published[published["dataset"] == "cub"].to_parquet(tables / "per_seed.parquet")
    if content is not None:
        record = run / "cub" / "data" / "layout_files.parquet.prov.json"
        record.parent.mkdir(parents=True)
        record.write_text(
            json.dumps({"rule": "layout_fingerprint", "params": {"content": content}})
        )
    if demo_folder:
        (run / "cub" / "demo" / "CUB_200_2011").mkdir(parents=True)
    return run


def test_the_published_table_against_itself(capsys):
    status, out, err = compare(capsys, PUBLISHED, "--published", PUBLISHED)
    assert status == 0 and err == ""
    assert out.startswith(f"# {PUBLISHED} against the published {PUBLISHED}\n")
    assert "Note:" not in out
    assert out.count("| equivalent within the margin |") == 18
    assert out.rstrip().endswith(
        "planned endpoints: 10 equivalent within the margin; arms: 8 equivalent within the margin."
    )
    assert "neither side's test-image variance is known" in out


def test_a_shifted_copy_differs_where_shifted_in_json_and_csv(tmp_path, capsys):
    copy = tmp_path / "shifted.csv"
    shifted(read_per_seed(PUBLISHED), "nabirds", ("H", "R"), 0.02).to_csv(copy, index=False)
    out_csv = tmp_path / "out" / "comparison.csv"
    status, out, err = compare(capsys, copy, "--published", PUBLISHED, "--json", "--out", out_csv)
    assert status == 0 and err == f"18 rows -> {out_csv}\n"
    report = json.loads(out)
    assert report["demo"] == [] and report["demo_note"] == ""
    differing = {
        (row["dataset"], row["name"])
        for row in report["rows"]
        if row["verdict"] != "equivalent within the margin"
    }
    assert differing == {("nabirds", name) for name in [*SHIFTED_EFFECTS, "H_R"]}
    assert report["verdicts"]["endpoint"] == {"equivalent within the margin": 7, "differs": 3}
    written = pd.read_csv(out_csv, keep_default_na=False)
    assert tuple(written.columns) == COMPARISON_COLUMNS and len(written) == 18
    assert sorted(p.name for p in out_csv.parent.iterdir()) == ["comparison.csv"]  # no temporary


@pytest.mark.parametrize(
    ("content", "demo_folder", "is_demo"),
    [
        ("demo", False, True),  # the run recorded reading the rendered demo
        ("9f2c…", True, False),  # it recorded a real folder: a stale demo/ folder does not count
        (None, True, True),  # no record: the rendered demo/ folder decides
        (None, False, False),
    ],
)
def test_the_demo_is_told_from_what_the_run_recorded(tmp_path, content, demo_folder, is_demo):
    run = fabricated_run(tmp_path, content, demo_folder)
    assert is_demo_dataset(run, "cub") is is_demo


def test_a_demo_run_is_named_first_in_plain_words(tmp_path, capsys):
    run = fabricated_run(tmp_path, "demo")
    status, out, _ = compare(capsys, run, "--published", PUBLISHED)
    assert status == 0
    words = " ".join(out.split())  # the note wraps where the run's path ends (its length varies)
    assert words.startswith(" ".join(DEMO_NOTE.format(run=run).split()))
    assert "not the paper's data" in " ".join(out.split("\n\n")[0].split())
    assert "nabirds endpoints only in the published table" in out
    table = run / "cub" / "tables" / "per_seed.parquet"  # named directly, it is still the run's
    assert run_of_table(table) == run
    status, out, err = compare(capsys, table, "--published", PUBLISHED, "--json")
    assert status == 0 and err.startswith(DEMO_NOTE.format(run=table))
    assert json.loads(out)["demo"] == ["cub"]


def test_a_real_run_gets_no_note(tmp_path, capsys):
    run = fabricated_run(tmp_path, "0123abcd")
    status, out, _ = compare(capsys, run, "--published", PUBLISHED)
    assert status == 0 and out.startswith(f"# {run} against the published")


def test_a_tight_margin_is_stated_and_applied(capsys):
    status, out, _ = compare(capsys, PUBLISHED, "--published", PUBLISHED, "--margin", "0.001")
    assert status == 0 and "| too uncertain to say |" in out
    assert "inside ±0.001 mAP (--margin)" in " ".join(out.split())  # the rule, unwrapped


def test_the_help_shows_both_forms(capsys):
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    usage = capsys.readouterr().out
    assert "hierbench compare [-h] [--json] RUN_A RUN_B" in usage
    assert "RUN_OR_TABLE --published TABLE" in usage


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["{pub}", "--published", "{tmp}/missing.csv"], "--published: no such file or folder"),
        (["{tmp}/nowhere", "--published", "{pub}"], "RUN_OR_TABLE: no such file or folder"),
        (["{tmp}/bad.csv", "--published", "{pub}"], "bad.csv lacks column(s) ['geometry'"),
        (
            ["{tmp}", "--published", "{pub}"],
            "holds no tables/per_seed.parquet in any dataset folder",
        ),
        (["{tmp}/moths.csv", "--published", "{pub}"], "no planned endpoint in both"),
        (["{pub}", "{pub}", "--published", "{pub}"], "give RUN_B"),
        (["{pub}", "--published", "{pub}", "--out", "{tmp}/x.md"], "--out: "),
        (["{pub}", "--published", "{pub}", "--margin", "0"], "--margin: 0.0 must be above 0"),
        (["{pub}"], "name a second run folder RUN_B, or --published TABLE"),
        (["{tmp}", "{tmp}", "--margin", "0.01"], "--margin go(es) with --published TABLE only"),
    ],
)
def test_a_mistake_is_one_line_and_exit_2(tmp_path, capsys, args, says):
    (tmp_path / "bad.csv").write_text("dataset,arm,seed,value\ncub,E_R,42,0.5\n")
    published = read_per_seed(PUBLISHED)
    moths = published[published["dataset"] == "cub"].assign(dataset="moths")
    moths.to_csv(tmp_path / "moths.csv", index=False)
    filled = [arg.format(pub=PUBLISHED, tmp=tmp_path) for arg in args]
    status, out, err = compare(capsys, *filled)
    assert status == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("hierbench: error: ")
    assert says in err


def test_a_run_of_one_seed_gets_no_interval_and_says_why(tmp_path, capsys):
    table = read_per_seed(PUBLISHED)
    one_seed = tmp_path / "one_seed.csv"
    table[table["seed"] == 42].to_csv(one_seed, index=False)
    status, out, _ = compare(capsys, one_seed, "--published", PUBLISHED, "--json")
    report = json.loads(out)
    assert status == 0 and {row["verdict"] for row in report["rows"]} == {"no interval"}
    first = report["rows"][0]
    assert first["ci_low"] is None and first["run_sd"] is None and first["run_n"] == 1
    assert first["note"] == "the run has 1 seed(s); a spread needs two"
    status, out, _ = compare(capsys, one_seed, "--published", PUBLISHED)
    assert "- cub geom_R: no interval, the run has 1 seed(s); a spread needs two" in out


def test_a_run_folder_brings_its_test_images(tmp_path, capsys):
    """A run's sealed test hash and its effect tables' test-image variance reach the interval:
    against an outside table the published side's variance is taken equal to the run's."""
    run = fabricated_run(tmp_path, "0123abcd")
    sealed = run / "cub" / "splits" / "sealed"
    sealed.mkdir(parents=True)
    pd.DataFrame({"split": ["final"], "role": ["test"], "sha256": ["ab" * 32]}).to_parquet(
        sealed / "manifest.parquet"
    )
    variance = 4e-6  # se² − sd²/n below
    pd.DataFrame(
        {
            "dataset": "cub",
            "level": "mean_hierarchy",
            "metric": "map",
            "effect": list(FACTORIAL_EFFECTS),
            "sd": 0.003,
            "n": 3,
            "se": (0.003**2 / 3 + variance) ** 0.5,
        }
    ).to_parquet(run / "cub" / "tables" / "effects_summary.parquet")
    status, out, _ = compare(capsys, run, "--published", PUBLISHED, "--json")
    rows = [row for row in json.loads(out)["rows"] if row["table"] == "endpoint"]
    assert status == 0 and len(rows) == 5
    assert {row["test_images"] for row in rows} == {"test images unknown"}
    assert [row["images_variance"] for row in rows] == pytest.approx([2 * variance] * 5)
    assert {row["images_note"] for row in rows} == {
        "the published table's test-image variance taken equal to the run's"
    }
    # against itself the hashes agree: the same test images, nothing added
    status, out, _ = compare(capsys, run, "--published", run, "--json")
    rows = json.loads(out)["rows"]
    assert {row["test_images"] for row in rows} == {"same test images"}
    assert {row["images_variance"] for row in rows} == {0.0}
