"""The seal in the DAG: nothing that trains, tunes, chooses a duration or audits ever takes a
sealed artifact in."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import TINY, TINY_RUN, snakemake

# The only jobs upstream of the lock that may read sealed artifacts: the split stage writes
# them, the sealed feature extraction embeds the test images, and the lock only hashes them.
SEALED_PRODUCERS = {"features_sealed_test", "final_lock"}
JOB_HEADER = re.compile(r"^(?:local)?rule (\w+):$")


def _jobs(dry_run: str) -> list[dict]:
    """Jobs of a `snakemake -n` listing: rule, inputs and outputs."""
    jobs, current = [], None
    for line in dry_run.splitlines():
        header = JOB_HEADER.match(line.strip())
        if header:
            current = {"rule": header.group(1), "input": [], "output": []}
            jobs.append(current)
        elif current is not None:
            for key in ("input", "output"):
                prefix = f"{key}: "
                if line.strip().startswith(prefix):
                    current[key] = [p.strip() for p in line.strip()[len(prefix) :].split(",")]
    return jobs


def _upstream(jobs: list[dict], targets: set[str]) -> list[dict]:
    """Jobs whose outputs the target jobs need, transitively."""
    producer = {path: job for job in jobs for path in job["output"]}
    seen, pending = [], [job for job in jobs if job["rule"] in targets]
    while pending:
        job = pending.pop()
        if any(job is s for s in seen):
            continue
        seen.append(job)
        pending.extend(producer[p] for p in job["input"] if p in producer)
    return seen


def test_no_rule_upstream_of_the_lock_reads_a_sealed_artifact(repo_copy: Path):
    listing = snakemake(repo_copy, "-n", "-F", *TINY).stdout
    jobs = _jobs(listing)
    assert {"train_factorial", "tune", "fairness_audit", "final_lock", "evaluate_cell"} <= {
        job["rule"] for job in jobs
    }
    upstream = _upstream(jobs, {"final_lock"})
    assert {job["rule"] for job in upstream} >= {
        "train_factorial",
        "tune",
        "fairness_audit",
        "splits",
    }
    offenders = {
        job["rule"]
        for job in upstream
        if job["rule"] not in SEALED_PRODUCERS and any("/sealed/" in p for p in job["input"])
    }
    assert offenders == set()
    sealed_readers = {job["rule"] for job in jobs if any("/sealed/" in p for p in job["input"])}
    evaluations = {
        "evaluate_cell",
        "evaluate_frozen",
        "evaluate_curvature_cell",
        "evaluate_semantic_cell",
        "evaluate_pca",
        "evaluate_hier_cell",
        "evaluate_companion_cell",
        "evaluate_companion_angle",
    }
    assert sealed_readers == SEALED_PRODUCERS | evaluations | {"pictures"}
    controls = {"train_curvature", "select_semantic_duration", "train_semantic"}
    baselines = {"fit_pca", "train_hier_cell", "train_companion_cell", "features_dev_crops"}
    assert controls | baselines <= {job["rule"] for job in upstream}


def test_only_the_feature_slices_read_a_backbone_pass(repo_copy: Path):
    """A backbone pass holds every image, test images included (unlabelled): only the three
    slice rules take it in, so training reaches test images through none of them."""
    jobs = _jobs(snakemake(repo_copy, "-n", "-F", *TINY).stdout)
    readers = {job["rule"] for job in jobs if any("/features/backbone/" in p for p in job["input"])}
    assert readers == {"features_dev", "features_dev_crops", "features_sealed_test"}
    producers = {
        job["rule"] for job in jobs if any("/features/backbone/" in p for p in job["output"])
    }
    assert producers == {"backbone_features"}
    inputs = {p for job in jobs if job["rule"] == "backbone_features" for p in job["input"]}
    assert not any("/taxonomy/" in p or "/splits/" in p for p in inputs), sorted(inputs)


def test_the_pca_fit_and_the_outer_splits_see_development_data_only(repo_copy: Path):
    """PCA is fitted on development rows only: neither it nor anything it needs takes a sealed
    artifact or the lock in; the outer splits (development data) need neither either."""
    jobs = _jobs(snakemake(repo_copy, "-n", "-F", *TINY).stdout)
    for rules in ({"fit_pca"}, {"outer_tables"}):
        upstream = _upstream(jobs, rules)
        assert rules <= {job["rule"] for job in upstream}
        for job in upstream:
            assert not any("/sealed/" in p or "/lock/" in p for p in job["input"]), job
    (fit,) = [job for job in jobs if job["rule"] == "fit_pca"]
    assert fit["input"] == [
        f"{TINY_RUN}/cub/features/dev.parquet",
        f"{TINY_RUN}/cub/splits/dev.parquet",
    ]


def test_every_evaluation_and_picture_waits_for_the_lock(repo_copy: Path):
    jobs = _jobs(snakemake(repo_copy, "-n", "-F", *TINY).stdout)
    readers = [job for job in jobs if job["rule"].startswith("evaluate")]
    readers += [job for job in jobs if job["rule"] == "pictures"]
    assert len([job for job in readers if job["rule"] == "pictures"]) == 2  # one per dataset
    for job in readers:
        assert any(p.endswith("lock/final_lock.json") for p in job["input"]), job
