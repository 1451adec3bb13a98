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
from hierbench.layout import BUNDLE_MANIFESTS, CELL_FILES, CELLS, PCA_FILES, cell_folder
from hierbench.protocol import (
    COMPANION_CELLS,
    COMPANION_KIND,
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
    every cell of the kind the config implies, in the order the rules list them."""

    name: str
    instances: Instances
    training_rule: str
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
            training_rule="train_factorial",
            evaluation_rule="evaluate_cell",
            locked=True,
            audited=True,
            together=("geometry", "loss", "seed"),
        ),
        CellKind(
            CURVATURE_CONTROL,
            _curvature_instances,
            training_rule="train_curvature",
            evaluation_rule="evaluate_curvature_cell",
            locked=True,
            audited=True,
            variant="point",
        ),
        CellKind(
            SEMANTIC_CONTROL,
            _semantic_instances,
            training_rule="train_semantic",
            evaluation_rule="evaluate_semantic_cell",
            locked=True,
            audited=False,
            variant="arm",
        ),
        CellKind(
            HIER,
            _hier_instances,
            training_rule="train_hier_cell",
            evaluation_rule="evaluate_hier_cell",
            locked=True,
            audited=True,
        ),
        CellKind(
            OUTER_CONTROL,
            _outer_instances,
            training_rule="train_outer",
            evaluation_rule=None,  # an outer split's test side is development data
            locked=False,
            audited=False,
        ),
        CellKind(
            COMPANION_KIND,
            _companion_instances,
            training_rule="train_companion_cell",
            evaluation_rule="evaluate_companion_cell",
            locked=True,
            audited=True,
            together=("head", "seed"),
        ),
    )
}


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
