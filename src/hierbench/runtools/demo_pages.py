"""The demo's numbers on the guide's pages, from one named run.

The README and ``docs/results.md`` quote tables of one complete demo run. Its files that the
pages quote (each dataset's ``summary.md`` and OT table) are kept in the repository, in
``docs/demo-run/``, beside ``run.json``: the commit, day, machine and numeric mode that made
the run, the SHA256 of each dataset's Final lock, and each kept file's SHA256 as the run's own
provenance record has it. The pages' generated sections (:mod:`runtools.page_sections`) are
rendered from the kept files, so a fast test can tell when a page and the named run disagree,
and ``tools/demo_pages.py --run RUN --write`` takes a new run in one command.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
from pathlib import Path
from typing import Any

from hierbench.layout import CONTROL_TABLES, FINAL_LOCK, TABLES
from hierbench.protocol import CURVATURE_CONTROL, SEMANTIC_CONTROL, SUMMARY_PAGE, TABLE_OT
from hierbench.provenance.artifacts import PROVENANCE_SUFFIX
from hierbench.provenance.hashing import sha256_file
from hierbench.provenance.makers import MODE, maker_values
from hierbench.runtools.page_sections import is_current, with_section

SNAPSHOT = Path("docs/demo-run")
IDENTITY = "run.json"
DATASETS: tuple[str, ...] = ("cub", "nabirds")
SUMMARY = f"{TABLES}/{SUMMARY_PAGE}"
OT_TABLE = f"{TABLES}/{TABLE_OT}.md"
LOCK = FINAL_LOCK
QUOTED: tuple[str, ...] = (SUMMARY, OT_TABLE)
# Tables quoted whole, by their section on the results page: the context baselines of each
# dataset, and the controls' tables, which the demo's config runs on NABirds only.
WHOLE_TABLES: dict[str, str] = {
    **{f"demo-baselines-{d}": f"{TABLES}/baselines.md".format(dataset=d) for d in DATASETS},
    **{
        f"demo-{name}-nabirds": f"{CONTROL_TABLES}/{name}.md".format(dataset="nabirds")
        for name in (SEMANTIC_CONTROL, CURVATURE_CONTROL)
    },
}
# The headings of summary.md whose first table a page quotes.
ENDPOINTS = "## Planned endpoints"
ARMS = "## mAP per arm and level"
COMPANION = "## The companion cells ranked both ways"
README = "README.md"
RESULTS = "docs/results.md"
IMAGES = Path("docs/images")
# The run's figures the pages show, by their name in docs/images/ (a .jpg is the PNG re-encoded:
# the galleries' rendered thumbnails are megabytes as PNG).
FIGURES: dict[str, str] = {
    "cub_effects.png": "cub/figures/effects.png",
    "cub_map_by_level.png": "cub/figures/map_by_level.png",
    "cub_hyperbolic_norms.png": "cub/figures/hyperbolic_norms.png",
    "cub_ot_by_k.png": "cub/figures/ot_by_k.png",
    "cub_embedding_views.png": "cub/figures/embedding_views.png",
    "cub_galleries.jpg": "cub/figures/galleries.png",
    "cub_training_curves_factorial.png": "cub/curves/training_curves_factorial.png",
    "nabirds_effects.png": "nabirds/figures/effects.png",
    "nabirds_map_by_level.png": "nabirds/figures/map_by_level.png",
    "nabirds_embedding_views.png": "nabirds/figures/embedding_views.png",
}
JPEG_QUALITY = 85


class DemoRunError(ValueError):
    """A run that lacks a file the pages quote, or a kept copy that is not the run's."""


