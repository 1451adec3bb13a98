"""Where a per-seed table comes from: a file named directly, or every dataset's
``<dataset>/tables/per_seed.parquet`` of a run folder, and whether a dataset of that run was the
embedded demo (rendered images, not the real collection).

The demo rule reads what the run recorded when it read its data: the provenance of
``<dataset>/data/layout_files.parquet`` holds ``content: demo`` for a rendered dataset and the
real folder's content hash otherwise (rules/common.smk, ``folder_content``). A run without that
record (tables copied out of it, an older layout) falls back on the folder the demo renders into,
``<dataset>/demo/``. A table named directly counts as part of a run when it lies at
``<run>/<dataset>/tables/per_seed.parquet``; anywhere else its source is unknown and no dataset is
called the demo. A run also says which test images it scored (its sealed test split's hash) and
how much they move each planned endpoint (the effect tables' shared variance), which
``compare --published`` carries when two studies' test images differ.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from hierbench.effects.intervals import shared_variance
from hierbench.effects.schema import EffectsError, read_per_seed, validate_per_seed
from hierbench.effects.study_images import NOTHING_KNOWN, StudyImages
from hierbench.effects.verdicts import planned_endpoints
from hierbench.layout import DEMO_FOLDER, LAYOUT_FINGERPRINT, SEALED_MANIFEST, TABLES, fill
from hierbench.protocol import EFFECTS_SUMMARY, PER_SEED_TABLE
from hierbench.provenance.artifacts import provenance_path

PER_SEED_FILE = f"{TABLES}/{PER_SEED_TABLE}.parquet"  # below the run folder
DEMO_CONTENT = "demo"  # a fingerprint record's params.content for a rendered dataset


@dataclass(frozen=True)
class PerSeedSource:
    """A per-seed table as read: the path named, the files read, the table, and the run folder
    they belong to (None when unknown)."""

    named: Path
    files: tuple[Path, ...]
    table: pd.DataFrame
    run: Path | None


def per_seed_files(run: Path) -> list[Path]:
    """Every dataset's per-seed table of a run folder (``<dataset>/tables/per_seed.parquet``), or
    the folder's own when it is one dataset's folder (``tables/per_seed.parquet``)."""
    found = sorted(run.glob(fill(PER_SEED_FILE, dataset="*")))
    own = run / fill(PER_SEED_FILE, dataset=".")
    return found or ([own] if own.is_file() else [])


def run_of_table(path: Path) -> Path | None:
    """The run folder a per-seed table lies in (``<run>/<dataset>/tables/per_seed.parquet``), or
    None when it lies elsewhere."""
    if path.name != Path(PER_SEED_FILE).name or path.parent.name != Path(TABLES).name:
        return None
    return path.parent.parent.parent


def read_run_or_table(path: Path, what: str) -> PerSeedSource:
    """Read a per-seed table (parquet or CSV) or a run folder's per-seed tables, combined; a
    missing path or a folder without them is an error naming ``what`` (the argument) and it."""
    if path.is_file():
        return PerSeedSource(path, (path,), read_per_seed(path), run_of_table(path))
    if not path.is_dir():
        raise FileNotFoundError(f"{what}: no such file or folder {path}")
    files = per_seed_files(path)
    if not files:
        raise EffectsError(
            f"{what}: {path} holds no {fill(PER_SEED_FILE, dataset='').lstrip('/')} in any "
            "dataset folder (a run folder whose tables stage has run) and is not a per-seed "
            "table file"
        )
    tables = [read_per_seed(file) for file in files]
    combined = validate_per_seed(pd.concat(tables, ignore_index=True), f"per-seed tables of {path}")
    return PerSeedSource(path, tuple(files), combined, run_of_table(files[0]))


def recorded_content(run: Path, dataset: str) -> str | None:
    """What the run recorded reading for a dataset (``demo`` or the real folder's content
    hash), from its layout fingerprint's provenance; None when there is no such record."""
    record = provenance_path(run / fill(LAYOUT_FINGERPRINT, dataset=dataset))
    if not record.is_file():
        return None
    try:
        content = json.loads(record.read_text(encoding="utf-8"))["params"]["content"]
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise EffectsError(f"{record}: not a provenance record with params.content") from error
    return str(content)


def is_demo_dataset(run: Path, dataset: str) -> bool:
    """Whether a run's dataset was the embedded demo: its recorded content, else a rendered
    ``<dataset>/demo/`` folder in the run."""
    content = recorded_content(run, dataset)
    if content is not None:
        return content == DEMO_CONTENT
    demo = run / fill(DEMO_FOLDER, dataset=dataset, layout="")
    return demo.is_dir()


def demo_datasets(source: PerSeedSource, datasets: Iterable[str]) -> list[str]:
    """The datasets among ``datasets`` that the source's run rendered from the embedded demo
    (none when the source lies in no run folder)."""
    if source.run is None:
        return []
    return [dataset for dataset in sorted(set(datasets)) if is_demo_dataset(source.run, dataset)]


EFFECTS_SUMMARY_FILE = f"{TABLES}/{EFFECTS_SUMMARY}.parquet"  # below the run folder
FINAL_TEST = ("final", "test")  # the sealed manifest's (split, role) of the test images


def sealed_test_hash(run: Path, dataset: str) -> str | None:
    """The SHA256 of a run's sealed test images of ``dataset`` (its sealed manifest's final test
    row), or None when the run holds no sealed manifest."""
    manifest = run / fill(SEALED_MANIFEST, dataset=dataset)
    if not manifest.is_file():
        return None
    rows = pd.read_parquet(manifest, columns=["split", "role", "sha256"])
    test = rows[(rows["split"] == FINAL_TEST[0]) & (rows["role"] == FINAL_TEST[1])]
    if len(test) != 1:
        raise EffectsError(f"{manifest}: expected one {FINAL_TEST} row, found {len(test)}")
    return str(test["sha256"].iloc[0])


def endpoint_image_variances(run: Path, dataset: str) -> dict[tuple[str, str], float]:
    """Each planned endpoint's test-image variance V of its seed mean, se² − s²/n of the run's
    effects summary (mAP at mean hierarchy); empty when the run has no such table."""
    summary_file = run / fill(EFFECTS_SUMMARY_FILE, dataset=dataset)
    if not summary_file.is_file():
        return {}
    rows = planned_endpoints(pd.read_parquet(summary_file))
    return {
        (dataset, str(row.effect)): shared_variance(row.se, row.sd, row.n)
        for row in rows.itertuples()
        if int(row.n) > 0 and np.isfinite(row.se) and np.isfinite(row.sd)
    }


def recorded_test_images(source: PerSeedSource, datasets: Iterable[str]) -> StudyImages:
    """What a source's run recorded of its test images for ``datasets``: their sealed hashes and
    the planned endpoints' test-image variances (nothing for a table outside a run)."""
    if source.run is None:
        return NOTHING_KNOWN
    hashes: dict[str, str] = {}
    variances: dict[tuple[str, str], float] = {}
    for dataset in sorted(set(datasets)):
        found = sealed_test_hash(source.run, dataset)
        if found is not None:
            hashes[dataset] = found
        variances.update(endpoint_image_variances(source.run, dataset))
    return StudyImages(hashes, variances)
