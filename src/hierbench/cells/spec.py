"""A cell's identity: the spec that defines one training run, built from the resolved config.

Plain data with no torch: the workflow's rules read specs when it plans the run, and only the
jobs that train or load a cell need the head (``hierbench.cells.checkpoints``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from hierbench.factorial import geometry_reference, is_added_geometry, is_added_loss
from hierbench.protocol import (
    COMPANION_LOSS,
    CURVATURE_CONTROL,
    EUCLIDEAN,
    GEOMETRIES,
    HIER,
    LORENTZ,
    LOSSES,
    POINCARE,
    SUPCON,
    TRAIN_DISTANCE_CLIP,
    cell_name,
)

# Why the angle-entailment loss (A) refuses the unit-sphere Euclidean head.
SPHERE_SYMMETRY = (
    "the angle-entailment loss (A) needs the Euclidean head unnormalised (normalise=False): on "
    "the unit sphere the exterior angle is symmetric, ext(x, y) = ext(y, x) = "
    "arccos(-||x - y||/2), so the parent -> child term (pi - ext)/tau and the child -> parent "
    "term ext/tau pull every pair in opposite directions and cancel, and the radial freedom the "
    "angle loss orders parents and children by is gone"
)


@dataclass(frozen=True)
class CellSpec:
    """Everything that defines one training run (a factorial cell or a tuning run)."""

    dataset: str
    geometry: str  # "E" Euclidean, "H" Poincaré, or "L" Lorentz (companion cells)
    loss: str  # "R" regression, "S" Taxonomy-SupCon, "A" angle entailment, "hier" (baseline)
    seed: int
    epochs: int
    batch_size: int
    lr: float
    weight_decay: float
    grad_clip: float
    hidden_dim: int
    embedding_dim: int
    dropout: float
    curvature: float | None = None
    radius: float | None = None
    tau: float | None = None
    regression_targets: dict[str, float] = field(
        default_factory=lambda: {"c": 0.2, "m": 0.5, "h": 0.8, "o": 1.0}
    )
    supcon_weights: tuple[float, float, float] = (1.0, 1.0, 1.0)
    distance_clip: float = TRAIN_DISTANCE_CLIP
    # E heads: L2-normalise onto the unit sphere (the factorial's E) or keep the projector's raw
    # output (False: the companion method's E_A). Serialised only when False (``as_dict``).
    normalise: bool = True
    # A geometry added to the factorial: the plugin reference its head is built from
    # (hierbench.geometry.plain). Serialised only when set (``as_dict``).
    geometry_plugin: str | None = None

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> CellSpec:
        """The spec a training record (``cells/<cell>/record.json``) was written from."""
        spec = dict(record["spec"])
        spec["supcon_weights"] = tuple(spec["supcon_weights"])
        return cls(**spec)

    def as_dict(self) -> dict[str, Any]:
        """The fields as records and checkpoints store them; ``normalise`` only when False and
        ``geometry_plugin`` only when set, so the specs of the paper's heads keep the bytes they
        had before those fields existed."""
        fields = asdict(self)
        if self.normalise:
            del fields["normalise"]
        if self.geometry_plugin is None:
            del fields["geometry_plugin"]
        return fields

    @property
    def cell(self) -> str:
        """The cell's name, e.g. ``HS-2024``."""
        return cell_name(self.geometry, self.loss, self.seed)

    def check(self) -> None:
        """Refuse specs that cannot be trained, naming the cell and the field."""
        geometries, losses = (*GEOMETRIES, LORENTZ), (*LOSSES, HIER, COMPANION_LOSS)
        factorial = (*GEOMETRIES, *([self.geometry] if self.geometry_plugin else []))
        added = self.geometry in factorial and is_added_loss(self.loss)
        plugin = is_added_geometry(self.geometry) and self.geometry_plugin is not None
        if (self.geometry not in geometries and not plugin) or (
            self.loss not in losses and not added
        ):
            raise ValueError(
                f"{self.dataset} {self.cell}: geometry must be {'|'.join(geometries)} or one "
                f"added to the factorial (with its plugin), and loss {'|'.join(losses)} or one "
                "added to the factorial (one capital letter)"
            )
        if self.geometry_plugin is not None and not is_added_geometry(self.geometry):
            raise ValueError(
                f"{self.dataset} {self.cell}: geometry_plugin applies only to a geometry added "
                "to the factorial"
            )
        if self.geometry == LORENTZ and self.curvature is None:
            raise ValueError(
                f"{self.dataset} {self.cell}: a Lorentz cell needs its initial curvature"
            )
        if self.geometry == POINCARE and (self.curvature is None or self.radius is None):
            raise ValueError(
                f"{self.dataset} {self.cell}: a Poincare cell needs curvature and radius"
            )
        if self.loss == SUPCON and self.tau is None:
            raise ValueError(f"{self.dataset} {self.cell}: a Taxonomy-SupCon cell needs tau")
        if not self.normalise and self.geometry != EUCLIDEAN:
            raise ValueError(
                f"{self.dataset} {self.cell}: normalise=False applies only to the Euclidean head"
            )
        if self.normalise and self.geometry == EUCLIDEAN and self.loss == COMPANION_LOSS:
            raise ValueError(f"{self.dataset} {self.cell}: {SPHERE_SYMMETRY}")


