"""Procedural birds whose look follows the taxonomy: the high level sets the body plan
(proportions, bill, neck, legs, tail) and a preferred habitat, the middle level the palette, the
leaf the markings (wing bars, eye stripe, crown, breast, throat). As in real birds the hierarchy
is visible but not trivial: a share of middles take a palette from a small shared pool
(convergent look-alikes across groups), and a share of leaves recolour themselves (strongly
different species within one middle). Each group's look comes from a SHA256 of (seed, level,
label), so a label looks the same in every subset and run; each image's pose, scale, position,
background, lighting, noise and occlusion come from a generator the caller seeds.
"""

from __future__ import annotations

import colorsys
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

HABITATS = (  # (top colour, bottom colour): sky, water, foliage, ground, snow
    ((150, 190, 235), (205, 225, 245)),
    ((70, 120, 160), (40, 90, 120)),
    ((60, 110, 50), (110, 150, 70)),
    ((160, 130, 90), (110, 85, 60)),
    ((215, 220, 225), (170, 175, 185)),
)
HABITAT_BIAS = 0.6  # chance that an image shows its high group's habitat
CONVERGENT_SHARE, CONVERGENT_POOL = 0.25, 6  # middles drawing their palette from a shared pool
RECOLOUR_SHARE = 0.2  # leaves that differ strongly from the rest of their middle
Colour = tuple[int, int, int]
Point = tuple[float, float]
Draw = ImageDraw.ImageDraw


@dataclass(frozen=True)
class BirdLook:
    """Everything that fixes one leaf class's appearance (picklable for worker processes)."""

    plan: dict[str, float]
    colours: dict[str, Colour]
    marks: dict[str, float]
    spots: tuple[tuple[float, float], ...]
    habitat: int


def digest(*parts: object) -> bytes:
    """SHA256 of the parts joined by a separator: the root of every demo decision."""
    return hashlib.sha256("\x1f".join(str(part) for part in parts).encode()).digest()


def seeded_rng(*parts: object) -> np.random.Generator:
    """A generator seeded by SHA256 of the parts, stable across runs, platforms and subsets."""
    return np.random.default_rng(int.from_bytes(digest(*parts)[:16], "little"))


def _hsv(h: float, s: float, v: float) -> Colour:
    """HSV in [0, 1] (hue wraps) to an RGB byte triple."""
    r, g, b = colorsys.hsv_to_rgb(h % 1.0, min(max(s, 0.0), 1.0), min(max(v, 0.0), 1.0))
    return (round(r * 255), round(g * 255), round(b * 255))


def _body_plan(seed: int, high: str, middle: str, leaf: str) -> dict[str, float]:
    """Body proportions from the high group, lightly varied per middle and per leaf."""
    rng = seeded_rng(seed, "high", high)
    plan = {
        "length": rng.uniform(0.28, 0.46),
        "depth": rng.uniform(0.38, 0.75),
        "tilt": rng.uniform(-5.0, 50.0),
        "head": rng.uniform(0.17, 0.32),
        "neck": rng.uniform(0.0, 0.2) + (rng.uniform(0.2, 0.5) if rng.random() < 0.3 else 0.0),
        "bill": rng.uniform(0.4, 2.2),
        "bill_depth": rng.uniform(0.3, 0.75),
        "bill_curve": rng.uniform(-0.5, 0.5),
        "tail": rng.uniform(0.15, 0.75),
        "tail_shape": float(rng.integers(0, 3)),
        "legs": rng.uniform(0.08, 0.65),
    }
    for level, label, spread in (("middle", middle, 0.1), ("leaf", leaf, 0.04)):
        jitter = seeded_rng(seed, f"{level}-plan", label)
        for key in ("length", "depth", "head", "neck", "bill", "tail", "legs"):
            plan[key] *= 1.0 + jitter.normal(0.0, spread)
    return plan


def _palette(seed: int, middle: str) -> dict[str, Colour]:
    """Plumage colours of a middle group; some middles share a palette from a small pool."""
    key = seeded_rng(seed, "middle", middle)
    source = middle
    if key.random() < CONVERGENT_SHARE:
        source = f"convergent-{key.integers(CONVERGENT_POOL)}"
    rng = seeded_rng(seed, "palette", source)
    hue, sat, val = rng.uniform(0, 1), rng.uniform(0.25, 0.95), rng.uniform(0.3, 0.9)
    head_hue = hue + (rng.uniform(0.2, 0.8) if rng.random() < 0.4 else 0.0)
    return {
        "back": _hsv(hue, sat, val),
        "wing": _hsv(hue + rng.normal(0, 0.04), sat, val * rng.uniform(0.5, 0.85)),
        "head": _hsv(head_hue, sat, val * rng.uniform(0.8, 1.1)),
        "belly": _hsv(hue + rng.uniform(-0.1, 0.1), sat * 0.35, min(1.0, val + 0.35)),
        "bill": _hsv(rng.choice([0.08, 0.14, 0.0]), rng.uniform(0, 0.9), rng.uniform(0.1, 0.9)),
        "legs": _hsv(rng.choice([0.0, 0.05, 0.14]), rng.uniform(0, 0.7), rng.uniform(0.15, 0.8)),
    }


