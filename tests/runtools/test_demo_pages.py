"""The demo's numbers on the guide's pages come from one named run (runtools.demo_pages): the
committed pages against the kept run, and the keeping itself on a synthetic run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from hierbench.provenance.artifacts import PROVENANCE_SUFFIX
from hierbench.provenance.hashing import sha256_file
from hierbench.runtools import demo_pages
from hierbench.runtools.demo_pages import (
    DemoRunError,
    first_table,
    keep_run,
    stale_sections,
    unkept_files,
)
from hierbench.runtools.page_sections import markers

REPO = Path(__file__).resolve().parents[2]
MODE = "portable-x86-64-v3"


def test_the_committed_pages_show_the_kept_run_and_it_is_the_runs():
    assert stale_sections(REPO) == [], "rerun tools/demo_pages.py --run RUN --write"
    assert unkept_files(REPO) == []
    identity = json.loads((REPO / demo_pages.SNAPSHOT / demo_pages.IDENTITY).read_text())
    assert identity["numeric_mode"] == MODE and len(identity["commit"]) >= 7
    assert set(identity["locks"]) == set(demo_pages.DATASETS)


SUMMARY = """# {dataset}: results

## Planned endpoints: the five simple effects on mean hierarchy mAP

| dataset | effect | estimate |
|---|---|---|
| {dataset} | geom_R | +0.0100 |

Some prose.

## mAP per arm and level

| dataset | arm | leaf |
|---|---|---|
| {dataset} | E_R | {value} |

## The companion cells ranked both ways: by distance and by angle

| arm | ranking | leaf |
|---|---|---|
| E_A | distance | 0.1 |
"""


def _publish(run: Path, relative: str, content: bytes, mode: str = MODE) -> None:
    """A run file with a provenance record in the real format's essentials."""
    path = run / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    record = {"rule": "effect_tables", "sha256": sha256_file(path), "path": relative}
    record["software"] = {"numerics": {"mode": mode}}
    path.with_name(path.name + PROVENANCE_SUFFIX).write_text(json.dumps(record))


def _synthetic_run(root: Path, value: str = "0.2500") -> Path:
    run = root / "results"
    for dataset in demo_pages.DATASETS:
        summary = SUMMARY.format(dataset=dataset, value=value).encode()
        _publish(run, f"{dataset}/tables/summary.md", summary)
        _publish(run, f"{dataset}/tables/table_ot.md", b"| arm | ot@5 |\n|---|---|\n| E_R | 1 |\n")
        lock = json.dumps({"training_finished_at": "2026-12-07T19:05:22+00:00"}).encode()
        _publish(run, f"{dataset}/lock/final_lock.json", lock)
    for table in demo_pages.WHOLE_TABLES.values():
        _publish(run, table, b"| arm | epochs |\n|---|---|\n| Full | 30 |\n")
    for source in demo_pages.FIGURES.values():
        picture = root / "picture.png"
        Image.new("RGB", (4, 4), (10, 20, 30)).save(picture)
        _publish(run, source, picture.read_bytes())
    return run


def _pages(repo: Path) -> None:
    """A README and a results page with every demo section's markers."""
    names: dict[str, list[str]] = {}
    for page, name in demo_pages.sections_named():
        names.setdefault(page, []).append(name)
    for page, found in names.items():
        text = "".join(f"{markers(n)[0]} -->\nold\n{markers(n)[1]}\n\n" for n in found)
        (repo / page).parent.mkdir(parents=True, exist_ok=True)
        (repo / page).write_text(text)


def test_a_kept_run_fills_the_pages_and_a_changed_copy_or_page_is_named(tmp_path: Path):
    run, repo = _synthetic_run(tmp_path), tmp_path / "repo"
    _pages(repo)
    keep_run(run, repo, "abc1234", machine="a 2-core test CPU (x86_64)")
    assert stale_sections(repo) == [] and unkept_files(repo) == []
    results = (repo / demo_pages.RESULTS).read_text()
    assert "| cub | E_R | 0.2500 |" in results and "commit `abc1234`, on 2026-12-07" in results
    readme = (repo / demo_pages.README).read_text()
    assert "| cub | geom_R | +0.0100 |\n| nabirds | geom_R | +0.0100 |" in readme

    kept = repo / demo_pages.SNAPSHOT / "cub/tables/summary.md"
    kept.write_text(kept.read_text().replace("0.2500", "0.2600"))
    assert unkept_files(repo) == ["docs/demo-run/cub/tables/summary.md"]
    assert stale_sections(repo) == ["docs/results.md: demo-arms-cub"]


def test_a_run_of_two_numeric_modes_is_refused(tmp_path: Path):
    run = _synthetic_run(tmp_path)
    _publish(run, "cub/tables/extra.md", b"x", mode="native")
    with pytest.raises(DemoRunError, match="2 numeric modes"):
        keep_run(run, tmp_path / "repo", "abc1234")


def test_a_quoted_table_is_the_first_below_its_heading():
    text = SUMMARY.format(dataset="cub", value="0.3")
    assert first_table(text, "## mAP per arm").splitlines()[-1] == "| cub | E_R | 0.3 |"
    with pytest.raises(DemoRunError, match="no section"):
        first_table(text, "## Not there")