def first_table(text: str, heading: str) -> str:
    """The first Markdown table below the line that starts with ``heading``."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(heading)), None)
    if start is None:
        raise DemoRunError(f"no section {heading!r} in the run's summary")
    rows: list[str] = []
    for line in lines[start + 1 :]:
        if line.startswith("|"):
            rows.append(line)
        elif rows or line.startswith("## "):
            break
    if not rows:
        raise DemoRunError(f"the section {heading!r} holds no table")
    return "\n".join(rows) + "\n"


def _kept(snapshot: Path, pattern: str, dataset: str) -> str:
    """A kept file of the named run, as text."""
    return (snapshot / pattern.format(dataset=dataset)).read_text(encoding="utf-8")


def _joined(tables: list[str]) -> str:
    """Tables with one header: the first table whole, the others' rows below it."""
    rows = tables[0].splitlines()
    for table in tables[1:]:
        rows += table.splitlines()[2:]
    return "\n".join(rows) + "\n"


def identity_line(identity: dict[str, Any]) -> str:
    """The one sentence that names the run behind a page's numbers."""
    locks = ", ".join(f"{name} `{sha[:12]}`" for name, sha in identity["locks"].items())
    return (
        f"The demo's numbers on this page come from one run: `snakemake --cores 2` on "
        f"`config.yaml` from nothing at commit `{identity['commit']}`, on "
        f"{identity['date']}, on {identity['machine']}, in the numeric mode "
        f"`{identity['numeric_mode']}` (Final locks: {locks}). Its quoted files are kept in "
        "`docs/demo-run/`; `python tools/demo_pages.py --run RUN --write` puts another run's "
        "numbers here.\n"
    )


def sections(snapshot: Path) -> dict[tuple[str, str], str]:
    """Each generated section of the pages, by (page, section name), rendered from the kept
    files of the named run."""
    identity = json.loads((snapshot / IDENTITY).read_text(encoding="utf-8"))
    line = identity_line(identity)
    found = {(README, "demo-run"): line, (RESULTS, "demo-run"): line}
    endpoints = [first_table(_kept(snapshot, SUMMARY, d), ENDPOINTS) for d in DATASETS]
    found[(README, "demo-endpoints")] = _joined(endpoints)
    for dataset in DATASETS:
        summary = _kept(snapshot, SUMMARY, dataset)
        found[(RESULTS, f"demo-arms-{dataset}")] = first_table(summary, ARMS)
        found[(RESULTS, f"demo-companion-{dataset}")] = first_table(summary, COMPANION)
    found[(RESULTS, "demo-ot-cub")] = _kept(snapshot, OT_TABLE, "cub")
    for name, path in WHOLE_TABLES.items():
        found[(RESULTS, name)] = (snapshot / path).read_text(encoding="utf-8")
    if set(found) != set(sections_named()):
        raise DemoRunError("demo_pages.sections and sections_named disagree")
    return found


def sections_named() -> list[tuple[str, str]]:
    """Every generated section the pages hold, as (page, section name)."""
    names = [(README, "demo-run"), (RESULTS, "demo-run"), (README, "demo-endpoints")]
    for dataset in DATASETS:
        names += [(RESULTS, f"demo-arms-{dataset}"), (RESULTS, f"demo-companion-{dataset}")]
    return [*names, (RESULTS, "demo-ot-cub"), *[(RESULTS, name) for name in WHOLE_TABLES]]


def stale_sections(repo: Path) -> list[str]:
    """The generated sections whose page does not hold what the kept run renders, as
    ``page: section``."""
    stale = []
    for (page, name), content in sections(repo / SNAPSHOT).items():
        if not is_current((repo / page).read_text(encoding="utf-8"), name, content):
            stale.append(f"{page}: {name}")
    return stale


def unkept_files(repo: Path) -> list[str]:
    """The kept files and figures whose bytes are not those ``run.json`` records."""
    snapshot = repo / SNAPSHOT
    identity = json.loads((snapshot / IDENTITY).read_text(encoding="utf-8"))
    kept = {snapshot / path: sha for path, sha in identity["files"].items()}
    kept |= {repo / IMAGES / name: shown["sha256"] for name, shown in identity["figures"].items()}
    return sorted(
        path.relative_to(repo).as_posix()
        for path, sha in kept.items()
        if not path.is_file() or sha256_file(path) != sha
    )