def _markings(seed: int, leaf: str, colours: dict[str, Colour]) -> tuple[dict, dict, tuple]:
    """Leaf-specific markings and colour shifts; a share of leaves recolour back and head."""
    rng = seeded_rng(seed, "leaf", leaf)
    colours = dict(colours)
    if rng.random() < RECOLOUR_SHARE:
        hue, sat = rng.uniform(0, 1), rng.uniform(0.4, 1.0)
        colours["back"] = _hsv(hue, sat, rng.uniform(0.35, 0.9))
        colours["head"] = _hsv(hue + rng.uniform(-0.3, 0.3), sat, rng.uniform(0.3, 0.95))
    patch = str(rng.choice(["head", "belly", "wing"]))
    colours[patch] = _hsv(rng.uniform(0, 1), rng.uniform(0.2, 1.0), rng.uniform(0.3, 1.0))
    marks = {
        "wing_bars": float(rng.integers(0, 3)),
        "eye_stripe": float(rng.random() < 0.5),
        "crown": float(rng.random() < 0.5),
        "breast": float(rng.integers(0, 4)),  # none, spots, streaks, band
        "throat": float(rng.random() < 0.4),
    }
    colours["bar"] = _hsv(rng.uniform(0, 1), rng.uniform(0, 0.4), rng.uniform(0.85, 1.0))
    colours["stripe"] = _hsv(0, 0, 0.05) if rng.random() < 0.7 else _hsv(0, 0, 0.97)
    colours["crown"] = _hsv(rng.uniform(0, 1), rng.uniform(0.6, 1.0), rng.uniform(0.5, 1.0))
    colours["breast"] = _hsv(rng.uniform(0, 1), rng.uniform(0.2, 0.9), rng.uniform(0.1, 0.5))
    colours["throat"] = _hsv(rng.uniform(0, 1), rng.uniform(0.5, 1.0), rng.uniform(0.4, 1.0))
    spots = tuple((float(x), float(y)) for x, y in rng.uniform(-0.8, 0.8, size=(7, 2)))
    return marks, colours, spots


def class_look(seed: int, leaf: str, middle: str, high: str) -> BirdLook:
    """The deterministic look of a leaf class given its three taxonomy labels."""
    marks, colours, spots = _markings(seed, leaf, _palette(seed, middle))
    habitat = int(seeded_rng(seed, "habitat", high).integers(len(HABITATS)))
    return BirdLook(_body_plan(seed, high, middle, leaf), colours, marks, spots, habitat)


class _Body(NamedTuple):
    """Where the body lies on the sprite canvas: centre, length, depth, axis angle (radians)."""

    x: float
    y: float
    length: float
    depth: float
    tilt: float

    def along(self, t: float, dy: float = 0.0) -> Point:
        """The point ``t`` body lengths along the axis from the centre, ``dy`` depths lower."""
        return (
            self.x + t * self.length * math.cos(self.tilt),
            self.y + t * self.length * math.sin(self.tilt) + dy * self.depth,
        )


def _ellipse(cx: float, cy: float, a: float, b: float, angle: float) -> list[Point]:
    """Polygon of an ellipse with half-axes a, b rotated by ``angle`` radians."""
    t = np.linspace(0, 2 * math.pi, 28, endpoint=False)
    x, y = a * np.cos(t), b * np.sin(t)
    c, s = math.cos(angle), math.sin(angle)
    return list(zip((cx + c * x - s * y).tolist(), (cy + s * x + c * y).tolist(), strict=True))


def _disc(x: float, y: float, rx: float, ry: float | None = None) -> list[float]:
    """Bounding box of a circle (or axis-aligned ellipse) for ImageDraw."""
    ry = rx if ry is None else ry
    return [x - rx, y - ry, x + rx, y + ry]