def cell_spec(
    dataset: str,
    geometry: str,
    loss: str,
    seed: int,
    config: dict[str, Any],
    *,
    tau: float | None = None,
    epochs: int | None = None,
    hyperbolic: dict[str, float] | None = None,
) -> CellSpec:
    """The spec of a cell from the resolved config (``epochs`` overrides, for tuning runs;
    ``hyperbolic`` another Poincaré operating point, for the curvature control)."""
    training, head = config["training"], config["head"]
    hyperbolic = hyperbolic or config["datasets"][dataset]["hyperbolic"]
    weights = training["supcon_weights"]
    return CellSpec(
        dataset=dataset,
        geometry=geometry,
        loss=loss,
        seed=int(seed),
        epochs=int(epochs if epochs is not None else training["epochs"]),
        batch_size=training["batch_size"],
        lr=training["lr"],
        weight_decay=training["weight_decay"],
        grad_clip=training["grad_clip"],
        hidden_dim=head["hidden_dim"],
        embedding_dim=head["embedding_dim"],
        dropout=head["dropout"],
        curvature=hyperbolic["curvature"] if geometry == POINCARE else None,
        radius=hyperbolic["radius"] if geometry == POINCARE else None,
        tau=tau if loss == SUPCON else None,
        regression_targets=dict(training["regression_targets"]),
        supcon_weights=(weights["c"], weights["m"], weights["h"]),
        distance_clip=training["distance_clip_train"],
        geometry_plugin=geometry_reference(config, geometry),
    )


def own_epoch_budgets(config: dict[str, Any], dataset: str) -> dict[str, int]:
    """The cell groups that train for an epoch budget of their own instead of
    ``training.epochs``: the HIER-style baseline's cells (by their loss) when ``hier.epochs``
    is set, the curvature control's (by the control named in their records) when its
    ``epochs`` is."""
    controls = config["datasets"][dataset].get("controls", {})
    budgets = {
        HIER: controls.get("baselines", {}).get("hier", {}).get("epochs"),
        CURVATURE_CONTROL: controls.get("curvature", {}).get("epochs"),
    }
    return {group: int(epochs) for group, epochs in budgets.items() if epochs is not None}


def budget_group(record: dict[str, Any], own_budgets: dict[str, int]) -> str:
    """The own-budget group a cell's training record belongs to ("" for the factorial's
    budget): its control's, else its loss's, when that group has a budget of its own."""
    for group in (record.get("control"), record["spec"].get("loss")):
        if group in own_budgets:
            return str(group)
    return ""
