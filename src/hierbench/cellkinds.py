"""The kinds of trained cell, one object each: where a kind's cells live, which cells a config
implies, whether they train in bundles (their manifests' patterns in :mod:`hierbench.layout`),
whether the Final lock and the fairness audit cover
them, and the rules that train and score them.

A new kind is one :class:`CellKind` in :data:`CELL_KINDS` (its folder pattern in
:mod:`hierbench.layout`); the workflow, the lock, the audit and the path lists read it from here.
Free of torch: the workflow imports it whenever it plans a run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from hierbench.baselines import baselines_enabled
from hierbench.cells.companion import companion_enabled
from hierbench.controls.curvature_points import control_variants, point_geometry
from hierbench.controls.outer import outer_arms, outer_seeds, outer_splits
from hierbench.controls.semantic import semantic_arms
from hierbench.factorial import factorial_geometries, factorial_losses
from hierbench.layout import (
    ADDED_GEOMETRY,
    ADDED_LOSS,
    BUNDLE_CELLS_OF,
    BUNDLE_MANIFESTS,
    CELL_FILES,
    CELLS,
    PCA_FILES,
    cell_folder,
)
from hierbench.protocol import (
    ARM_ORDER,
    BASELINES,
    COMPANION_CELLS,
    COMPANION_KIND,
    COMPANION_LOSS,
    CURVATURE_CONTROL,
    FACTORIAL_KIND,
    FROZEN,
    HIER,
    OUTER_CONTROL,
    PCA,
    SEMANTIC_CONTROL,
)

Config = Mapping[str, Any]
Instances = Callable[[Config, str], Iterator[dict]]


@dataclass(frozen=True)
class CellKind:
    """One kind of trained cell. ``instances(config, dataset)`` yields the wildcard values of
    every cell of the kind the config implies, in the order the rules list them; the rules that
    train it are in :data:`TRAINING_RULES`."""

    name: str
    instances: Instances
    evaluation_rule: str | None  # scored on the sealed test by this rule; None: not sealed
    locked: bool  # recorded by the Final lock
    audited: bool  # checked by the fairness audit
    variant: str | None = None  # the wildcard naming its evaluation's variant, if any
    # The wildcards that vary among the cells one sealed-evaluation job scores; the others
    # (the dataset, a variant) are the job's own. One job per bundle, not per cell: a job's
    # fixed cost (Snakemake, the interpreter, torch's import) dwarfs scoring one small cell.
    together: tuple[str, ...] = ("seed",)

    @property
    def folder(self) -> str:
        """The folder pattern of one cell, below ``<dataset>/cells/``."""
        return CELLS[self.name]

    @property
    def bundled(self) -> bool:
        """Whether its cells train in bundles (:mod:`hierbench.training.bundle`), not alone."""
        return self.name in BUNDLE_MANIFESTS


def _seeds(config: Config) -> list[int]:
    return list(config["training"]["seeds"])


def _factorial_instances(config: Config, dataset: str) -> Iterator[dict]:
    """Every cell of the factorial: each geometry × loss × seed."""
    geometries, losses = factorial_geometries(config), factorial_losses(config)
    seeds = _seeds(config)
    yield from (
        {"geometry": g, "loss": x, "seed": s} for g in geometries for x in losses for s in seeds
    )


def _curvature_instances(config: Config, dataset: str) -> Iterator[dict]:
    """Every cell of the curvature control: each point's cell of every seed."""
    for point in control_variants(config, dataset):
        yield from (
            {"point": point, "geometry": point_geometry(point), "seed": s} for s in _seeds(config)
        )


def _semantic_instances(config: Config, dataset: str) -> Iterator[dict]:
    """Every cell of the semantic control: each arm's cell of every seed."""
    yield from (
        {"arm": arm, "seed": s} for arm in semantic_arms(config, dataset) for s in _seeds(config)
    )


def _hier_instances(config: Config, dataset: str) -> Iterator[dict]:
    """The HIER-style baseline's cell of every seed, when the baselines are on."""
    yield from ({"seed": s} for s in _seeds(config) if baselines_enabled(config, dataset))


def _companion_instances(config: Config, dataset: str) -> Iterator[dict]:
    """The companion method's cells (E_A, L_A) of every seed, when the companion is on."""
    heads = [head for head, _ in COMPANION_CELLS] if companion_enabled(config) else []
    yield from ({"head": head, "seed": s} for head in heads for s in _seeds(config))


def _outer_instances(config: Config, dataset: str) -> Iterator[dict]:
    """Every outer split's cells: each arm at the outer seeds."""
    cells = [
        (g, x, s) for g, x in outer_arms(config, dataset) for s in outer_seeds(config, dataset)
    ]
    for split in outer_splits(config, dataset):
        yield from ({"outer": split, "geometry": g, "loss": x, "seed": s} for g, x, s in cells)


