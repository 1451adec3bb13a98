"""Retrieval galleries (issue #63): for each pictured query, its image and each arm's top-ranked
gallery images, one row per arm, each result framed in the colour of the deepest level it
shares with the query (leaf, middle, high, or none).

The images are laid out as one mosaic of small thumbnails (a single raster in the figure, so
that drawing stays cheap whatever the number of arms), and the axis carries the labels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from PIL import Image, ImageOps

THUMBNAIL = 64  # pixels a side
FRAME = 4  # pixels of coloured frame around each thumbnail
GAP = 6  # pixels between the query's column and the results, and between query blocks
BACKGROUND = 255
# The frame colour of each deepest level an item shares with its query (ColorBrewer RdYlGn,
# deepest green; the levels of metrics.top_ranked.SHARED_LEVELS), the query's black.
FRAME_COLOURS: dict[str, tuple[int, int, int]] = {
    "leaf": (26, 152, 80),
    "middle": (145, 207, 96),
    "high": (254, 224, 139),
    "none": (215, 48, 39),
}
QUERY_FRAME = (0, 0, 0)
DPI = 150


def thumbnail(path: str | Path, size: int = THUMBNAIL) -> np.ndarray:
    """An image as a ``size`` × ``size`` RGB array, its aspect kept, padded with white."""
    with Image.open(path) as opened:
        image = opened.convert("RGB")
    padded = ImageOps.pad(image, (size, size), color=(BACKGROUND,) * 3)
    return np.asarray(padded, dtype=np.uint8)


@dataclass(frozen=True)
class QueryRow:
    """One arm's row of a query's block: the arm, its ranked images' ids (best first) and the
    deepest level each shares with the query (a key of ``FRAME_COLOURS``)."""

    arm: str
    ranked: Sequence[str]
    shared: Sequence[str]


@dataclass(frozen=True)
class QueryBlock:
    """A pictured query: its image id, a label (its high group's name or code) and a row per
    arm."""

    query: str
    label: str
    rows: Sequence[QueryRow]


def _framed(image: np.ndarray, colour: tuple[int, int, int]) -> np.ndarray:
    """A thumbnail inside a frame of ``colour``."""
    side = image.shape[0] + 2 * FRAME
    tile = np.empty((side, side, 3), dtype=np.uint8)
    tile[:] = colour
    tile[FRAME:-FRAME, FRAME:-FRAME] = image
    return tile


def _tile_side() -> int:
    return THUMBNAIL + 2 * FRAME


def mosaic(blocks: Sequence[QueryBlock], images: Mapping[str, np.ndarray], k: int) -> np.ndarray:
    """The whole gallery as one RGB array: per block, a row per arm; the query's framed image
    in the first column of the block's first row, each arm's ranked images after a gap."""
    tile = _tile_side()
    rows = sum(len(block.rows) for block in blocks)
    height = rows * tile + GAP * max(len(blocks) - 1, 0)
    width = (1 + k) * tile + GAP
    canvas = np.full((height, width, 3), BACKGROUND, dtype=np.uint8)
    top = 0
    for block in blocks:
        canvas[top : top + tile, :tile] = _framed(images[block.query], QUERY_FRAME)
        for row in block.rows:
            for place, (item, level) in enumerate(zip(row.ranked, row.shared, strict=True)):
                left = tile + GAP + place * tile
                colour = FRAME_COLOURS[level]
                canvas[top : top + tile, left : left + tile] = _framed(images[item], colour)
            top += tile
        top += GAP
    return canvas


def _row_centres(blocks: Sequence[QueryBlock]) -> tuple[list[float], list[str], list[float]]:
    """The y centre and label of every arm row, and each block's first row's top (pixels)."""
    tile, centres, labels, tops, top = _tile_side(), [], [], [], 0
    for block in blocks:
        tops.append(top)
        for row in block.rows:
            centres.append(top + tile / 2)
            labels.append(row.arm)
            top += tile
        top += GAP
    return centres, labels, tops


def gallery_figure(
    blocks: Sequence[QueryBlock],
    images: Mapping[str, np.ndarray],
    k: int,
    title: str,
    level_labels: Mapping[str, str] | None = None,
) -> Figure:
    """The galleries of ``blocks`` as one figure: the mosaic at about one pixel a pixel, arm
    names at the left, rank numbers above, each query's label beside its image, and a legend
    of the frame colours named by ``level_labels`` (the dataset's level names)."""
    canvas = mosaic(blocks, images, k)
    height, width = canvas.shape[:2]
    margin_left, margin_top, margin_bottom = 0.9, 0.5, 0.5  # inches, for the labels
    size = (width / DPI + margin_left + 0.2, height / DPI + margin_top + margin_bottom)
    figure = Figure(figsize=size)
    axis = figure.add_axes(
        (
            margin_left / size[0],
            margin_bottom / size[1],
            (width / DPI) / size[0],
            (height / DPI) / size[1],
        )
    )
    axis.imshow(canvas, interpolation="none")
    centres, arms, tops = _row_centres(blocks)
    axis.set_yticks(centres, arms, fontsize=5)
    tile = _tile_side()
    ranks = [tile + GAP + (place + 0.5) * tile for place in range(k)]
    axis.set_xticks([tile / 2, *ranks], ["query", *(str(r + 1) for r in range(k))], fontsize=5)
    axis.xaxis.tick_top()
    axis.tick_params(length=0, pad=1)
    for block, top in zip(blocks, tops, strict=True):
        axis.text(tile / 2, top + tile + 2, block.label, ha="center", va="top", fontsize=4)
    for spine in axis.spines.values():
        spine.set_visible(False)
    names = level_labels or {}
    legend = [
        Patch(color=np.asarray(colour) / 255, label=names.get(level, level))
        for level, colour in FRAME_COLOURS.items()
    ]
    figure.legend(
        handles=legend,
        loc="lower center",
        ncol=len(legend),
        fontsize=5,
        frameon=False,
        title="deepest level shared with the query",
        title_fontsize=5,
    )
    figure.suptitle(title, fontsize=7, y=1 - 0.08 / size[1])
    return figure
