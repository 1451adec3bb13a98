"""Effect-tables stage: per-seed rows, mean ± SD per arm, simple effects, renderings.

The query/gallery perturbations are averaged within each training seed; the seeds are the
statistical units. The main tables use the dataset's registered aggregation (CUB query-micro,
NABirds group-macro, a table dataset its own); the other one is the sensitivity analysis (in
``sensitivity/``). ``summary.md`` holds the paper's layout of the main results. Tables take
the metrics they are given (:func:`hierbench.effects.plan_effects`): the pipeline's tables hold
them all, a table published elsewhere gets the paper tables its metrics support.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from hierbench.cells.cell_folders import cell_key
from hierbench.effects import (
    EFFECT_DEFINITIONS,
    PER_SEED_KEYS,
    EffectsError,
    EffectsPlan,
    per_seed_from_evaluations,
    plan_effects,
    read_per_seed,
    render_markdown,
)
from hierbench.effects.failed_seeds import (
    FailureRule,
    both_estimands,
    failed_cells,
    failed_seed_lines,
)
from hierbench.effects.formulas import effect_definition
from hierbench.effects.intervals import IntervalSettings
from hierbench.effects.noise_regimes import noise_regimes
from hierbench.effects.null_results import null_lines
from hierbench.effects.query_intervals import query_noise_table
from hierbench.effects.table_files import write_renderings
from hierbench.effects.verdicts import (
    ENDPOINT_METRIC,
    design_limits,
    endpoints_table,
    exploratory_lines,
    planned_endpoints,
    regime_lines,
    undefined_levels,
)
from hierbench.levelnames import LEVELS_METADATA, for_readers, legend_line, level_labels
from hierbench.protocol import (
    AGGREGATION_LABELS,
    EFFECT_TABLES,
    FACTORIAL_ARMS,
    FACTORIAL_EFFECTS,
    FROZEN,
    MEAN_HIERARCHY,
    PER_SEED_TABLE,
    SENSITIVITY_FOLDER,
    SUMMARY_PAGE,
    TABLE_ARMS_MAP,
    TABLE_EFFECTS_MAP,
    TABLE_EFFECTS_OT,
    TABLE_OT,
    TABLE_RECALL,
    sensitivity_aggregation,
)
from hierbench.provenance.artifacts import write_parquet, write_text
from hierbench.provenance.records import JobContext

log = logging.getLogger(__name__)

# The sections of summary.md: a paper table each, in this order, under this heading.
SUMMARY_SECTIONS: dict[str, str] = {
    TABLE_ARMS_MAP: "mAP per arm and level",
    TABLE_EFFECTS_MAP: "Simple effects on mean hierarchy mAP",
    TABLE_RECALL: "Recall@K per arm and level",
    TABLE_OT: (
        "Our OT scores per arm, adaptations of the companion method's score to relation levels "
        "(lower is better; level all, whole relation mix: ot@K against the ideal top K, every "
        "query; ot_tree@K and ot_tree@tree against the relation mix of the query's taxonomy "
        "tree, the queries that have one)"
    ),
    TABLE_EFFECTS_OT: (
        "Simple effects on our OT scores, ot@K and ot_tree (lower is better: a negative effect "
        "moves the top K closer to the reference mix of relations; positive seeds are seeds "
        "where the score grew)"
    ),
}


# The section that shows the companion cells ranked both ways (``companion_angle``).
COMPANION_RANKING_HEADING = (
    "The companion cells ranked both ways: by their head's distance (as every arm above) and by "
    "the exterior angle at the query (our reading of the method's undefined angle score), with "
    "the paired difference"
)


def summary_markdown(
    dataset: str,
    plan: EffectsPlan,
    aggregation: str,
    labels: dict[str, str] | None = None,
    companion_angle: pd.DataFrame | None = None,
    margin: float | None = None,
    regimes: pd.DataFrame | None = None,
    failures: list[str] | None = None,
) -> str:
    """The paper's tables for one dataset that its metrics support, as Markdown, headed by the
    aggregation they use (the dataset's registered one) and the dataset's level names, led by
    the planned endpoints (:mod:`hierbench.effects.verdicts`) and then the exploratory ones;
    the companion cells' ranking table after the mAP per arm when given."""
    labels = labels or level_labels(None)
    label = AGGREGATION_LABELS[aggregation]
    sensitivity = AGGREGATION_LABELS[sensitivity_aggregation(aggregation)]
    level = plan.settings.level
    parts = [
        f"# {dataset}: results ({label}, mean ± SD over training seeds)",
        "",
        f"{legend_line(labels)} The {sensitivity} sensitivity tables are in "
        f"`{SENSITIVITY_FOLDER}/`.",
        "",
        "## Planned endpoints: the five simple effects on mean hierarchy mAP",
        "",
        render_markdown(endpoints_table(plan.summary, level, margin)),
        *undefined_levels(plan.arms, labels),
        *null_lines(planned_endpoints(plan.summary), level, margin),
        *regime_lines(regimes if regimes is not None else pd.DataFrame()),
        *design_limits(plan.summary, level),
        "",
        plan.uncertainty[0].upper() + plan.uncertainty[1:] + ".",
        "",
        *(failures or []),
        "## Exploratory: every other effect on mAP",
        "",
        *exploratory_lines(plan.summary, level, labels),
        "",
    ]
    for name, heading in SUMMARY_SECTIONS.items():
        if name in plan.paper:
            parts += [f"## {heading}", "", render_markdown(for_readers(plan.paper[name], labels))]
        if name == TABLE_ARMS_MAP and companion_angle is not None:
            shown = for_readers(companion_angle, labels)
            parts += [f"## {COMPANION_RANKING_HEADING}", "", render_markdown(shown)]
    return "\n".join(parts)


def write_effects(
    per_seed: pd.DataFrame | str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    job: JobContext,
) -> dict[str, Path]:
    """Re-aggregate a per-seed table into arm and effect tables (parquet, md, tex, csv).

    Writes ``arms_summary``, ``effects_by_seed`` and ``effects_summary`` as .parquet, .md,
    .tex and .csv, plus, as .md and .tex, the paper tables its metrics support:
    ``table_arms_map`` and ``table_effects_map`` (mean hierarchy mAP; derived from middle and
    high when absent), ``table_recall``, ``table_ot`` and ``table_effects_ot``. Returns the
    paths keyed by file name; :func:`write_plan` takes a plan and says what was left out.
    """
    frame = per_seed if isinstance(per_seed, pd.DataFrame) else read_per_seed(per_seed)
    return write_plan(plan_effects(frame), out_dir, job)


def write_plan(
    plan: EffectsPlan,
    out_dir: str | os.PathLike[str],
    job: JobContext,
    *,
    complete: bool = False,
    labels: dict[str, str] | None = None,
) -> dict[str, Path]:
    """Write the tables of a plan, renderings with the level names of ``labels``; with
    ``complete``, every paper table must be in it."""
    if complete and plan.skipped:
        raise EffectsError(
            "per-seed table lacks metrics of paper tables: " + "; ".join(plan.notes())
        )
    for note in plan.notes():
        log.info("%s", note)
    out = Path(out_dir)
    facts = {"datasets": sorted(set(plan.per_seed["dataset"].tolist()))}
    tables = dict(zip(EFFECT_TABLES, (plan.arms, plan.by_seed, plan.summary), strict=True))
    paths: list[Path] = []
    for name, table in tables.items():
        metadata = {"table": name, "sd": "sample, ddof=1, over seeds"}
        metadata["interval_settings"] = plan.settings.metadata()
        if table is not plan.arms:
            added = sorted(set(plan.summary["effect"]) - set(EFFECT_DEFINITIONS))
            metadata["effects"] = EFFECT_DEFINITIONS | {e: effect_definition(e) for e in added}
        if plan.derived:
            metadata["derived"] = list(plan.derived)
        if table is plan.summary:
            metadata["intervals"] = plan.uncertainty
        if labels:
            metadata[LEVELS_METADATA] = labels
        target = out / f"{name}.parquet"
        paths.append(write_parquet(table, target, job, sort_by=(), metadata=metadata, facts=facts))
        paths.extend(write_renderings(table, out / name, job, labels=labels))
    for name, table in plan.paper.items():
        paths.extend(write_renderings(table, out / name, job, csv=False, labels=labels))
    return {path.name: path for path in paths}


def read_per_query(paths: list[str | Path]) -> pd.DataFrame:
    """The trained cells' per-query scores (the frozen features' left out: no effect reads
    them), one frame."""
    frames = [pd.read_parquet(path) for path in paths]
    frame = pd.concat(frames, ignore_index=True)
    return frame[frame["arm"] != FROZEN].reset_index(drop=True)


def _write_aggregation(
    frames: pd.DataFrame,
    aggregation: str,
    target: Path,
    job: JobContext,
    labels: dict[str, str],
    intervals: IntervalSettings,
    per_query: pd.DataFrame | None,
) -> tuple[pd.DataFrame, EffectsPlan]:
    """The per-seed table and every effect table of one aggregation, written under ``target``
    (intervals with the test images' share from ``per_query`` rows when given)."""
    per_seed = per_seed_from_evaluations(frames, aggregation)
    write_parquet(
        per_seed,
        target / f"{PER_SEED_TABLE}.parquet",
        job,
        sort_by=list(PER_SEED_KEYS),
        metadata={LEVELS_METADATA: labels},
    )
    noise = None if per_query is None else query_noise_table(per_query, aggregation, intervals)
    plan = plan_effects(per_seed, intervals, noise)
    write_plan(plan, target, job, complete=True, labels=labels)
    return per_seed, plan


def endpoint_regimes(per_query: pd.DataFrame | None, plan: EffectsPlan) -> pd.DataFrame | None:
    """The regimes the planned endpoints' data show (a few test images carrying an effect, an
    outlying seed), from the cells' per-query rows; None without them."""
    if per_query is None:
        return None
    trained = per_query[per_query["arm"].isin(FACTORIAL_ARMS)]
    return noise_regimes(
        trained,
        plan.by_seed,
        effects=FACTORIAL_EFFECTS,
        levels=[MEAN_HIERARCHY],
        metrics=[ENDPOINT_METRIC],
    )


def failure_section(logs: list[str | Path], plan: EffectsPlan, rule: FailureRule) -> list[str]:
    """summary.md's section on failed seeds (:mod:`hierbench.effects.failed_seeds`): the rule,
    the seeds it names and, where one enters a planned endpoint, both estimands."""
    frames = {cell_key(path): pd.read_parquet(path) for path in logs}
    rows = plan.per_seed
    failed = failed_cells(frames, rows, rule)
    for row in failed.itertuples():
        log.warning("failed seed: %s seed %d: %s", row.arm, row.seed, row.reason)
    estimands = both_estimands(plan.summary, plan.by_seed, failed, plan.settings)
    cells = len(frames) or int(rows[rows["level"] == MEAN_HIERARCHY].pipe(_factorial_cells))
    return failed_seed_lines(failed, estimands, rule, cells, plan.settings.level)


def _factorial_cells(rows: pd.DataFrame) -> int:
    """How many factorial (arm, seed) cells a per-seed table holds."""
    arms = rows["geometry"].astype(str) + "_" + rows["loss"].astype(str)
    return int(
        rows[arms.isin(FACTORIAL_ARMS)][["geometry", "loss", "seed"]].drop_duplicates().shape[0]
    )


def build_tables(
    dataset: str,
    summaries: list[str | Path],
    out_dir: str | Path,
    job: JobContext,
    *,
    aggregation: str,
    levels: tuple[str, str, str] | None = None,
    intervals: Mapping[str, Any] | None = None,
    per_query: list[str | Path] | None = None,
    companion_angle: list[str | Path] | None = None,
    margin: float | None = None,
    logs: list[str | Path] | None = None,
    failed_seeds: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Aggregate a dataset's evaluation summaries into every table of the study: the main
    tables under its registered ``aggregation``, the other one's in ``sensitivity/``; what a
    person reads names the levels as ``levels`` (leaf, middle, high) do; the effects'
    uncertainty as the config's ``effects.intervals`` asks, with the test images' share from
    the cells' ``per_query`` scores when given. ``companion_angle`` (none or one parquet file,
    the companion ranking table) joins ``summary.md`` beside the mAP per arm; ``margin`` (the
    config's ``effects.equivalence_margin``) tests the null planned endpoints against it;
    ``logs`` (the factorial cells' train logs) and ``failed_seeds`` (the config's rule) name
    the seeds whose training failed, with the endpoints over the seeds that trained."""
    if companion_angle and len(companion_angle) != 1:
        raise EffectsError(f"summary.md shows one companion ranking table, got {companion_angle}")
    out = Path(out_dir)
    labels = level_labels(levels)
    settings = IntervalSettings.from_config({"effects": {"intervals": dict(intervals or {})}})
    frames = pd.concat([pd.read_parquet(path) for path in summaries], ignore_index=True)
    scores = read_per_query(per_query) if per_query else None
    per_seed, plan = _write_aggregation(frames, aggregation, out, job, labels, settings, scores)
    other = sensitivity_aggregation(aggregation)
    _write_aggregation(frames, other, out / SENSITIVITY_FOLDER, job, labels, settings, scores)
    ranking = pd.read_parquet(companion_angle[0]) if companion_angle else None
    regimes = endpoint_regimes(scores, plan)
    failures = failure_section(logs or [], plan, FailureRule.from_config(failed_seeds))
    page = summary_markdown(dataset, plan, aggregation, labels, ranking, margin, regimes, failures)
    write_text(page, out / SUMMARY_PAGE, job)
    log.info(
        "%s tables (%s; %s in %s/) written to %s",
        dataset,
        aggregation,
        other,
        SENSITIVITY_FOLDER,
        out,
    )
    return per_seed
