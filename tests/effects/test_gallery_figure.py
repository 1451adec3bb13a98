"""Retrieval galleries (hierbench.effects.gallery_figure): thumbnails, each result framed in its
shared level's colour at its place in the mosaic, and the same bytes when drawn twice."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image

from hierbench.effects.figures import figure_writer
from hierbench.effects.gallery_figure import (
    FRAME,
    FRAME_COLOURS,
    GAP,
    QUERY_FRAME,
    THUMBNAIL,
    QueryBlock,
    QueryRow,
    gallery_figure,
    mosaic,
    thumbnail,
)
from hierbench.metrics.top_ranked import SHARED_LEVELS

TILE = THUMBNAIL + 2 * FRAME


def _images(count: int) -> dict[str, np.ndarray]:
    """Plain grey thumbnails, each its own shade, by id."""
    return {
        str(i): np.full((THUMBNAIL, THUMBNAIL, 3), 10 * i + 5, dtype=np.uint8) for i in range(count)
    }


def _blocks() -> list[QueryBlock]:
    rows = [
        QueryRow("E_R", ["1", "2", "3"], ["leaf", "middle", "none"]),
        QueryRow("H_R", ["3", "2"], ["none", "high"]),
    ]
    return [QueryBlock("0", "family 1", rows), QueryBlock("4", "family 2", rows[:1])]


def test_a_wide_image_is_padded_to_a_square_thumbnail(tmp_path: Path):
    path = tmp_path / "wide.png"
    Image.new("RGB", (200, 100), (0, 0, 255)).save(path)
    small = thumbnail(path)
    assert small.shape == (THUMBNAIL, THUMBNAIL, 3) and small.dtype == np.uint8
    assert (small[0, THUMBNAIL // 2] == 255).all()  # white above the image
    assert tuple(small[THUMBNAIL // 2, THUMBNAIL // 2]) == (0, 0, 255)


def test_each_result_sits_in_its_place_framed_by_its_shared_level():
    blocks, images = _blocks(), _images(5)
    canvas = mosaic(blocks, images, k=3)
    assert canvas.shape == (3 * TILE + GAP, 4 * TILE + GAP, 3)
    assert tuple(canvas[0, 0]) == QUERY_FRAME
    assert (canvas[FRAME, FRAME] == images["0"][0, 0]).all()
    for block_top, block in zip((0, 2 * TILE + GAP), blocks, strict=True):
        for index, row in enumerate(block.rows):
            top = block_top + index * TILE
            for place, (item, level) in enumerate(zip(row.ranked, row.shared, strict=True)):
                left = TILE + GAP + place * TILE
                assert tuple(canvas[top, left]) == FRAME_COLOURS[level]
                assert (canvas[top + FRAME, left + FRAME] == images[item][0, 0]).all()
    assert (canvas[TILE, TILE + GAP + 2 * TILE] == 255).all()  # H_R ranked two: blank after
    assert set(FRAME_COLOURS) == set(SHARED_LEVELS)  # a colour for every shared level


def test_the_gallery_figure_is_the_same_bytes_when_drawn_twice():
    labels = {"leaf": "class", "middle": "genus", "high": "family"}

    def drawn() -> bytes:
        buffer = io.BytesIO()
        figure = gallery_figure(_blocks(), _images(5), 3, "cub: galleries", labels)
        figure_writer(figure, "png")(buffer)
        return buffer.getvalue()

    first = drawn()
    assert first == drawn() and first[:4] == b"\x89PNG"