def draw_sprite(look: BirdLook, side: int) -> Image.Image:
    """Draw the bird facing right on a transparent ``side``² canvas."""
    p, col = look.plan, look.colours
    canvas = Image.new("RGBA", (side, side), (0, 0, 0, 0))
    draw = ImageDraw.Draw(canvas)
    length = p["length"] * side
    tilt = -math.radians(p["tilt"])  # screen y points down: a negative angle raises the head
    body = _Body(
        0.5 * side - 0.1 * length * math.cos(tilt), 0.52 * side, length, length * p["depth"], tilt
    )
    width = max(1, round(side * 0.014))
    for t in (-0.12, 0.08):  # legs hang straight down from the belly
        x0, y0 = body.x + t * length, body.y + 0.35 * body.depth
        y1 = y0 + p["legs"] * length
        draw.line([(x0, y0), (x0, y1), (x0 + 0.08 * length, y1)], fill=col["legs"], width=width)
    _draw_tail(draw, p, col["wing"], body)
    draw.polygon(_ellipse(body.x, body.y, length / 2, body.depth / 2, tilt), fill=col["back"])
    belly = body.along(0.1, 0.18)
    draw.polygon(_ellipse(*belly, 0.3 * length, 0.3 * body.depth, tilt), fill=col["belly"])
    _draw_breast(draw, look, belly, body)
    wing = body.along(-0.1, -0.08)
    draw.polygon(_ellipse(*wing, 0.33 * length, 0.26 * body.depth, tilt), fill=col["wing"])
    for bar in range(int(look.marks["wing_bars"])):
        bx, by = body.along(-0.05 - 0.13 * bar, -0.08)
        draw.line(
            [(bx, by - 0.2 * body.depth), (bx, by + 0.15 * body.depth)],
            fill=col["bar"],
            width=width,
        )
    _draw_head(draw, look, *body.along(0.4, -0.1), length)
    return canvas


def _draw_tail(draw: Draw, p: dict[str, float], colour: Colour, body: _Body) -> None:
    """A pointed, fanned or forked tail extending backwards and slightly down from the rump."""
    x, y = body.along(-0.45)
    back, tail = body.tilt + math.pi - 0.25, p["tail"] * body.length
    spread = (0.12, 0.35, 0.3)[int(p["tail_shape"])] * tail
    tx, ty = x + tail * math.cos(back), y + tail * math.sin(back)
    nx, ny = -math.sin(back) * spread, math.cos(back) * spread
    points = [(x - nx * 0.5, y - ny * 0.5), (tx - nx, ty - ny)]
    if int(p["tail_shape"]) == 2:  # forked: a notch in the middle
        points.append((x + 0.6 * tail * math.cos(back), y + 0.6 * tail * math.sin(back)))
    draw.polygon([*points, (tx + nx, ty + ny), (x + nx * 0.5, y + ny * 0.5)], fill=colour)


def _draw_breast(draw: Draw, look: BirdLook, centre: Point, body: _Body) -> None:
    """Breast pattern of the leaf: none, spots, streaks or a band."""
    kind, colour = int(look.marks["breast"]), look.colours["breast"]
    a, b, r = 0.25 * body.length, 0.22 * body.depth, max(1.0, 0.04 * body.length)
    for sx, sy in look.spots if kind in (1, 2) else ():
        x, y = centre[0] + sx * a, centre[1] + sy * b
        if kind == 1:
            draw.ellipse(_disc(x, y, r), fill=colour)
        else:
            draw.line([(x, y - 2 * r), (x, y + 2 * r)], fill=colour, width=max(1, round(r)))
    if kind == 3:
        x, y = centre[0], centre[1] - b
        draw.line([(x - a, y), (x + a, y)], fill=colour, width=max(1, round(0.5 * b)))


def _draw_head(draw: Draw, look: BirdLook, x: float, y: float, length: float) -> None:
    """Neck, head, bill, eye and the leaf's head markings (crown, eye stripe, throat)."""
    p, col, m = look.plan, look.colours, look.marks
    r, neck = p["head"] * length, p["neck"] * length
    hx, hy = x + 0.3 * neck, y - neck
    draw.line([(x, y), (hx, hy)], fill=col["back"], width=max(1, round(1.1 * r)))
    draw.ellipse(_disc(hx, hy, r), fill=col["head"])
    if m["crown"]:
        draw.chord(_disc(hx, hy, r), 200, 340, fill=col["crown"])
    if m["throat"]:
        draw.ellipse(_disc(hx + 0.4 * r, hy + 0.65 * r, 0.5 * r, 0.25 * r), fill=col["throat"])
    bill, half, bx = p["bill"] * r, 0.5 * p["bill_depth"] * r, hx + 0.85 * r
    tip = (bx + bill, hy + 0.1 * r + p["bill_curve"] * bill)
    mx, my = bx + 0.5 * bill, hy + 0.1 * r + 0.3 * p["bill_curve"] * bill
    outline = [(bx - 0.1 * r, hy - half), (mx, my - 0.5 * half), tip, (mx, my + 0.4 * half)]
    draw.polygon([*outline, (bx - 0.1 * r, hy + half)], fill=col["bill"])
    ex, ey, er = hx + 0.35 * r, hy - 0.15 * r, max(1.0, 0.16 * r)
    if m["eye_stripe"]:
        draw.line([(hx - 0.9 * r, ey), (bx, ey)], fill=col["stripe"], width=max(1, round(er)))
    draw.ellipse(_disc(ex, ey, er), fill=(15, 15, 15))


