"""Pictures (#63) in a complete tiny run: each dataset's retrieval galleries and embedding
views, drawn after the Final lock from the sealed test, published with provenance and shown in
the report, the same bytes when redrawn, and retraining one arm redraws its own dataset's
pictures only."""

from __future__ import annotations

from pathlib import Path

from conftest import TINY, TINY_RUN, TINY_SEEDS, scheduled_rules, snakemake

from hierbench.cellkinds import picture_arms
from hierbench.config import load_config
from hierbench.paths import RunPaths
from hierbench.provenance.artifacts import read_provenance
from hierbench.provenance.hashing import sha256_file
from hierbench.stages.pictures import QUERIES, TOP_K

DATASETS = ("cub", "nabirds")
# The caption's words for the stage's counts (a caption that drifts from the code fails here).
WORDS = {3: "three", 10: "ten"}


def _paths(repo: Path) -> RunPaths:
    return RunPaths(TINY_RUN, load_config(repo / "configs/tiny.yaml"))


def _pictures(repo: Path) -> list[Path]:
    """Every picture file the tiny run should hold."""
    paths = _paths(repo)
    return [
        repo / path
        for dataset in DATASETS
        for files in paths.picture_files(dataset).values()
        for path in files
    ]


def test_every_picture_is_drawn_after_the_lock_with_provenance(built_repo: Path):
    pictures = _pictures(built_repo)
    assert len(pictures) == 4 * len(DATASETS)
    for path in pictures:
        record = read_provenance(path)
        assert record["sha256"] == sha256_file(path), path
        assert record["rule"] == "pictures"
        lock = f"{TINY_RUN}/{record['wildcards']['dataset']}/lock/final_lock.json"
        assert record["inputs"][lock] == sha256_file(built_repo / lock), path
        assert path.stat().st_size > 5000, path
    assert all(p.read_bytes()[:5] == b"%PDF-" for p in pictures if p.suffix == ".pdf")


def test_the_pictures_read_each_arm_and_log_their_sealed_read(built_repo: Path):
    paths, config = _paths(built_repo), load_config(built_repo / "configs/tiny.yaml")
    for dataset in DATASETS:
        arms = [cell.arm for cell in picture_arms(config, dataset)]
        assert arms[:5] == ["frozen", "E_R", "H_R", "E_S", "H_S"]
        assert ("hier" in arms) == (dataset == "cub")  # tiny trains HIER-style on CUB only
        record = read_provenance(built_repo / paths.picture_files(dataset)["galleries"][0])
        models = set(paths.picture_inputs(dataset).values()) & set(record["inputs"])
        assert len([m for m in models if m.endswith("model.safetensors")]) == len(arms) - 1
        access = built_repo / f"{TINY_RUN}/logs/{dataset}/lock/test_access.log"
        read = [line for line in access.read_text().splitlines() if "pictures" in line]
        assert len(read) == 1 and " ".join(arms[1:]) in read[0], read


def test_the_report_declares_every_picture_with_its_caption(built_repo: Path):
    report = built_repo / "report.html"
    snakemake(built_repo, *TINY, "--report", str(report))
    html = report.read_text(encoding="utf-8")
    assert "Pictures" in html
    for path in _pictures(built_repo):
        assert f'"{path.relative_to(built_repo)}"' in html, path  # declared with its run path
    galleries = (built_repo / "report/galleries.rst").read_text(encoding="utf-8")
    views = (built_repo / "report/embedding_views.rst").read_text(encoding="utf-8")
    assert f"{WORDS[QUERIES]} queries" in galleries and f"top {WORDS[TOP_K]}" in galleries
    assert "qg-42" in html  # the first sealed draw's seed, filled in from the config
    for caption in (galleries, views):
        assert "Drawn after the Final lock" in caption and "It cannot show" in caption
    assert "log map at the" in views and "principal directions" in views


def test_redrawn_pictures_are_the_same_bytes(built_repo: Path):
    pictures = _pictures(built_repo)
    before = [sha256_file(path) for path in pictures]
    snakemake(built_repo, *TINY, "--forcerun", "pictures")
    assert [sha256_file(path) for path in pictures] == before


def test_retraining_one_arm_redraws_its_own_datasets_pictures_only(built_repo: Path):
    rules = scheduled_rules(built_repo, *TINY, "--forcerun", "train_hier_cell")
    assert rules["train_hier_cell"] == len(TINY_SEEDS), rules
    assert rules["final_lock"] == 1 and rules["pictures"] == 1, rules  # CUB's alone
    dag = snakemake(built_repo, *TINY, "-n", "--forcerun", "train_hier_cell").stdout
    jobs = [block for block in dag.split("\n\n") if "rule pictures:" in block]
    assert len(jobs) == 1 and "dataset=cub" in jobs[0], jobs
