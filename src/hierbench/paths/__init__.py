"""Where every artifact of a run lives under a config: the patterns of :mod:`hierbench.layout`
expanded, each cell kind's instances and the concrete paths the config implies, for the rules to
wire. Free of torch: the workflow imports it whenever it plans a run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from hierbench.baselines import baselines_enabled
from hierbench.cellkinds import (
    SealedEvaluation,
    TrainingRule,
    cell_instances,
    evaluation_cells,
    locked_kinds,
)
from hierbench.cells.companion import companion_enabled
from hierbench.controls.curvature_points import control_variants
from hierbench.controls.outer import outer_splits
from hierbench.controls.semantic import semantic_arms, shuffle_settings
from hierbench.data.kinds import kind_of, layout_folder
from hierbench.factorial import factorial_geometries
from hierbench.layout import (
    ADDED_GEOMETRY,
    ADDED_LOSS,
    BUNDLE_CELLS_OF,
    BUNDLE_MANIFESTS,
    BUNDLED_KINDS,
    CELL_FILES,
    CONTROL_TABLES,
    DEMO_FOLDER,
    DEV_FEATURES,
    DEV_MANIFEST,
    DEV_SPLITS,
    EFFECTS_VERDICTS,
    FAIRNESS_AUDIT,
    OUTER_FOLDER,
    PCA_FILES,
    SEALED_FEATURES,
    SEALED_MANIFEST,
    SEALED_SPLITS,
    SEEDLESS_ARMS,
    SHUFFLED_TAXONOMY,
    TABLES,
    TAXONOMY,
    TRACKER_EXPORT,
    cell_folder,
    evaluation_files,
    evaluation_stem,
    fill,
)
from hierbench.paths.figure_files import FigurePaths
from hierbench.protocol import (
    BASELINES,
    COMPANION_ANGLE_TABLE,
    CURVATURE_CONTROL,
    CURVATURE_TABLES,
    EFFECT_TABLES,
    FACTORIAL_KIND,
    GEOMETRIES,
    LOSSES,
    OUTER_CONTROL,
    OUTER_TABLES,
    PAPER_TABLE_FORMATS,
    PAPER_TABLES,
    PER_SEED_TABLE,
    SEMANTIC_CONTROL,
    SEMANTIC_TABLES,
    SUMMARY_PAGE,
    TABLE_FORMATS,
)
from hierbench.protocol import (
    FIGURES as FIGURE_NAMES,
)
from hierbench.runs import run_folder
from hierbench.trackers import configured_tracker


def dataset_folder(config: Mapping[str, Any], dataset: str) -> str:
    """The folder a run reads a dataset from: its rendered demo inside the config's run folder,
    or the real folder the config names. Jobs read it from the config, not from an input or a
    param: a dataset enters the workflow through its content (``data.fingerprint``)."""
    block = config["datasets"][dataset]
    if block["source"] != "demo":
        return str(block["root"])
    demo = fill(DEMO_FOLDER, dataset=dataset, layout=layout_folder(config, dataset))
    return f"{run_folder(dict(config))}/{demo}"


def tuning_runs(
    config: Mapping[str, Any], geometries: Sequence[str] = GEOMETRIES
) -> list[dict[str, str]]:
    """Every temperature-tuning run of a dataset (the same in every dataset) on ``geometries``
    (the paper's; an added geometry tunes in a bundle of its own), geometry then τ, in the
    order the tuning bundle trains them and lists their score files."""
    return [
        {"geometry": geometry, "tau": f"{tau:g}"}
        for geometry in geometries
        for tau in config["tuning"]["taus"]
    ]


def bundle_cells(config: Mapping[str, Any], kind: str) -> dict[str, dict]:
    """The cells of one bundle of a bundled kind, by label (their wildcard values joined by
    underscores, ``E_R_42``): every paper cell of a dataset's factorial; an added loss's cell
    on every geometry, an added geometry's under the paper's losses, of every seed; a curvature
    point's or semantic arm's cell of each training seed (the bundle's own wildcards fill the
    rest)."""
    if kind not in BUNDLED_KINDS:
        raise KeyError(f"cells of kind {kind!r} are not bundled; bundled kinds: {BUNDLED_KINDS}")
    seeds = config["training"]["seeds"]
    if kind == FACTORIAL_KIND:  # the paper's cells; an added level is a bundle of its own
        paper = [c for c in cell_instances(config, "", kind) if c["loss"] in LOSSES]
        cells = [c for c in paper if c["geometry"] in GEOMETRIES]
    elif kind == ADDED_LOSS:  # on every geometry, the added ones too
        cells = [{"geometry": g, "seed": s} for g in factorial_geometries(config) for s in seeds]
    elif kind == ADDED_GEOMETRY:  # under the paper's losses (an added loss's bundle has the rest)
        cells = [{"loss": loss, "seed": s} for loss in LOSSES for s in seeds]
    else:
        cells = [{"seed": seed} for seed in seeds]
    return {"_".join(str(value) for value in values.values()): values for values in cells}


@dataclass(frozen=True)
class RunPaths(FigurePaths):
    """Every artifact path of one run: the patterns above under the run folder ``root``, and
    the lists of concrete paths the config implies."""

    root: str
    config: Mapping[str, Any]

    def at(self, pattern: str, **values: Any) -> str:
        """``pattern`` under the run folder, the named wildcards filled in."""
        return fill(f"{self.root}/{pattern}", **values)

    def cell_outputs(self, kind: str) -> dict[str, str]:
        """The three file patterns of a cell of ``kind``, by output name."""
        return {key: self.at(f"{cell_folder(kind)}/{name}") for key, name in CELL_FILES.items()}

    def training_outputs(self, trained: TrainingRule) -> dict[str, str]:
        """What one job of a training rule writes: a bundle's manifest and cells, or one
        cell's three files."""
        if trained.bundled:
            return self.bundle_outputs(trained.trains)
        return self.cell_outputs(trained.trains)

    def bundle_outputs(self, kind: str) -> dict[str, str]:
        """What one bundle job writes: its ``manifest``, then every file of its cells by output
        name ``<file>_<cell>`` (see :func:`bundle_cells`), the bundle's own wildcards (the
        dataset; a point or arm) left in."""
        folder = cell_folder(BUNDLE_CELLS_OF.get(kind, kind))
        return {"manifest": self.at(BUNDLE_MANIFESTS[kind])} | {
            f"{name}_{label}": self.at(f"{folder}/{file}", **values)
            for label, values in bundle_cells(self.config, kind).items()
            for name, file in CELL_FILES.items()
        }

    def evaluation_outputs(self, kind: str, ranking: str | None = None) -> dict[str, str]:
        """The two evaluation file patterns of a cell of ``kind`` (or a seedless arm)."""
        return evaluation_files(self.at(evaluation_stem(kind, ranking)))

    def sealed_evaluation(
        self, evaluated: SealedEvaluation, ranking: str | None = None
    ) -> tuple[dict[str, str], dict[str, str]]:
        """What one sealed-evaluation job scores besides the sealed test and the lock, and what
        it writes, by name: a seedless arm's files; or, for a cell kind, every cell of
        :func:`~hierbench.cellkinds.evaluation_cells` as ``<file>_<cell>`` (``model_E_R_42``,
        ``per_query_E_R_42``), the job's own wildcards (the dataset, a variant) left in."""
        if evaluated.name in SEEDLESS_ARMS:
            scored = {key: self.at(path) for key, path in evaluated.scored.items()}
            return scored, self.evaluation_outputs(evaluated.name, ranking)
        cells = evaluation_cells(self.config, evaluated.name)
        outputs = evaluation_files(evaluation_stem(evaluated.name, ranking))

        def each_cell(patterns: Mapping[str, str]) -> dict[str, str]:
            return {
                f"{name}_{label}": self.at(pattern, **values)
                for label, values in cells.items()
                for name, pattern in patterns.items()
            }

        return each_cell(evaluated.scored), each_cell(outputs)

    def cells(self, dataset: str, kinds: Sequence[str], name: str, **only: Any) -> list[str]:
        """The file ``name`` of every cell of ``kinds`` in a dataset (``only`` keeps the cells
        whose wildcards have those values, e.g. ``geometry="H"``)."""
        return [
            self.at(f"{cell_folder(kind)}/{name}", dataset=dataset, **values)
            for kind in kinds
            for values in cell_instances(self.config, dataset, kind)
            if all(values.get(key) == value for key, value in only.items())
        ]

    def lock_inputs(self, dataset: str) -> dict[str, list[str]]:
        """Everything the Final lock of a dataset records (and waits for), by input name."""
        pca = {key: [self.at(path, dataset=dataset)] for key, path in PCA_FILES.items()}
        if not baselines_enabled(self.config, dataset):
            pca = {"model": [], "record": []}
        kinds, at = locked_kinds(), partial(self.at, dataset=dataset)
        return {
            "checkpoints": self.cells(dataset, kinds, CELL_FILES["model"]) + pca["model"],
            "records": self.cells(dataset, kinds, CELL_FILES["record"]) + pca["record"],
            "audits": [at(FAIRNESS_AUDIT)],
            "taxonomy": [at(TAXONOMY)],
            "features": [at(DEV_FEATURES)],
            "splits": [at(path) for path in (DEV_SPLITS, DEV_MANIFEST, SEALED_MANIFEST)],
            "sealed": [at(path) for path in (SEALED_FEATURES, SEALED_SPLITS)],
        }

    def summaries(
        self,
        dataset: str,
        kinds: Sequence[str],
        ranking: str | None = None,
        file: str = "summary",
    ) -> list[str]:
        """The evaluation summary (or, with ``file="per_query"``, the per-query scores) of every
        cell of ``kinds`` (or seedless arm) in a dataset."""
        paths = []
        for kind in kinds:
            instances = (
                [{}] if kind in SEEDLESS_ARMS else cell_instances(self.config, dataset, kind)
            )
            stem = evaluation_stem(kind, ranking)
            paths += [
                evaluation_files(self.at(stem, dataset=dataset, **v))[file] for v in instances
            ]
        return paths

    def table_files(
        self, folder: str, names: Sequence[str], dataset: str = "{dataset}"
    ) -> list[str]:
        """Each table of ``names`` in every table format, in ``folder`` (a pattern)."""
        return [
            self.at(f"{folder}/{name}.{ext}", dataset=dataset)
            for name in names
            for ext in TABLE_FORMATS
        ]

    def effect_table_files(self, folder: str) -> list[str]:
        """Every file the effect-tables stage writes in ``folder`` (a pattern)."""
        files = self.table_files(folder, EFFECT_TABLES)
        files += [
            self.at(f"{folder}/{n}.{ext}") for n in PAPER_TABLES for ext in PAPER_TABLE_FORMATS
        ]
        return [*files, self.at(f"{folder}/{PER_SEED_TABLE}.parquet")]

    def control_outputs(
        self, control: str, tables: Sequence[str], dataset: str = "{dataset}"
    ) -> dict:
        """Every file a control's tables rule writes, by output name: per-seed rows, its
        table, its contrasts and its figure."""
        per_seed = [
            self.at(f"{CONTROL_TABLES}/{control}_{PER_SEED_TABLE}.parquet", dataset=dataset)
        ]
        table, contrasts = (self.table_files(CONTROL_TABLES, [name], dataset) for name in tables)
        figure = self.figure_files(control, dataset)
        return {"per_seed": per_seed, "table": table, "contrasts": contrasts, "figure": figure}

    def baselines_outputs(self, dataset: str = "{dataset}") -> dict:
        """Every file the baselines table writes, by output name."""
        per_seed = [self.at(f"{TABLES}/{BASELINES}_{PER_SEED_TABLE}.parquet", dataset=dataset)]
        table = self.table_files(TABLES, [BASELINES], dataset)
        differences = self.table_files(TABLES, [f"{BASELINES}_differences"], dataset)
        return {
            "per_seed": per_seed,
            "table": table,
            "differences": differences,
            "figure": self.figure_files(BASELINES, dataset),
        }

    def outer_outputs(self, dataset: str = "{dataset}") -> dict:
        """Every file the outer-splits tables write, by output name: apart from tables/ and
        figures/, which derive from the sealed evaluation and move into the archive at a
        re-seal."""
        per_split = [self.at(f"{OUTER_FOLDER}/{OUTER_CONTROL}_per_split.parquet", dataset=dataset)]
        table, gains = (self.table_files(OUTER_FOLDER, [name], dataset) for name in OUTER_TABLES)
        figure = self.figure_files(OUTER_CONTROL, dataset, folder=OUTER_FOLDER)
        return {"per_split": per_split, "table": table, "gains": gains, "figure": figure}

    def companion_angle_outputs(self, dataset: str = "{dataset}") -> dict:
        """Every file the companion ranking table writes, by output name."""
        name = COMPANION_ANGLE_TABLE
        per_seed = [self.at(f"{TABLES}/{name}_{PER_SEED_TABLE}.parquet", dataset=dataset)]
        return {"per_seed": per_seed, "table": self.table_files(TABLES, [name], dataset)}

    def companion_angle_table(self, dataset: str) -> list[str]:
        """The companion ranking table's parquet file, which ``summary.md`` shows, or none when
        the companion cells do not run."""
        if not companion_enabled(self.config):
            return []
        tables = self.companion_angle_outputs(dataset)["table"]
        return [path for path in tables if path.endswith(".parquet")]

    def final_targets(self, datasets: Sequence[str]) -> list[str]:
        """What a run makes for each enabled dataset: its summary page and figures, the
        shuffled taxonomies (NABirds kind, or any with the semantic control: one per fixed-point
        setting the config names), and every control's and baseline's files that the
        config switches on."""
        targets = []
        for dataset in datasets:
            targets.append(self.at(f"{TABLES}/{SUMMARY_PAGE}", dataset=dataset))
            targets += [path for name in FIGURE_NAMES for path in self.figure_files(name, dataset)]
            targets.append(self.at(EFFECTS_VERDICTS, dataset=dataset))
            targets += self.curves_files(dataset)
            targets += [path for paths in self.picture_files(dataset).values() for path in paths]
            if kind_of(self.config, dataset).always_shuffled or semantic_arms(self.config, dataset):
                targets += [
                    self.at(SHUFFLED_TAXONOMY, dataset=dataset, fixed=fixed)
                    for fixed in shuffle_settings(self.config, dataset)
                ]
            parts = self._switched_on_outputs(dataset)
            targets += [path for outputs in parts for paths in outputs.values() for path in paths]
            targets += self.tracker_exports(dataset)
        return targets

    def _switched_on_outputs(self, dataset: str) -> list[dict[str, list[str]]]:
        """The files of every control, baseline and companion table the config switches on
        for a dataset, each rule's by output name."""
        parts: list[dict[str, list[str]]] = []
        if control_variants(self.config, dataset):
            parts.append(self.control_outputs(CURVATURE_CONTROL, CURVATURE_TABLES, dataset))
        if semantic_arms(self.config, dataset):
            parts.append(self.control_outputs(SEMANTIC_CONTROL, SEMANTIC_TABLES, dataset))
        if baselines_enabled(self.config, dataset):
            parts.append(self.baselines_outputs(dataset))
        if outer_splits(self.config, dataset):
            parts.append(self.outer_outputs(dataset))
        if companion_enabled(self.config):
            parts.append(self.companion_angle_outputs(dataset))
        return parts

    def result_tables(self, dataset: str) -> list[str]:
        """Every per-seed results table of a dataset (a row per arm, seed, level and metric,
        from the sealed evaluations): the effect tables' and each switched-on control's,
        baseline's and companion table's (the outer splits': per split)."""
        tables = [self.at(f"{TABLES}/{PER_SEED_TABLE}.parquet", dataset=dataset)]
        for outputs in self._switched_on_outputs(dataset):
            tables += outputs.get("per_seed", []) + outputs.get("per_split", [])
        return tables

    def tracker_exports(self, dataset: str) -> list[str]:
        """The tracker export folder of a dataset, or none when the config's ``tracker`` is
        off."""
        tracker = configured_tracker(self.config)
        return (
            [] if tracker is None else [self.at(TRACKER_EXPORT, dataset=dataset, tracker=tracker)]
        )