def _background(rng: np.random.Generator, habitat: int, size: int) -> np.ndarray:
    """A habitat-coloured vertical gradient with smooth low-frequency texture, as float RGB."""
    top, bottom = (np.array(c, dtype=np.float64) for c in HABITATS[habitat])
    top, bottom = top * rng.uniform(0.85, 1.15, 3), bottom * rng.uniform(0.85, 1.15, 3)
    ramp = np.linspace(0.0, 1.0, size)[:, None, None] ** rng.uniform(0.5, 2.0)
    base = top * (1 - ramp) + bottom * ramp
    cells = int(rng.integers(3, 10))
    noise = rng.normal(0, 1, (cells, cells, 1)) + rng.normal(0, 0.25, (cells, cells, 3))
    small = Image.fromarray((noise * 40 + 128).clip(0, 255).astype(np.uint8))
    texture = np.asarray(small.resize((size, size), Image.Resampling.BICUBIC), np.float64) / 128 - 1
    return base * (1 + rng.uniform(0.1, 0.6) * texture)


def render_image(
    sprite: Image.Image, look: BirdLook, rng: np.random.Generator, size: int
) -> tuple[Image.Image, tuple[int, int, int, int]]:
    """One image of the bird: pose, scale, position, habitat, occluder, lighting and noise."""
    bird = sprite.crop(sprite.getchannel("A").getbbox())
    if rng.random() < 0.5:
        bird = bird.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    bird = bird.rotate(float(rng.uniform(-25, 25)), Image.Resampling.BICUBIC, expand=True)
    scale = rng.uniform(0.55, 0.95) * size / max(bird.size)
    dims = (max(1, round(bird.width * scale)), max(1, round(bird.height * scale)))
    bird = bird.resize(dims, Image.Resampling.BILINEAR, reducing_gap=2.0)
    x = int(rng.integers(-bird.width // 10, max(1, size - bird.width * 9 // 10)))
    y = int(rng.integers(-bird.height // 10, max(1, size - bird.height * 9 // 10)))
    habitat = look.habitat if rng.random() < HABITAT_BIAS else int(rng.integers(len(HABITATS)))
    image = Image.fromarray(_background(rng, habitat, size).clip(0, 255).astype(np.uint8))
    image.paste(bird, (x, y), bird)
    left, top, right, bottom = bird.getchannel("A").getbbox() or (0, 0, 0, 0)
    box = (max(0, x + left), max(0, y + top), min(size, x + right), min(size, y + bottom))
    if rng.random() < 0.3:
        _occlude(ImageDraw.Draw(image), rng, box)
    pixels = np.asarray(image.filter(ImageFilter.GaussianBlur(rng.uniform(0, 0.8))), np.float64)
    pixels = (pixels - 128) * rng.uniform(0.85, 1.15) + 128 * rng.uniform(0.8, 1.15)
    pixels = pixels * rng.normal(1.0, 0.05, 3) + rng.normal(0, rng.uniform(0, 8), pixels.shape)
    result = Image.fromarray(pixels.clip(0, 255).astype(np.uint8))
    return result, (box[0], box[1], box[2] - box[0], box[3] - box[1])


def _occlude(draw: Draw, rng: np.random.Generator, box: Sequence[int]) -> None:
    """Cover part of the bird with a branch or a leafy blob of foliage colour."""
    colour = _hsv(rng.uniform(0.05, 0.35), rng.uniform(0.3, 0.8), rng.uniform(0.2, 0.6))
    x0, y0, x1, y1 = box
    w, h = max(1, x1 - x0), max(1, y1 - y0)
    cx, cy = x0 + rng.uniform(0, 1) * w, y0 + rng.uniform(0, 1) * h
    if rng.random() < 0.5:
        angle = rng.uniform(0, math.pi)
        dx, dy = math.cos(angle) * 2 * w, math.sin(angle) * 2 * h
        thickness = max(2, round(rng.uniform(0.05, 0.15) * min(w, h) + 1))
        draw.line([(cx - dx, cy - dy), (cx + dx, cy + dy)], fill=colour, width=thickness)
    else:
        r = rng.uniform(0.15, 0.35) * max(w, h)
        draw.polygon(_ellipse(cx, cy, r, 0.6 * r, rng.uniform(0, math.pi)), fill=colour)