CELL_KINDS: dict[str, CellKind] = {
    kind.name: kind
    for kind in (
        CellKind(
            FACTORIAL_KIND,
            _factorial_instances,
            evaluation_rule="evaluate_cell",
            locked=True,
            audited=True,
            together=("geometry", "loss", "seed"),
        ),
        CellKind(
            CURVATURE_CONTROL,
            _curvature_instances,
            evaluation_rule="evaluate_curvature_cell",
            locked=True,
            audited=True,
            variant="point",
        ),
        CellKind(
            SEMANTIC_CONTROL,
            _semantic_instances,
            evaluation_rule="evaluate_semantic_cell",
            locked=True,
            audited=False,
            variant="arm",
        ),
        CellKind(
            HIER,
            _hier_instances,
            evaluation_rule="evaluate_hier_cell",
            locked=True,
            audited=True,
        ),
        CellKind(
            OUTER_CONTROL,
            _outer_instances,
            evaluation_rule=None,  # an outer split's test side is development data
            locked=False,
            audited=False,
        ),
        CellKind(
            COMPANION_KIND,
            _companion_instances,
            evaluation_rule="evaluate_companion_cell",
            locked=True,
            audited=True,
            together=("head", "seed"),
        ),
    )
}


@dataclass(frozen=True)
class TrainingRule:
    """One rule of the training family: the cells it writes (a bundle kind of
    :data:`~hierbench.layout.BUNDLE_MANIFESTS`, one job per bundle, or a kind trained a cell
    per job), the stage and script that train them, the workflow's input groups it reads
    besides the development data, and what its cells' config holds besides the training keys."""

    rule: str
    trains: str
    stage: str
    script: str
    reads: tuple[str, ...] = ("data",)  # input groups the workflow names (rules/training.smk)
    controls: tuple[str, ...] = ()  # the dataset's control blocks its cells read
    blocks: tuple[str, ...] = ()  # top-level config blocks its cells read
    plugins: tuple[str, ...] = ()  # plugin kinds whose files join its code hash and config
    added: str | None = None  # the wildcard its rule limits to the config's added levels
    params: tuple[str, ...] = ()  # what else its script is told: kind, cells, epochs

    @property
    def cell_kind(self) -> str:
        """The kind of the cells it writes (an added loss's bundle holds factorial cells)."""
        return BUNDLE_CELLS_OF.get(self.trains, self.trains)

    @property
    def bundled(self) -> bool:
        """Whether one job trains a bundle of cells (its manifest lists them)."""
        return self.trains in BUNDLE_MANIFESTS


_BUNDLE = ("kind", "cells")  # what the bundle trainer is told: the bundle's kind and cells
_PLAIN_BUNDLE = {"stage": "stages.training", "script": "train_bundle"}
# The training family in rule order; rules/training.smk generates one rule from each.
TRAINING_RULES: tuple[TrainingRule, ...] = (
    TrainingRule(
        "train_factorial",
        FACTORIAL_KIND,
        **_PLAIN_BUNDLE,
        reads=("data", "selection"),
        params=_BUNDLE,
    ),
    TrainingRule(
        "train_added_loss",
        ADDED_LOSS,
        **_PLAIN_BUNDLE,
        reads=("data", "selection"),
        plugins=("objectives", "geometries"),  # its bundle holds its cells on added geometries
        added="loss",
        params=_BUNDLE,
    ),
    TrainingRule(
        "train_added_geometry",
        ADDED_GEOMETRY,
        **_PLAIN_BUNDLE,
        reads=("data", "selection"),
        plugins=("geometries",),
        added="geometry",
        params=_BUNDLE,
    ),
    TrainingRule(
        "train_curvature", CURVATURE_CONTROL, **_PLAIN_BUNDLE, params=(*_BUNDLE, "epochs")
    ),
    TrainingRule(
        "train_semantic",
        SEMANTIC_CONTROL,
        "stages.semantic",
        "train_semantic_bundle",
        reads=("data", "taxonomies", "duration"),
        controls=(SEMANTIC_CONTROL,),
        params=("cells",),
    ),
    TrainingRule("train_hier_cell", HIER, "stages.hier", "train_hier_cell", controls=(BASELINES,)),
    TrainingRule(
        "train_outer",
        OUTER_CONTROL,
        "stages.outer_training",
        "train_outer_cell",
        reads=("data", "selection", "durations"),
        controls=(OUTER_CONTROL,),
    ),
    TrainingRule(
        "train_companion_cell",
        COMPANION_KIND,
        "stages.companion",
        "train_companion_cell",
        reads=("data", "crops"),  # the crops' features where its pairs need them
        blocks=("companion",),  # the config's companion block
    ),
)


def training_rules() -> tuple[TrainingRule, ...]:
    """Every rule of the training family, in the order the workflow generates them."""
    return TRAINING_RULES