def _recorded_sha(run: Path, relative: str) -> str:
    """The SHA256 that the run's provenance record gives a file, checked against its bytes."""
    path = run / relative
    record_path = path.with_name(path.name + PROVENANCE_SUFFIX)
    if not path.is_file() or not record_path.is_file():
        raise DemoRunError(f"{path}: the run lacks this file or its provenance record")
    recorded = json.loads(record_path.read_text(encoding="utf-8"))["sha256"]
    if sha256_file(path) != recorded:
        raise DemoRunError(f"{path} does not match its provenance record; audit the run")
    return str(recorded)


def quoted_files() -> list[str]:
    """Every run file the pages quote, relative to the run folder."""
    quoted = [pattern.format(dataset=d) for pattern in QUOTED for d in DATASETS]
    return [*quoted, *WHOLE_TABLES.values()]


def run_identity(run: Path, commit: str, machine: str | None = None) -> dict[str, Any]:
    """What made ``run``: the commit (the caller's word), the day training finished (the CUB
    lock's time), this machine (the tool runs where the run was made), the numeric mode its
    records name, its Final locks' and its quoted files' SHA256."""
    records = [
        (p.as_posix(), json.loads(p.read_text(encoding="utf-8")))
        for p in sorted(run.rglob(f"*{PROVENANCE_SUFFIX}"))
    ]
    modes = sorted(maker_values(records).get(MODE, {}))
    if len(modes) != 1:
        raise DemoRunError(f"{run}: its records name {len(modes)} numeric modes {modes}, not one")
    lock = json.loads((run / LOCK.format(dataset=DATASETS[0])).read_text(encoding="utf-8"))
    return {
        "commit": commit,
        "date": str(lock["training_finished_at"])[:10],
        "machine": machine or describe_machine(),
        "numeric_mode": modes[0],
        "locks": {d: _recorded_sha(run, LOCK.format(dataset=d)) for d in DATASETS},
        "files": {path: _recorded_sha(run, path) for path in quoted_files()},
    }


def describe_machine() -> str:
    """This machine as a page names it: its CPU model, core count and architecture."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"a {os.cpu_count()}-core {model} ({platform.machine()})"


def show_figure(run: Path, source: str, target: Path) -> dict[str, str]:
    """Copy a run's figure to the guide's images (re-encoded as JPEG where ``target`` says so);
    its source, the source's recorded SHA256 and the shown file's SHA256."""
    recorded = _recorded_sha(run, source)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.suffix == ".jpg":
        from PIL import Image

        with Image.open(run / source) as image:
            image.convert("RGB").save(target, "JPEG", quality=JPEG_QUALITY, optimize=True)
    else:
        shutil.copyfile(run / source, target)
    return {"source": source, "run_sha256": recorded, "sha256": sha256_file(target)}


def keep_run(run: Path, repo: Path, commit: str, machine: str | None = None) -> None:
    """Keep ``run``'s quoted files and identity in the repository and rewrite the pages'
    generated sections from them."""
    identity = run_identity(run, commit, machine)
    snapshot = repo / SNAPSHOT
    if snapshot.exists():
        shutil.rmtree(snapshot)
    for relative in identity["files"]:
        (snapshot / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(run / relative, snapshot / relative)
    identity["figures"] = {
        name: show_figure(run, source, repo / IMAGES / name) for name, source in FIGURES.items()
    }
    text = json.dumps(identity, indent=2, sort_keys=True) + "\n"
    (snapshot / IDENTITY).write_text(text, encoding="utf-8")
    for (page, name), content in sections(snapshot).items():
        path = repo / page
        path.write_text(with_section(path.read_text(encoding="utf-8"), name, content), "utf-8")
