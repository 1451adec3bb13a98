"""Where a run's figures live: the training curves' (one per kind of cell trained, the τ search,
the duration searches) and the pictures' (the retrieval galleries and embedding views, with what
they read). A base of :class:`hierbench.paths.RunPaths` (this package's ``__init__``), which
supplies ``at`` and ``config``."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from hierbench.cellkinds import cell_instances, picture_arms
from hierbench.controls.outer import outer_splits
from hierbench.controls.semantic import semantic_arms
from hierbench.layout import (
    CELL_FILES,
    CELLS,
    CURVES,
    DURATION_SEARCH_FIGURE,
    EMBEDDING_VIEWS_FIGURE,
    FIGURES,
    FINAL_LOCK,
    GALLERIES_FIGURE,
    IMAGE_FINGERPRINT,
    IMAGE_TABLE,
    SEALED_FEATURES,
    SEALED_SPLITS,
    TAU_SEARCH_FIGURE,
    TAXONOMY,
    TRAINING_CURVES,
    TRAINING_PROBLEMS,
    cell_folder,
    fill,
)
from hierbench.protocol import FIGURE_FORMATS


class FigurePaths:
    """The figure paths of a run; the subclass gives the run folder's ``at`` and the config."""

    config: Mapping[str, Any]

    def at(self, pattern: str, **values: Any) -> str:
        raise NotImplementedError

    def figure_files(
        self, name: str, dataset: str = "{dataset}", folder: str = FIGURES
    ) -> list[str]:
        """A figure's files (every figure format) in ``folder`` (a pattern)."""
        return [self.at(f"{folder}/{name}.{ext}", dataset=dataset) for ext in FIGURE_FORMATS]

    def curve_kinds(self, dataset: str) -> list[str]:
        """The kinds of cell a dataset trains under the config (each gets its training curves)."""
        return [kind for kind in CELLS if any(cell_instances(self.config, dataset, kind))]

    def has_duration_search(self, dataset: str) -> bool:
        """Whether a dataset trains a control that searches its epochs on validation (the
        semantic control, the outer splits)."""
        return bool(semantic_arms(self.config, dataset) or outer_splits(self.config, dataset))

    def curves_files(self, dataset: str = "{dataset}") -> list[str]:
        """Every training-curves figure of a dataset (one per kind it trains, with its caption's
        paragraph), the τ search's and, where a control searches its epochs, theirs."""
        kinds = self.curve_kinds(dataset)
        names = [fill(TRAINING_CURVES, kind=kind) for kind in kinds]
        names.append(TAU_SEARCH_FIGURE)
        if self.has_duration_search(dataset):
            names.append(DURATION_SEARCH_FIGURE)
        files = [f for name in names for f in self.figure_files(name, dataset, CURVES)]
        return files + [self.at(TRAINING_PROBLEMS, dataset=dataset, kind=kind) for kind in kinds]

    def picture_files(self, dataset: str = "{dataset}") -> dict[str, list[str]]:
        """A dataset's pictures (#63), by output name: the retrieval galleries and the
        embedding views, each in every figure format."""
        return {
            "galleries": self.figure_files(GALLERIES_FIGURE, dataset),
            "embeddings": self.figure_files(EMBEDDING_VIEWS_FIGURE, dataset),
        }

    def picture_inputs(self, dataset: str) -> dict[str, str]:
        """What a dataset's pictures read, by input name: the lock, the sealed test's features
        and splits, the image table and its files' hashes, the taxonomy, and the record and
        checkpoint of each pictured cell (``record_<arm>``, ``model_<arm>``; see
        :func:`~hierbench.cellkinds.picture_arms`)."""
        at = partial(self.at, dataset=dataset)
        cells = {
            f"{key}_{cell.arm}": at(f"{cell_folder(cell.kind)}/{CELL_FILES[key]}", **cell.values)
            for cell in picture_arms(self.config, dataset)
            if cell.kind is not None
            for key in ("record", "model")
        }
        named = {
            "lock": FINAL_LOCK,
            "sealed_features": SEALED_FEATURES,
            "sealed_splits": SEALED_SPLITS,
            "images": IMAGE_TABLE,
            "image_files": IMAGE_FINGERPRINT,
            "taxonomy": TAXONOMY,
        }
        return {name: at(pattern) for name, pattern in named.items()} | cells