def cell_kind(name: str) -> CellKind:
    """The registered kind ``name``; a KeyError naming the known kinds otherwise."""
    if name not in CELL_KINDS:
        raise KeyError(f"no cell kind {name!r}; known kinds: {sorted(CELL_KINDS)}")
    return CELL_KINDS[name]


def locked_kinds() -> tuple[str, ...]:
    """The kinds whose cells the Final lock records, in registry order."""
    return tuple(name for name, kind in CELL_KINDS.items() if kind.locked)


def audited_kinds() -> tuple[str, ...]:
    """The kinds whose cells the fairness audit checks, in registry order."""
    return tuple(name for name, kind in CELL_KINDS.items() if kind.audited)


def cell_instances(config: Config, dataset: str, kind: str) -> Iterator[dict]:
    """The wildcard values of every cell of ``kind`` a dataset trains under ``config``."""
    return cell_kind(kind).instances(config, dataset)


def evaluation_cells(config: Config, kind: str) -> dict[str, dict]:
    """The cells one sealed-evaluation job of ``kind`` scores, by label (their ``together``
    values joined by underscores, ``E_R_42``), in rule order: the same in every dataset, as a
    rule's outputs must be (empty when no dataset trains the kind)."""
    together, cells = cell_kind(kind).together, {}
    for dataset in config["datasets"]:
        for values in cell_instances(config, dataset, kind):
            member = {key: values[key] for key in together}
            cells.setdefault("_".join(str(value) for value in member.values()), member)
    return cells


@dataclass(frozen=True)
class SealedEvaluation:
    """One rule of the sealed-evaluation family: what it scores (a cell kind, or a seedless
    arm), the files it reads besides the sealed test (names -> patterns below the run folder)
    and the wildcard naming its variant."""

    name: str
    rule: str
    scored: dict[str, str]
    variant: str | None = None


# The arms scored without a trained cell: the frozen features, and their PCA projection.
SEEDLESS_EVALUATIONS = (
    SealedEvaluation(FROZEN, "evaluate_frozen", {}),
    SealedEvaluation(PCA, "evaluate_pca", {"projection": PCA_FILES["model"]}),
)


def sealed_evaluations() -> list[SealedEvaluation]:
    """Every rule of the sealed-evaluation family: each locked kind's (its cell's model and
    record), then each seedless arm's; the workflow generates them in this order."""
    cells = [
        SealedEvaluation(
            name,
            kind.evaluation_rule,
            {key: f"{cell_folder(name)}/{CELL_FILES[key]}" for key in ("model", "record")},
            kind.variant,
        )
        for name, kind in CELL_KINDS.items()
        if kind.evaluation_rule
    ]
    return [*cells, *SEEDLESS_EVALUATIONS]


def sealed_evaluation(name: str) -> SealedEvaluation:
    """The sealed evaluation of the kind or seedless arm ``name``."""
    found = [evaluated for evaluated in sealed_evaluations() if evaluated.name == name]
    if not found:
        raise KeyError(
            f"no sealed evaluation of {name!r}; known: {[e.name for e in sealed_evaluations()]}"
        )
    return found[0]


@dataclass(frozen=True)
class PictureCell:
    """One arm the retrieval galleries and embedding views draw (issue #63): its name, the
    kind of its cell and the cell's wildcard values, or no kind for the frozen features."""

    arm: str
    kind: str | None
    values: dict


# The kinds whose arms get pictures, besides the frozen features (a kind a dataset does not
# train has none): the factorial's paper arms, the companion method's, the HIER-style cell.
PICTURE_KINDS = (FACTORIAL_KIND, COMPANION_KIND, HIER)


def _picture_arm(kind: str, values: Mapping[str, Any]) -> str | None:
    """The arm a cell stands for in the pictures (``E_R``, ``L_A``, ``hier``), or None for a
    cell they do not draw (an added loss's or geometry's)."""
    if kind == HIER:
        return HIER
    arm = f"{values.get('geometry', values.get('head'))}_{values.get('loss', COMPANION_LOSS)}"
    return arm if arm in ARM_ORDER else None


def picture_arms(config: Config, dataset: str) -> list[PictureCell]:
    """Every arm a dataset's pictures draw, each a cell of the first training seed, in the
    study's arm order (``ARM_ORDER``), the HIER-style cell last."""
    cells, first = [PictureCell(FROZEN, None, {})], _seeds(config)[0]
    for kind in PICTURE_KINDS:
        for values in cell_instances(config, dataset, kind):
            arm = _picture_arm(kind, values)
            if arm is not None and values["seed"] == first:
                cells.append(PictureCell(arm, kind, dict(values)))
    order = [*ARM_ORDER, HIER]
    return sorted(cells, key=lambda cell: order.index(cell.arm))
