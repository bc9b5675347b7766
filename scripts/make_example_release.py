#!/usr/bin/env python3
"""Generate the bundled demo benchmark release ``examples/eviscene-demo-v1``.

Everything is synthetic: pictures are painted procedurally, pages are written from
templates, and the publications, photographers and most events are fictional (real city
names are used so claims read like real ones). The release follows DESIGN §2: public
cases with the claim printed in the image, private gold reference chains, protocols, a
source-access policy, and an offline corpus ("web") for the embedded tools.

Determinism: every random choice comes from a generator seeded by a sha256 of a stable
name, no clock or hash-randomised ordering is read, and files are written with fixed
encoders, so running the script twice gives byte-identical files (for the same Pillow and
numpy versions, which the release README records).

    python scripts/make_example_release.py                       # writes examples/eviscene-demo-v1
    python scripts/make_example_release.py --out /tmp/x --check-ocr --stats
    python scripts/make_example_release.py --out /tmp/tune-7 --seed 7   # a tuning variant

`--seed N` makes a tuning variant: the same stories, but every picture, rendition and page
detail drawn afresh from seed N, and the case images varied the ways copies vary on the web
(`case_variation`): caption placement (a post strip, a band above or below, a strip beside),
fonts and colours, crop, size, JPEG quality, brightness/contrast/gamma and colour cast. The
agent's reasoning is tuned on such variants, never on the independent generator's releases.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import random
import re
import shutil
import sys
import unicodedata
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from pathlib import Path
from typing import Callable

import imagehash
import numpy as np
import PIL
from PIL import Image, ImageDraw, ImageFilter, ImageFont

RELEASE_ID = "eviscene-demo-v1"
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "examples" / RELEASE_ID
LABELS = ("authentic", "out_of_context", "manipulated", "unverifiable")

# Scenes are painted at this size; case images and corpus copies are derived from it, so
# a corpus copy is a different rendition (size, crop, JPEG quality) of the same picture.
SCENE_W, SCENE_H = 960, 640
CASE_PHOTO_WIDTH = 640
# Distinct pictures must never look like copies of each other to a perceptual hash.
MIN_SCENE_PHASH_DISTANCE = 22


# ---------------------------------------------------------------------------------------
# Deterministic helpers
# ---------------------------------------------------------------------------------------


# A tuning variant's seed (`--seed`), mixed into every name-derived seed; None: the bundled release.
VARIANT_SEED: int | None = None


def stable_seed(*parts: object) -> int:
    """A seed derived from names, not from call order: reordering code moves no picture."""
    if VARIANT_SEED is not None:
        parts = (f"variant-{VARIANT_SEED}", *parts)
    digest = hashlib.sha256("/".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def rng_for(*parts: object) -> np.random.Generator:
    return np.random.default_rng(stable_seed(*parts))


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return sha256_bytes(text.encode("utf-8"))


def jpeg_bytes(image: Image.Image, quality: int) -> bytes:
    """Encode without metadata; fixed settings keep the bytes reproducible."""
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="JPEG", quality=quality, optimize=True, subsampling=2)
    return buffer.getvalue()


def font(size: int, face: str | None = None) -> ImageFont.FreeTypeFont:
    # Pillow's bundled font: output never depends on the fonts a machine has installed.
    # A tuning variant may name a TrueType `face` of the machine's instead.
    return ImageFont.truetype(face, size) if face else ImageFont.load_default(size=size)


# ---------------------------------------------------------------------------------------
# Painting primitives (numpy for fields and blends, ImageDraw for shapes)
# ---------------------------------------------------------------------------------------

Color = tuple[int, int, int]


def to_array(image: Image.Image) -> np.ndarray:
    return np.asarray(image, dtype=np.float32)


def to_image(array: np.ndarray) -> Image.Image:
    return Image.fromarray(np.clip(array, 0, 255).astype(np.uint8), "RGB")


def vertical_gradient(top: Color, bottom: Color, h: int = SCENE_H, w: int = SCENE_W) -> np.ndarray:
    t = np.linspace(0.0, 1.0, h, dtype=np.float32)[:, None, None]
    column = np.array(top, np.float32) * (1 - t) + np.array(bottom, np.float32) * t
    return np.broadcast_to(column, (h, w, 3)).copy()


def smooth_noise(rng: np.random.Generator, h: int, w: int, cells_y: int, cells_x: int) -> np.ndarray:
    """One octave of value noise in [0, 1]: a coarse random grid upsampled bicubically."""
    grid = rng.random((cells_y + 1, cells_x + 1)).astype(np.float32)
    image = Image.fromarray(grid, "F").resize((w, h), Image.Resampling.BICUBIC)
    return np.clip(np.asarray(image, np.float32), 0, 1)


def fractal_noise(rng: np.random.Generator, h: int, w: int, cells: int = 3, octaves: int = 4,
                  stretch_x: float = 1.0) -> np.ndarray:
    """Sum of octaves, normalised to [0, 1]; `stretch_x` > 1 makes horizontal streaks."""
    total = np.zeros((h, w), np.float32)
    weight_sum = 0.0
    for octave in range(octaves):
        n = cells * 2**octave
        weight = 0.5**octave
        total += weight * smooth_noise(rng, h, w, n, max(1, int(n * w / h / stretch_x)))
        weight_sum += weight
    total /= weight_sum
    return (total - total.min()) / max(1e-6, float(total.max() - total.min()))


def blend(image: Image.Image, color: Color | np.ndarray, alpha: np.ndarray) -> Image.Image:
    """Paint `color` over `image` with a per-pixel opacity map."""
    base = to_array(image)
    paint = np.asarray(color, np.float32)
    a = np.clip(alpha, 0, 1)[..., None]
    return to_image(base * (1 - a) + paint * a)


def rows_mask(y0: int, y1: int, h: int = SCENE_H, w: int = SCENE_W) -> np.ndarray:
    mask = np.zeros((h, w), np.float32)
    mask[max(0, y0):max(0, y1)] = 1.0
    return mask


def jitter(rng: np.random.Generator, color: Color, amount: int = 18) -> Color:
    return tuple(int(np.clip(c + rng.integers(-amount, amount + 1), 0, 255)) for c in color)


def sky(rng: np.random.Generator, top: Color, bottom: Color, cloud: Color, cover: float) -> Image.Image:
    """A gradient sky with fractal clouds; `cover` in [0, 1] is how overcast it is."""
    base = vertical_gradient(top, bottom)
    clouds = fractal_noise(rng, SCENE_H, SCENE_W, cells=2, octaves=5, stretch_x=2.2)
    alpha = np.clip((clouds - (1 - cover)) / max(cover, 0.05), 0, 1) * 0.9
    return blend(to_image(base), cloud, alpha)


def ground(image: Image.Image, rng: np.random.Generator, horizon: int, near: Color, far: Color,
           texture: float = 18.0) -> Image.Image:
    """Fill everything below `horizon` with a textured far-to-near gradient."""
    h = SCENE_H - horizon
    field_ = vertical_gradient(far, near, h=h)
    field_ += (fractal_noise(rng, h, SCENE_W, cells=4, octaves=4)[..., None] - 0.5) * texture
    array = to_array(image)
    array[horizon:] = field_
    return to_image(array)


def ridge(rng: np.random.Generator, base_y: float, amplitude: float, roughness: int = 6) -> np.ndarray:
    """A ridge line (one y per column) from smoothed random heights."""
    heights = smooth_noise(rng, 1, SCENE_W, 1, roughness)[0]
    detail = smooth_noise(rng, 1, SCENE_W, 1, roughness * 6)[0]
    return base_y - amplitude * (0.75 * heights + 0.25 * detail)


def fill_under(image: Image.Image, line: np.ndarray, color: Color | np.ndarray, shade: float = 0.0,
               rng: np.random.Generator | None = None) -> Image.Image:
    """Paint the area below a ridge line, darker towards the bottom by `shade`."""
    ys = np.arange(SCENE_H, dtype=np.float32)[:, None]
    mask = (ys >= line[None, :]).astype(np.float32)
    paint = np.broadcast_to(np.asarray(color, np.float32), (SCENE_H, SCENE_W, 3)).copy()
    paint *= (1 - shade * (ys / SCENE_H))[..., None]
    if rng is not None:
        paint += (fractal_noise(rng, SCENE_H, SCENE_W, cells=6, octaves=3)[..., None] - 0.5) * 30
    return blend(image, paint, mask)


def plume(rng: np.random.Generator, x0: float, y0: float, height: float, base_width: float,
          spread: float, drift: float) -> np.ndarray:
    """Opacity map of a smoke column rising from (x0, y0), widening and drifting sideways."""
    ys, xs = np.mgrid[0:SCENE_H, 0:SCENE_W].astype(np.float32)
    t = (y0 - ys) / height
    centre = x0 + drift * height * np.clip(t, 0, 1) ** 1.4
    width = base_width + spread * np.clip(t, 0, 1)
    across = np.abs(xs - centre) / width
    body = np.clip(1 - across, 0, 1) ** 0.6 * ((t > -0.02) & (t < 1.0))
    fade = np.clip((1 - t) * 2.5, 0, 1)
    texture = fractal_noise(rng, SCENE_H, SCENE_W, cells=3, octaves=5)
    return np.clip(body * fade * (0.35 + 0.9 * texture), 0, 1)


def glow(cx: float, cy: float, radius: float) -> np.ndarray:
    ys, xs = np.mgrid[0:SCENE_H, 0:SCENE_W].astype(np.float32)
    distance = np.sqrt((xs - cx) ** 2 + (ys - cy) ** 2) / radius
    return np.clip(1 - distance, 0, 1) ** 2


def flames(image: Image.Image, rng: np.random.Generator, x0: float, x1: float, base_y: float,
           height: float) -> Image.Image:
    """A band of flame tongues: bright noise thresholded under a jagged top edge."""
    ys, xs = np.mgrid[0:SCENE_H, 0:SCENE_W].astype(np.float32)
    tongues = smooth_noise(rng, 1, SCENE_W, 1, 40)[0] * 0.7 + 0.3
    top = base_y - height * tongues
    inside = (ys >= top[None, :]) & (ys <= base_y) & (xs >= x0) & (xs <= x1)
    heat = fractal_noise(rng, SCENE_H, SCENE_W, cells=8, octaves=3)
    alpha = inside * np.clip(0.5 + heat, 0, 1)
    depth = np.clip((ys - top[None, :]) / max(height, 1), 0, 1)[..., None]
    colour = np.array((255, 210, 90), np.float32) * (1 - depth) + np.array((230, 80, 20), np.float32) * depth
    return blend(image, colour, alpha)


def reflect_into_water(image: Image.Image, rng: np.random.Generator, waterline: int, tint: Color,
                       murk: float) -> Image.Image:
    """Water below `waterline`: a rippled mirror of the scene above, tinted by `murk`."""
    array = to_array(image)
    depth = SCENE_H - waterline
    mirrored = array[max(0, waterline - depth):waterline][::-1]
    if mirrored.shape[0] < depth:
        mirrored = np.concatenate([mirrored, np.repeat(mirrored[-1:], depth - mirrored.shape[0], 0)])
    ripples = fractal_noise(rng, depth, SCENE_W, cells=6, octaves=3, stretch_x=8.0)
    shift = ((ripples - 0.5) * 14).astype(int)
    cols = np.clip(np.arange(SCENE_W)[None, :] + shift, 0, SCENE_W - 1)
    rippled = mirrored[np.arange(depth)[:, None], cols]
    water = rippled * (1 - murk) + np.array(tint, np.float32) * murk
    water += (ripples[..., None] - 0.5) * 26
    array[waterline:] = water
    return to_image(array)


def finish(image: Image.Image, rng: np.random.Generator, grain: float = 3.5, vignette: float = 0.25,
           cast: Color = (0, 0, 0)) -> Image.Image:
    """Camera look: a slight blur, colour cast, vignette and sensor grain."""
    image = image.filter(ImageFilter.GaussianBlur(0.6))
    array = to_array(image) + np.array(cast, np.float32)
    ys, xs = np.mgrid[0:SCENE_H, 0:SCENE_W].astype(np.float32)
    r = np.sqrt(((xs - SCENE_W / 2) / SCENE_W) ** 2 + ((ys - SCENE_H / 2) / SCENE_H) ** 2)
    array *= (1 - vignette * np.clip(r * 1.6 - 0.3, 0, 1) ** 2)[..., None]
    array += rng.normal(0, grain, array.shape[:2]).astype(np.float32)[..., None]
    return to_image(array)


# --- objects --------------------------------------------------------------------------


def building_row(draw: ImageDraw.ImageDraw, rng: np.random.Generator, x0: float, x1: float,
                 base_y: float, min_h: float, max_h: float, palette: list[Color],
                 lit: float = 0.0, window_dark: Color = (50, 55, 65), gables: bool = False) -> None:
    """Facades side by side with window grids; `lit` is the share of lit windows."""
    x = x0
    while x < x1:
        w = float(rng.uniform(50, 140))
        h = float(rng.uniform(min_h, max_h))
        colour = jitter(rng, palette[int(rng.integers(len(palette)))], 12)
        top = base_y - h
        draw.rectangle([x, top, x + w, base_y], fill=colour)
        if gables:
            draw.polygon([(x - 4, top), (x + w / 2, top - w * 0.35), (x + w + 4, top)],
                         fill=jitter(rng, (150, 70, 55), 20))
        cols, rows = max(1, int(w // 22)), max(1, int(h // 26))
        for i in range(cols):
            for j in range(rows - 1):
                wx = x + 6 + i * (w - 8) / cols
                wy = top + 8 + j * 26
                on = rng.random() < lit
                draw.rectangle([wx, wy, wx + 9, wy + 13],
                               fill=jitter(rng, (250, 215, 120), 10) if on else window_dark)
        x += w + float(rng.uniform(0, 12))


def person(draw: ImageDraw.ImageDraw, x: float, feet_y: float, height: float, shirt: Color,
           trousers: Color, skin: Color) -> None:
    head = height * 0.14
    body_top = feet_y - height + head * 1.9
    draw.ellipse([x - head / 2, feet_y - height, x + head / 2, feet_y - height + head * 1.1], fill=skin)
    draw.rounded_rectangle([x - height * 0.13, body_top, x + height * 0.13, feet_y - height * 0.45],
                           radius=max(1, height * 0.05), fill=shirt)
    draw.rectangle([x - height * 0.11, feet_y - height * 0.45, x + height * 0.11, feet_y], fill=trousers)


CLOTHES = [(200, 40, 40), (40, 70, 160), (230, 200, 60), (30, 30, 35), (240, 240, 235),
           (60, 130, 70), (120, 60, 140), (220, 120, 40), (90, 90, 100), (170, 150, 120)]
SKIN = [(224, 172, 140), (190, 130, 95), (140, 95, 65), (95, 65, 45), (240, 200, 170)]


def crowd(draw: ImageDraw.ImageDraw, rng: np.random.Generator, count: int, x0: float, x1: float,
          y_far: float, y_near: float, h_far: float, h_near: float, clothes: list[Color] = CLOTHES) -> None:
    """People in perspective, drawn back to front so nearer ones overlap farther ones."""
    ys = np.sort(rng.uniform(y_far, y_near, count))
    for y in ys:
        t = (y - y_far) / max(1.0, y_near - y_far)
        person(draw, float(rng.uniform(x0, x1)), float(y), h_far + (h_near - h_far) * t,
               clothes[int(rng.integers(len(clothes)))], jitter(rng, (45, 45, 60), 20),
               SKIN[int(rng.integers(len(SKIN)))])


def car(draw: ImageDraw.ImageDraw, x: float, base_y: float, length: float, colour: Color,
        lights: Color | None = None) -> None:
    h = length * 0.32
    draw.rounded_rectangle([x, base_y - h, x + length, base_y - h * 0.15], radius=length * 0.05, fill=colour)
    draw.polygon([(x + length * 0.2, base_y - h), (x + length * 0.3, base_y - h * 1.55),
                  (x + length * 0.72, base_y - h * 1.55), (x + length * 0.84, base_y - h)], fill=colour)
    draw.polygon([(x + length * 0.27, base_y - h * 1.05), (x + length * 0.34, base_y - h * 1.45),
                  (x + length * 0.68, base_y - h * 1.45), (x + length * 0.78, base_y - h * 1.05)],
                 fill=(60, 75, 90))
    for wx in (x + length * 0.22, x + length * 0.78):
        draw.ellipse([wx - h * 0.3, base_y - h * 0.45, wx + h * 0.3, base_y + h * 0.15], fill=(20, 20, 22))
    if lights:
        draw.ellipse([x - 2, base_y - h * 0.8, x + length * 0.07, base_y - h * 0.55], fill=lights)
        draw.ellipse([x + length * 0.93, base_y - h * 0.8, x + length + 2, base_y - h * 0.55], fill=lights)


def truck(draw: ImageDraw.ImageDraw, x: float, base_y: float, length: float, colour: Color,
          lights: Color | None = None) -> None:
    h = length * 0.45
    draw.rectangle([x, base_y - h, x + length * 0.72, base_y - h * 0.12], fill=colour)
    draw.rectangle([x + length * 0.74, base_y - h * 0.7, x + length, base_y - h * 0.12], fill=(70, 80, 95))
    draw.rectangle([x + length * 0.79, base_y - h * 0.62, x + length * 0.95, base_y - h * 0.4], fill=(150, 175, 190))
    for wx in (x + length * 0.15, x + length * 0.55, x + length * 0.86):
        draw.ellipse([wx - h * 0.14, base_y - h * 0.26, wx + h * 0.14, base_y + h * 0.02], fill=(20, 20, 22))
    if lights:
        draw.rectangle([x, base_y - h * 0.3, x + 5, base_y - h * 0.2], fill=lights)


def tree(draw: ImageDraw.ImageDraw, rng: np.random.Generator, x: float, base_y: float, height: float,
         leaf: Color, bare: bool = False) -> None:
    trunk = (70, 52, 38)
    draw.rectangle([x - height * 0.04, base_y - height * 0.55, x + height * 0.04, base_y], fill=trunk)
    if bare:
        for _ in range(6):
            angle = float(rng.uniform(-1.1, 1.1))
            length = height * float(rng.uniform(0.3, 0.5))
            start_y = base_y - height * float(rng.uniform(0.45, 0.6))
            draw.line([(x, start_y), (x + np.sin(angle) * length, start_y - np.cos(angle) * length)],
                      fill=trunk, width=max(1, int(height * 0.02)))
        return
    for _ in range(5):
        cx = x + float(rng.uniform(-0.22, 0.22)) * height
        cy = base_y - height * float(rng.uniform(0.6, 0.85))
        r = height * float(rng.uniform(0.16, 0.26))
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=jitter(rng, leaf, 15))


def pine(draw: ImageDraw.ImageDraw, x: float, base_y: float, height: float, colour: Color) -> None:
    for k in range(3):
        w = height * (0.42 - k * 0.1)
        top = base_y - height * (0.55 + k * 0.2)
        bottom = base_y - height * (0.1 + k * 0.22)
        draw.polygon([(x - w / 2, bottom), (x, top), (x + w / 2, bottom)], fill=colour)
    draw.rectangle([x - height * 0.03, base_y - height * 0.12, x + height * 0.03, base_y], fill=(60, 45, 35))


@dataclass(frozen=True)
class Painted:
    """A finished picture plus named points (fractions of width/height) where edits go."""

    image: Image.Image
    anchors: dict[str, tuple[float, float]] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------
# Scene kinds. Each takes a generator and returns a finished 960x640 picture; the random
# layout (horizon, positions, palettes) is what keeps two scenes of one kind apart.
# ---------------------------------------------------------------------------------------


def scene_flood_street(rng: np.random.Generator) -> Painted:
    horizon = int(rng.uniform(0.38, 0.55) * SCENE_H)
    image = sky(rng, jitter(rng, (150, 160, 172)), jitter(rng, (205, 208, 210)), (120, 125, 135), 0.7)
    draw = ImageDraw.Draw(image)
    palette = [(196, 180, 150), (170, 90, 70), (220, 210, 190), (140, 150, 160), (230, 190, 120)]
    building_row(draw, rng, float(rng.uniform(-80, 0)), SCENE_W, horizon + 60, 140, 330, palette)
    for _ in range(int(rng.integers(2, 5))):
        tree(draw, rng, float(rng.uniform(0, SCENE_W)), horizon + 70, float(rng.uniform(120, 200)), (70, 100, 60))
    for _ in range(int(rng.integers(1, 4))):
        car(draw, float(rng.uniform(0, SCENE_W - 160)), horizon + 95, float(rng.uniform(110, 170)),
            jitter(rng, CLOTHES[int(rng.integers(len(CLOTHES)))], 10))
    waterline = horizon + int(rng.uniform(55, 85))
    image = reflect_into_water(image, rng, waterline, jitter(rng, (125, 105, 72)), murk=0.62)
    draw = ImageDraw.Draw(image)
    crowd(draw, rng, int(rng.integers(2, 6)), 60, SCENE_W - 60, waterline + 30, SCENE_H - 40, 70, 150)
    water_spot = (float(rng.uniform(0.3, 0.7)), (waterline + 0.3 * (SCENE_H - waterline)) / SCENE_H)
    return Painted(finish(image, rng, cast=(4, 2, -4)), {"open_water": water_spot})


def scene_village_flood(rng: np.random.Generator) -> Painted:
    image = sky(rng, (120, 135, 150), (190, 195, 198), (150, 150, 155), 0.8)
    far = ridge(rng, SCENE_H * 0.42, SCENE_H * 0.25, 4)
    image = fill_under(image, far, (70, 95, 70), 0.2, rng)
    near = ridge(rng, SCENE_H * 0.62, SCENE_H * 0.18, 5)
    image = fill_under(image, near, (95, 125, 70), 0.3, rng)
    draw = ImageDraw.Draw(image)
    for _ in range(int(rng.integers(7, 13))):
        x = float(rng.uniform(0, SCENE_W - 60))
        base = float(near[int(min(SCENE_W - 1, x + 20))]) + float(rng.uniform(20, 90))
        w = float(rng.uniform(40, 80))
        draw.rectangle([x, base - w * 0.7, x + w, base], fill=jitter(rng, (215, 200, 175), 20))
        draw.polygon([(x - 6, base - w * 0.7), (x + w / 2, base - w * 1.15), (x + w + 6, base - w * 0.7)],
                     fill=jitter(rng, (120, 60, 50), 25))
    image = reflect_into_water(image, rng, int(SCENE_H * rng.uniform(0.7, 0.8)), (135, 110, 75), murk=0.75)
    return Painted(finish(image, rng, cast=(0, 2, 0)))


def scene_wildfire_hills(rng: np.random.Generator) -> Painted:
    image = sky(rng, jitter(rng, (95, 90, 95)), jitter(rng, (220, 150, 90)), (150, 120, 110), 0.5)
    far = ridge(rng, SCENE_H * rng.uniform(0.45, 0.6), SCENE_H * 0.2, 4)
    image = fill_under(image, far, (95, 85, 75), 0.2, rng)
    near = ridge(rng, SCENE_H * rng.uniform(0.68, 0.8), SCENE_H * 0.15, 6)
    source_x = float(rng.uniform(0.2, 0.8) * SCENE_W)
    source_y = float(far[int(source_x)]) + 10
    image = blend(image, (255, 140, 50), glow(source_x, source_y, SCENE_W * 0.35) * 0.7)
    image = blend(image, jitter(rng, (70, 62, 60)),
                  plume(rng, source_x, source_y, SCENE_H * 0.9, 50, 330, float(rng.uniform(-0.6, 0.6))) * 0.95)
    image = flames(image, rng, source_x - 180, source_x + 180, source_y + 8, 45)
    image = fill_under(image, near, (50, 48, 35), 0.4, rng)
    draw = ImageDraw.Draw(image)
    for _ in range(int(rng.integers(10, 20))):
        x = float(rng.uniform(0, SCENE_W))
        pine(draw, x, float(near[int(min(x, SCENE_W - 1))]) + 30, float(rng.uniform(60, 130)), (28, 32, 25))
    return Painted(finish(image, rng, cast=(8, 0, -8)))


def scene_crowd_plaza(rng: np.random.Generator) -> Painted:
    horizon = int(rng.uniform(0.35, 0.5) * SCENE_H)
    image = sky(rng, jitter(rng, (110, 150, 200)), jitter(rng, (200, 215, 230)), (235, 235, 240), 0.4)
    image = ground(image, rng, horizon, (150, 140, 130), (175, 170, 160))
    draw = ImageDraw.Draw(image)
    # A monumental building across the square: columns under a pediment.
    left = float(rng.uniform(40, 360))
    width = float(rng.uniform(380, 560))
    top = horizon - float(rng.uniform(150, 230))
    stone = jitter(rng, (215, 205, 185), 15)
    draw.rectangle([left, top, left + width, horizon + 10], fill=stone)
    draw.polygon([(left - 10, top), (left + width / 2, top - 70), (left + width + 10, top)], fill=stone)
    for i in range(9):
        cx = left + 25 + i * (width - 50) / 8
        draw.rectangle([cx - 8, top + 25, cx + 8, horizon + 5], fill=(235, 230, 215))
        draw.rectangle([cx - 16, top + 40, cx - 9, horizon], fill=(120, 115, 105))
    for _ in range(int(rng.integers(3, 7))):
        fx = float(rng.uniform(0, SCENE_W))
        draw.line([(fx, horizon + 60), (fx, horizon - 40)], fill=(60, 60, 60), width=3)
        draw.rectangle([fx, horizon - 40, fx + 50, horizon - 10], fill=CLOTHES[int(rng.integers(len(CLOTHES)))])
    crowd(draw, rng, int(rng.integers(260, 380)), -20, SCENE_W + 20, horizon + 15, SCENE_H + 60, 34, 200)
    return Painted(finish(image, rng))


def scene_protest_banner(rng: np.random.Generator, banner_text: str) -> Painted:
    """A street protest with tractors and a big painted banner carrying `banner_text`."""
    horizon = int(rng.uniform(0.34, 0.52) * SCENE_H)
    image = sky(rng, (135, 160, 190), (205, 210, 215), (225, 225, 228), float(rng.uniform(0.2, 0.8)))
    image = ground(image, rng, horizon, (110, 110, 115), (150, 150, 150))
    draw = ImageDraw.Draw(image)
    building_row(draw, rng, -30, SCENE_W, horizon + 5, 170, 300,
                 [(200, 195, 185), (160, 160, 170), (190, 170, 140)])
    for _ in range(int(rng.integers(2, 5))):
        x = float(rng.uniform(0, SCENE_W - 200))
        base = horizon + float(rng.uniform(40, 90))
        draw.rectangle([x, base - 90, x + 120, base - 20], fill=(30, 110, 50))
        draw.rectangle([x + 80, base - 140, x + 150, base - 60], fill=(40, 120, 55))
        draw.ellipse([x + 90, base - 75, x + 170, base + 5], fill=(25, 25, 25))
        draw.ellipse([x - 5, base - 45, x + 45, base + 5], fill=(25, 25, 25))
    crowd(draw, rng, 120, -20, SCENE_W + 20, horizon + 30, SCENE_H + 40, 50, 190)
    x0, y0, x1, y1 = banner_box(rng)
    paint_banner(draw, banner_text, (x0, y0, x1, y1))
    return Painted(finish(image, rng), {"banner_top_left": (x0 / SCENE_W, y0 / SCENE_H),
                                        "banner_bottom_right": (x1 / SCENE_W, y1 / SCENE_H)})


def banner_box(rng: np.random.Generator) -> tuple[float, float, float, float]:
    x0 = float(rng.uniform(60, 340))
    y0 = float(rng.uniform(0.5, 0.64) * SCENE_H)
    return (x0, y0, x0 + 560, y0 + 90)


def paint_banner(draw: ImageDraw.ImageDraw, text: str, box: tuple[float, float, float, float]) -> None:
    x0, y0, x1, y1 = box
    draw.rectangle(box, fill=(245, 240, 225), outline=(90, 80, 60), width=3)
    for x in (x0 + 20, x1 - 20):
        draw.line([(x, y1), (x, y1 + 110)], fill=(90, 70, 50), width=6)
    lettering = font(40)
    width = draw.textlength(text, font=lettering)
    draw.text(((x0 + x1 - width) / 2, y0 + 24), text, font=lettering, fill=(170, 30, 30))


def scene_snow_highway(rng: np.random.Generator) -> Painted:
    horizon = int(rng.uniform(0.38, 0.5) * SCENE_H)
    image = sky(rng, (175, 180, 190), (215, 218, 222), (235, 235, 238), 0.9)
    image = ground(image, rng, horizon, (235, 238, 242), (215, 218, 225), texture=10)
    draw = ImageDraw.Draw(image)
    vx = float(rng.uniform(0.3, 0.7) * SCENE_W)
    draw.polygon([(vx - 10, horizon), (vx + 10, horizon), (SCENE_W * 1.1, SCENE_H), (-SCENE_W * 0.1, SCENE_H)],
                 fill=(170, 172, 178))
    for _ in range(8):
        x = float(rng.uniform(0, SCENE_W))
        tree(draw, rng, x, horizon + 10, float(rng.uniform(60, 120)), (60, 70, 60), bare=True)
    vehicles = sorted(rng.uniform(horizon + 20, SCENE_H - 20, int(rng.integers(4, 8))))
    for y in vehicles:
        t = (y - horizon) / (SCENE_H - horizon)
        x = vx + (float(rng.uniform(-0.6, 0.5))) * t * SCENE_W
        maker = truck if rng.random() < 0.5 else car
        maker(draw, x, float(y), 40 + 260 * t, jitter(rng, (150, 40, 40), 60), lights=(255, 80, 60))
        draw.rectangle([x, y - (40 + 260 * t) * 0.45, x + (40 + 260 * t) * 0.7, y - (40 + 260 * t) * 0.4],
                       fill=(245, 246, 248))
    image = blend(image, (230, 232, 236), rows_mask(0, SCENE_H) * 0.25)
    flakes = (rng.random((SCENE_H, SCENE_W)) > 0.992).astype(np.float32)
    return Painted(finish(blend(image, (255, 255, 255), flakes * 0.9), rng, cast=(-4, 0, 6)))


def scene_harbor(rng: np.random.Generator) -> Painted:
    horizon = int(rng.uniform(0.45, 0.58) * SCENE_H)
    image = sky(rng, (120, 150, 185), (200, 200, 195), (210, 210, 212), 0.5)
    draw = ImageDraw.Draw(image)
    for _ in range(int(rng.integers(3, 6))):
        x = float(rng.uniform(0, SCENE_W))
        draw.line([(x, horizon), (x, horizon - 200)], fill=(200, 80, 40), width=8)
        draw.line([(x - 120, horizon - 190), (x + 90, horizon - 190)], fill=(200, 80, 40), width=10)
    building_row(draw, rng, 0, SCENE_W, horizon, 20, 70, [(120, 120, 125), (160, 150, 140)])
    ship_x = float(rng.uniform(60, 380))
    hull_y = horizon + 40
    draw.polygon([(ship_x, hull_y - 60), (ship_x + 520, hull_y - 60), (ship_x + 490, hull_y),
                  (ship_x + 30, hull_y)], fill=(40, 50, 70))
    for i in range(14):
        for j in range(3):
            draw.rectangle([ship_x + 40 + i * 30, hull_y - 90 - j * 22, ship_x + 67 + i * 30, hull_y - 70 - j * 22],
                           fill=CLOTHES[int(rng.integers(len(CLOTHES)))])
    draw.rectangle([ship_x + 450, hull_y - 150, ship_x + 500, hull_y - 60], fill=(235, 235, 230))
    image = reflect_into_water(image, rng, hull_y, (40, 70, 95), murk=0.55)
    fire_x = ship_x + float(rng.uniform(120, 360))
    image = blend(image, (30, 30, 32), plume(rng, fire_x, hull_y - 100, SCENE_H * 0.7, 40, 220,
                                             float(rng.uniform(0.2, 0.9))))
    image = flames(image, rng, fire_x - 60, fire_x + 60, hull_y - 90, 40)
    return Painted(finish(image, rng))


def scene_dust_skyline(rng: np.random.Generator) -> Painted:
    haze = jitter(rng, (210, 140, 70), 12)
    image = to_image(vertical_gradient(haze, tuple(int(c * 0.8) for c in haze)))
    for layer, (min_h, max_h, fade) in enumerate([(200, 420, 0.75), (120, 300, 0.5), (60, 180, 0.2)]):
        draw = ImageDraw.Draw(image)
        base = SCENE_H * (0.7 + 0.1 * layer)
        colour = tuple(int(c * (0.35 + fade * 0.6)) for c in haze)
        building_row(draw, rng, float(rng.uniform(-100, 0)), SCENE_W, base, min_h, max_h, [colour],
                     window_dark=tuple(int(c * 0.9) for c in colour))
    image = ground(image, rng, int(SCENE_H * 0.9), (90, 65, 40), (120, 85, 50))
    draw = ImageDraw.Draw(image)
    crowd(draw, rng, 14, 0, SCENE_W, SCENE_H * 0.9, SCENE_H + 20, 80, 130,
          clothes=[(60, 50, 45), (90, 70, 50), (40, 40, 45)])
    dust = fractal_noise(rng, SCENE_H, SCENE_W, cells=2, octaves=4) * 0.35
    return Painted(finish(blend(image, haze, dust), rng, grain=4.5, cast=(6, 0, -10)))


def scene_rubble(rng: np.random.Generator) -> Painted:
    image = sky(rng, (160, 170, 180), (210, 205, 200), (200, 198, 195), 0.6)
    draw = ImageDraw.Draw(image)
    for _ in range(int(rng.integers(2, 4))):
        x = float(rng.uniform(-50, SCENE_W - 200))
        w = float(rng.uniform(200, 330))
        top = float(rng.uniform(0.15, 0.35) * SCENE_H)
        jag = [(x + k * w / 8, top + float(rng.uniform(0, 90))) for k in range(9)]
        draw.polygon([(x, SCENE_H * 0.75)] + jag + [(x + w, SCENE_H * 0.75)], fill=jitter(rng, (175, 165, 150), 15))
        for i in range(int(w // 40)):
            for j in range(6):
                wy = top + 100 + j * 45
                if rng.random() < 0.8:
                    draw.rectangle([x + 12 + i * 40, wy, x + 34 + i * 40, wy + 26], fill=(45, 45, 50))
    for _ in range(500):
        cx = float(rng.uniform(0, SCENE_W))
        cy = float(rng.uniform(0.55, 1.0) * SCENE_H)
        r = float(rng.uniform(6, 40)) * (cy / SCENE_H)
        points = [(cx + r * np.cos(a) * rng.uniform(0.5, 1.2), cy + r * np.sin(a) * rng.uniform(0.5, 1.2))
                  for a in np.linspace(0, 2 * np.pi, 6, endpoint=False)]
        grey = int(rng.integers(90, 200))
        draw.polygon([(float(px), float(py)) for px, py in points], fill=(grey, grey - 8, grey - 16))
    crowd(draw, rng, int(rng.integers(5, 10)), 40, SCENE_W - 40, SCENE_H * 0.6, SCENE_H * 0.95, 70, 140,
          clothes=[(235, 110, 30), (240, 200, 40), (220, 90, 30)])
    image = blend(image, (200, 195, 185), fractal_noise(rng, SCENE_H, SCENE_W, 2, 4) * 0.25)
    return Painted(finish(image, rng))


def scene_highway_traffic(rng: np.random.Generator) -> Painted:
    horizon = int(rng.uniform(0.32, 0.45) * SCENE_H)
    image = sky(rng, (90, 130, 190), (230, 200, 160), (240, 235, 230), 0.3)
    image = ground(image, rng, horizon, (120, 140, 90), (150, 160, 120))
    draw = ImageDraw.Draw(image)
    vx = float(rng.uniform(0.35, 0.65) * SCENE_W)
    draw.polygon([(vx - 20, horizon), (vx + 20, horizon), (SCENE_W * 1.3, SCENE_H), (-SCENE_W * 0.3, SCENE_H)],
                 fill=(95, 95, 100))
    for lane in (-0.5, 0.0, 0.5):
        draw.line([(vx + lane * 20, horizon), (vx + lane * SCENE_W * 1.6, SCENE_H)], fill=(230, 230, 200), width=3)
    for _ in range(70):
        t = float(rng.uniform(0.02, 1.0)) ** 1.6
        y = horizon + t * (SCENE_H - horizon)
        lane = float(rng.uniform(-0.75, 0.75))
        length = 20 + 230 * t
        car(draw, vx + lane * t * SCENE_W * 1.3 - length / 2, y, length,
            jitter(rng, CLOTHES[int(rng.integers(len(CLOTHES)))], 20), lights=(240, 40, 30))
    for _ in range(6):
        x = float(rng.uniform(0, SCENE_W))
        draw.line([(x, horizon + 5), (x, horizon - 90)], fill=(70, 70, 70), width=4)
    return Painted(finish(image, rng, cast=(6, 2, -4)))


def scene_storm_field(rng: np.random.Generator) -> Painted:
    horizon = int(rng.uniform(0.55, 0.7) * SCENE_H)
    image = sky(rng, (60, 70, 80), (170, 170, 150), (40, 45, 55), 0.75)
    ys, xs = np.mgrid[0:SCENE_H, 0:SCENE_W].astype(np.float32)
    cx = float(rng.uniform(0.3, 0.7) * SCENE_W)
    shelf = np.clip(1 - np.abs((ys - horizon * 0.45) / (horizon * 0.25))
                    - ((xs - cx) / (SCENE_W * 0.8)) ** 2, 0, 1)
    image = blend(image, (35, 40, 50), shelf * 0.9)
    image = blend(image, (140, 150, 130), glow(cx, horizon, SCENE_W * 0.4) * 0.5)
    image = ground(image, rng, horizon, (70, 110, 50), (100, 120, 70))
    draw = ImageDraw.Draw(image)
    for k in range(18):
        x = k * SCENE_W / 17
        draw.line([(x, horizon + 40), (x, horizon + 5)], fill=(80, 70, 60), width=3)
    draw.line([(0, horizon + 15), (SCENE_W, horizon + 15)], fill=(80, 70, 60), width=2)
    for _ in range(int(rng.integers(1, 3))):
        x = float(rng.uniform(0, SCENE_W - 120))
        draw.rectangle([x, horizon - 45, x + 110, horizon + 5], fill=(150, 40, 35))
        draw.polygon([(x - 8, horizon - 45), (x + 55, horizon - 85), (x + 118, horizon - 45)], fill=(90, 90, 95))
    return Painted(finish(image, rng, cast=(-4, 4, 0)))


def scene_storm_city(rng: np.random.Generator) -> Painted:
    image = sky(rng, (55, 60, 70), (140, 140, 145), (80, 82, 90), 0.8)
    hill = ridge(rng, SCENE_H * rng.uniform(0.55, 0.65), SCENE_H * 0.2, 3)
    image = fill_under(image, hill, (120, 115, 105), 0.1, rng)
    draw = ImageDraw.Draw(image)
    for _ in range(140):
        x = float(rng.uniform(-20, SCENE_W))
        base = float(hill[int(np.clip(x, 0, SCENE_W - 1))]) + float(rng.uniform(10, SCENE_H * 0.45))
        w = float(rng.uniform(30, 70))
        draw.rectangle([x, base - w * 0.6, x + w, base], fill=jitter(rng, (225, 220, 205), 20))
        draw.polygon([(x - 3, base - w * 0.6), (x + w / 2, base - w * 0.85), (x + w + 3, base - w * 0.6)],
                     fill=jitter(rng, (185, 85, 60), 20))
    rain = fractal_noise(rng, SCENE_H, SCENE_W, cells=30, octaves=1, stretch_x=0.05)
    touchdown_x = float(rng.uniform(0.25, 0.75))
    touchdown_y = float(hill[int(touchdown_x * SCENE_W)]) / SCENE_H + 0.04
    return Painted(finish(blend(image, (170, 175, 185), (rain > 0.75) * 0.25), rng, cast=(-6, -2, 4)),
                   {"touchdown": (touchdown_x, touchdown_y)})


def scene_night_skyline(rng: np.random.Generator, lit: float = 0.45, dusk: bool = False) -> Painted:
    """A skyline across water at night; at dusk the sky still glows and a tower stands out."""
    horizon_sky = (235, 150, 110) if dusk else (40, 45, 70)
    image = to_image(vertical_gradient(jitter(rng, (20, 26, 70) if dusk else (10, 14, 30), 6),
                                       jitter(rng, horizon_sky, 10)))
    image = blend(image, (60, 60, 90), fractal_noise(rng, SCENE_H, SCENE_W, 2, 4) * 0.3)
    draw = ImageDraw.Draw(image)
    waterline = int(rng.uniform(0.72, 0.82) * SCENE_H)
    tallest = 260 if dusk else 430
    building_row(draw, rng, float(rng.uniform(-60, 0)), SCENE_W, waterline, 80, tallest,
                 [(25, 28, 40), (35, 38, 50), (20, 22, 30)], lit=lit, window_dark=(15, 17, 25))
    if dusk:
        tx = float(rng.uniform(0.55, 0.85) * SCENE_W)
        top = waterline * float(rng.uniform(0.3, 0.45))
        draw.line([(tx, waterline), (tx, top + 20)], fill=(40, 42, 55), width=10)
        draw.ellipse([tx - 60, top, tx + 60, top + 35], fill=(50, 52, 70))
        draw.line([(tx, top), (tx, top - 50)], fill=(60, 60, 70), width=3)
    image = reflect_into_water(image, rng, waterline, (10, 12, 25), murk=0.5)
    open_sky = (float(rng.uniform(0.15, 0.4)), float(rng.uniform(0.1, 0.2)))
    return Painted(finish(image, rng, grain=5, vignette=0.35), {"open_sky": open_sky})


def scene_stadium(rng: np.random.Generator) -> Painted:
    image = to_image(vertical_gradient(jitter(rng, (40, 60, 110)), (150, 160, 180)))
    ys, xs = np.mgrid[0:SCENE_H, 0:SCENE_W].astype(np.float32)
    cx = SCENE_W / 2 + float(rng.uniform(-220, 220))
    cy = SCENE_H * float(rng.uniform(0.55, 0.8))
    rx, ry = SCENE_W * float(rng.uniform(0.6, 0.95)), SCENE_H * float(rng.uniform(0.45, 0.75))
    outer = ((xs - cx) / rx) ** 2 + ((ys - cy) / ry) ** 2 < 1
    upper_tier = outer & (((xs - cx) / (rx * 0.8)) ** 2 + ((ys - cy) / (ry * 0.8)) ** 2 > 1)
    pitch = ((xs - cx) / (rx * float(rng.uniform(0.4, 0.55)))) ** 2 + ((ys - cy) / (ry * 0.3)) ** 2 < 1
    array = to_array(image)
    speckle = rng.integers(0, len(CLOTHES), (SCENE_H, SCENE_W))
    colours = np.array(CLOTHES, np.float32)[speckle] * 0.8
    array[outer] = colours[outer]
    array[upper_tier] *= float(rng.uniform(0.45, 0.7))
    array[pitch] = np.array(jitter(rng, (60, 140, 60), 15), np.float32) + (rng.random((int(pitch.sum()), 1)) * 20)
    roof = int(rng.uniform(0.05, 0.22) * SCENE_H)
    array[:roof] = np.array((35, 38, 45), np.float32)
    image = to_image(array).filter(ImageFilter.GaussianBlur(0.8))
    draw = ImageDraw.Draw(image)
    for k in range(int(rng.integers(3, 8))):
        x = float(rng.uniform(0, SCENE_W))
        draw.rectangle([x - 25, roof - 14, x + 25, roof - 2], fill=(255, 250, 220))
    screen_x = float(rng.uniform(0.1, 0.7) * SCENE_W)
    draw.rectangle([screen_x, roof + 20, screen_x + 190, roof + 110], fill=(25, 25, 30))
    draw.rectangle([screen_x + 8, roof + 28, screen_x + 182, roof + 102], fill=jitter(rng, (70, 120, 200), 40))
    return Painted(finish(image, rng))


def scene_industrial_fire(rng: np.random.Generator) -> Painted:
    horizon = int(rng.uniform(0.6, 0.72) * SCENE_H)
    image = sky(rng, (100, 140, 190), (200, 210, 220), (230, 230, 230), 0.3)
    image = ground(image, rng, horizon, (95, 95, 90), (130, 128, 120))
    draw = ImageDraw.Draw(image)
    tanks = []
    x = float(rng.uniform(-40, 60))
    while x < SCENE_W:
        w = float(rng.uniform(90, 170))
        h = float(rng.uniform(70, 150))
        draw.rectangle([x, horizon - h, x + w, horizon + 10], fill=jitter(rng, (215, 215, 210), 10))
        draw.ellipse([x, horizon - h - 12, x + w, horizon - h + 12], fill=(190, 190, 185))
        tanks.append((x + w / 2, horizon - h))
        x += w + float(rng.uniform(20, 90))
    for _ in range(3):
        px = float(rng.uniform(0, SCENE_W))
        draw.rectangle([px, horizon - 260, px + 14, horizon], fill=(150, 60, 50))
    source_x, source_y = tanks[int(rng.integers(len(tanks)))]
    image = blend(image, (20, 20, 22), plume(rng, source_x, source_y, SCENE_H * 0.85, 45, 300,
                                             float(rng.uniform(-0.7, 0.7))))
    image = flames(image, rng, source_x - 70, source_x + 70, source_y + 5, 60)
    calm_x, calm_y = max(tanks, key=lambda tank: abs(tank[0] - source_x))
    return Painted(finish(image, rng), {"intact_tank": (calm_x / SCENE_W, calm_y / SCENE_H)})


def scene_empty_street(rng: np.random.Generator) -> Painted:
    image = sky(rng, (100, 150, 210), (200, 220, 235), (245, 245, 245), 0.2)
    vx = float(rng.uniform(0.28, 0.72) * SCENE_W)
    vy = float(rng.uniform(0.32, 0.52) * SCENE_H)
    draw = ImageDraw.Draw(image)
    draw.polygon([(vx, vy), (SCENE_W, SCENE_H), (0, SCENE_H)], fill=(85, 85, 90))
    draw.polygon([(vx, vy), (0, SCENE_H), (0, SCENE_H * 0.92)], fill=(150, 145, 140))
    draw.polygon([(vx, vy), (SCENE_W, SCENE_H), (SCENE_W, SCENE_H * 0.92)], fill=(150, 145, 140))
    for side, edge in ((-1, 0.0), (1, float(SCENE_W))):
        for k in range(6):
            t0, t1 = 0.12 + k * 0.15, 0.12 + (k + 1) * 0.15
            top0 = vy - (vy - float(rng.uniform(-0.3, 0.3)) * SCENE_H) * t0 * 1.2
            top1 = vy - (vy - float(rng.uniform(-0.3, 0.3)) * SCENE_H) * t1 * 1.2
            xa, xb = vx + (edge - vx) * t0, vx + (edge - vx) * t1
            ya, yb = vy + (SCENE_H * 0.92 - vy) * t0, vy + (SCENE_H * 0.92 - vy) * t1
            draw.polygon([(xa, top0), (xb, top1), (xb, yb), (xa, ya)],
                         fill=jitter(rng, [(200, 170, 130), (170, 175, 180), (220, 210, 195), (120, 90, 80),
                                           (235, 235, 230)][int(rng.integers(5))], 15))
            draw.polygon([(xa, ya - (ya - top0) * 0.25), (xb, yb - (yb - top1) * 0.25), (xb, yb), (xa, ya)],
                         fill=(70, 72, 78))
    for k in range(1, 8):
        t = k / 8
        draw.line([(vx, vy + (SCENE_H - vy) * t * t), (vx, vy + (SCENE_H - vy) * (t * t + 0.03))],
                  fill=(235, 235, 225), width=max(1, int(8 * t)))
    return Painted(finish(image, rng), {"carriageway": (vx / SCENE_W + 0.06, (vy + 0.45 * (SCENE_H - vy)) / SCENE_H)})


def scene_mountain_lake(rng: np.random.Generator) -> Painted:
    image = sky(rng, (70, 120, 200), (190, 215, 235), (250, 250, 250), 0.15)
    peak_x = float(rng.uniform(0.2, 0.8) * SCENE_W)
    peak_y = float(rng.uniform(0.1, 0.3) * SCENE_H)
    waterline = int(rng.uniform(0.55, 0.72) * SCENE_H)
    xs = np.arange(SCENE_W, dtype=np.float32)
    slope = peak_y + np.abs(xs - peak_x) ** float(rng.uniform(1.05, 1.2)) * float(rng.uniform(0.4, 0.8))
    image = fill_under(image, np.minimum(slope, waterline), (90, 100, 130), 0.0, rng)
    cap = np.where(slope < peak_y + 90, slope, SCENE_H + 1)
    image = fill_under(image, cap, (245, 247, 252), 0.0)
    image = blend(image, (90, 100, 130), ((np.arange(SCENE_H)[:, None] > peak_y + 90 +
                                           smooth_noise(rng, 1, SCENE_W, 1, 30)[0][None, :] * 50)
                                          & (np.arange(SCENE_H)[:, None] < waterline)).astype(np.float32))
    draw = ImageDraw.Draw(image)
    for _ in range(30):
        x = float(rng.uniform(0, SCENE_W))
        pine(draw, x, waterline + 5, float(rng.uniform(30, 70)), (30, 60, 40))
    image = reflect_into_water(image, rng, waterline + 5, (40, 70, 110), murk=0.35)
    draw = ImageDraw.Draw(image)
    for _ in range(6):
        x = float(rng.uniform(0, SCENE_W))
        pine(draw, x, SCENE_H + 20, float(rng.uniform(160, 260)), (20, 40, 28))
    return Painted(finish(image, rng, cast=(-4, 0, 6)), {"summit": (peak_x / SCENE_W, peak_y / SCENE_H)})


def scene_hail_street(rng: np.random.Generator) -> Painted:
    horizon = int(rng.uniform(0.32, 0.42) * SCENE_H)
    image = sky(rng, (90, 95, 105), (160, 160, 165), (120, 120, 125), 0.9)
    image = ground(image, rng, horizon, (80, 80, 85), (110, 110, 112))
    draw = ImageDraw.Draw(image)
    building_row(draw, rng, -40, SCENE_W, horizon + 10, 120, 260, [(210, 190, 160), (235, 225, 205), (180, 120, 90)])
    for row, y in enumerate((horizon + 110, horizon + 230, SCENE_H - 20)):
        x = float(rng.uniform(-120, 0))
        while x < SCENE_W:
            length = 150 + row * 60
            car(draw, x, y, length, jitter(rng, CLOTHES[int(rng.integers(len(CLOTHES)))], 20))
            x += length + float(rng.uniform(10, 60))
    stones = (rng.random((SCENE_H, SCENE_W)) > 0.993) & (np.arange(SCENE_H)[:, None] > horizon)
    image = blend(image, (245, 248, 250), stones.astype(np.float32))
    image = image.filter(ImageFilter.MaxFilter(3))
    return Painted(finish(image, rng, cast=(-4, 0, 4)))


def scene_market_fire(rng: np.random.Generator) -> Painted:
    horizon = int(rng.uniform(0.5, 0.6) * SCENE_H)
    image = sky(rng, (130, 140, 150), (220, 200, 170), (180, 175, 170), 0.5)
    image = ground(image, rng, horizon, (120, 95, 70), (150, 125, 95))
    draw = ImageDraw.Draw(image)
    building_row(draw, rng, -30, SCENE_W, horizon, 80, 180, [(190, 170, 130), (150, 150, 140)])
    for _ in range(20):
        x = float(rng.uniform(-40, SCENE_W))
        y = float(rng.uniform(horizon + 20, SCENE_H - 40))
        w = 60 + (y - horizon) * 0.6
        colour = jitter(rng, [(40, 90, 170), (200, 60, 50), (230, 200, 70), (60, 140, 90)][int(rng.integers(4))], 15)
        draw.polygon([(x, y - w * 0.6), (x + w, y - w * 0.6), (x + w * 1.1, y - w * 0.35), (x - w * 0.1, y - w * 0.35)],
                     fill=colour)
        draw.rectangle([x, y - w * 0.35, x + w, y], fill=(110, 85, 60))
    fire_x = float(rng.uniform(0.2, 0.8) * SCENE_W)
    image = blend(image, (45, 42, 40), plume(rng, fire_x, horizon, SCENE_H * 0.6, 80, 260, float(rng.uniform(-0.8, 0.8))))
    image = flames(image, rng, fire_x - 120, fire_x + 120, horizon + 20, 70)
    draw = ImageDraw.Draw(image)
    crowd(draw, rng, 25, 0, SCENE_W, horizon + 60, SCENE_H + 30, 70, 170)
    return Painted(finish(image, rng))


def scene_queue_street(rng: np.random.Generator) -> Painted:
    horizon = int(rng.uniform(0.4, 0.5) * SCENE_H)
    image = sky(rng, (160, 185, 215), (235, 230, 215), (250, 250, 250), 0.1)
    image = ground(image, rng, horizon, (175, 150, 120), (200, 180, 150))
    draw = ImageDraw.Draw(image)
    building_row(draw, rng, -30, SCENE_W, horizon + 5, 100, 230,
                 [(240, 220, 180), (120, 190, 200), (230, 150, 150), (245, 245, 235)])
    tanker_x = float(rng.uniform(SCENE_W * 0.55, SCENE_W * 0.7))
    truck(draw, tanker_x, horizon + 120, 300, (90, 120, 170))
    draw.ellipse([tanker_x + 10, horizon - 10, tanker_x + 210, horizon + 95], fill=(200, 200, 205))
    for k in range(22):
        t = k / 22
        x = tanker_x - 20 - t * SCENE_W * 0.55
        y = horizon + 125 + t * (SCENE_H - horizon - 140)
        height = 90 + 110 * t
        person(draw, x, y, height, CLOTHES[int(rng.integers(len(CLOTHES)))], jitter(rng, (50, 50, 70), 20),
               SKIN[int(rng.integers(len(SKIN)))])
        pot = [(230, 60, 60), (60, 90, 200), (240, 200, 60)][int(rng.integers(3))]
        draw.rectangle([x + height * 0.15, y - height * 0.25, x + height * 0.32, y], fill=pot)
    return Painted(finish(image, rng, cast=(6, 3, -6)))


def scene_powerlines(rng: np.random.Generator) -> Painted:
    horizon = int(rng.uniform(0.55, 0.65) * SCENE_H)
    image = sky(rng, (170, 180, 195), (220, 225, 232), (230, 232, 236), 0.8)
    image = ground(image, rng, horizon, (225, 230, 236), (205, 210, 218), texture=12)
    draw = ImageDraw.Draw(image)
    poles = sorted(float(x) for x in rng.uniform(0, SCENE_W, 4))
    fallen = int(rng.integers(len(poles)))
    for i, x in enumerate(poles):
        if i == fallen:
            draw.line([(x, horizon + 40), (x + 230, horizon + 10)], fill=(70, 55, 45), width=14)
            continue
        draw.line([(x, horizon + 40), (x, horizon - 280)], fill=(70, 55, 45), width=12)
        draw.line([(x - 60, horizon - 260), (x + 60, horizon - 260)], fill=(70, 55, 45), width=8)
    for k in range(3):
        for a, b in zip(poles, poles[1:]):
            sag = 60 if fallen in (poles.index(a), poles.index(b)) else 18
            points = [(a + (b - a) * s, horizon - 255 + k * 6 + sag * 4 * s * (1 - s)) for s in np.linspace(0, 1, 20)]
            draw.line([(float(px), float(py)) for px, py in points], fill=(40, 40, 45), width=3)
    for _ in range(7):
        tree(draw, rng, float(rng.uniform(0, SCENE_W)), horizon + 30, float(rng.uniform(150, 260)), (0, 0, 0), bare=True)
    ice = fractal_noise(rng, SCENE_H, SCENE_W, cells=5, octaves=3) * 0.3
    return Painted(finish(blend(image, (235, 242, 250), ice), rng, cast=(-6, 0, 8)))


def scene_beach(rng: np.random.Generator) -> Painted:
    horizon = int(rng.uniform(0.35, 0.45) * SCENE_H)
    image = sky(rng, (120, 160, 200), (215, 220, 220), (240, 240, 240), 0.4)
    array = to_array(image)
    sea = vertical_gradient((60, 100, 120), (90, 140, 150), h=90)
    array[horizon:horizon + 90] = sea + (fractal_noise(rng, 90, SCENE_W, 4, 3, 6.0)[..., None] - 0.5) * 30
    image = ground(to_image(array), rng, horizon + 90, (200, 180, 140), (170, 155, 125))
    foam = (np.abs(np.arange(SCENE_H)[:, None] - (horizon + 90 + smooth_noise(rng, 1, SCENE_W, 1, 12)[0] * 25)) < 6)
    image = blend(image, (245, 245, 240), foam.astype(np.float32) * 0.8)
    draw = ImageDraw.Draw(image)
    for _ in range(260):
        y = float(rng.uniform(horizon + 110, SCENE_H))
        size = 6 + 30 * (y - horizon) / SCENE_H
        x = float(rng.uniform(0, SCENE_W))
        draw.ellipse([x, y - size * 0.25, x + size, y + size * 0.25], fill=jitter(rng, (190, 195, 200), 20))
    crowd(draw, rng, 4, 0, SCENE_W, horizon + 100, horizon + 170, 50, 80)
    return Painted(finish(image, rng))


SCENE_KINDS: dict[str, Callable[[np.random.Generator], Painted]] = {
    "flood_street": scene_flood_street,
    "village_flood": scene_village_flood,
    "wildfire_hills": scene_wildfire_hills,
    "crowd_plaza": scene_crowd_plaza,
    "snow_highway": scene_snow_highway,
    "harbor": scene_harbor,
    "dust_skyline": scene_dust_skyline,
    "rubble": scene_rubble,
    "highway_traffic": scene_highway_traffic,
    "storm_field": scene_storm_field,
    "storm_city": scene_storm_city,
    "night_skyline": scene_night_skyline,
    "night_skyline_dark": lambda rng: scene_night_skyline(rng, lit=0.04),
    "night_skyline_tower": lambda rng: scene_night_skyline(rng, lit=0.5, dusk=True),
    "stadium": scene_stadium,
    "industrial_fire": scene_industrial_fire,
    "empty_street": scene_empty_street,
    "mountain_lake": scene_mountain_lake,
    "hail_street": scene_hail_street,
    "market_fire": scene_market_fire,
    "queue_street": scene_queue_street,
    "powerlines": scene_powerlines,
    "beach": scene_beach,
    "protest_fair_prices": lambda rng: scene_protest_banner(rng, "FAIR PRICES FOR FARMERS"),
    "protest_no_farmers": lambda rng: scene_protest_banner(rng, "NO FARMERS, NO FOOD"),
}


def render_scene(kind: str, name: str) -> Painted:
    return SCENE_KINDS[kind](rng_for("scene", name))


# ---------------------------------------------------------------------------------------
# Manipulations: each pastes or repaints one local region of a finished picture, the way
# a hoaxer edits a real news photo. The rest of the frame is untouched, so the edit keeps a
# near-duplicate perceptual hash of the original while differing where it matters.
# ---------------------------------------------------------------------------------------


def anchor_xy(painted: Painted, name: str) -> tuple[float, float]:
    fx, fy = painted.anchors[name]
    return fx * SCENE_W, fy * SCENE_H


def paste_layer(base: Image.Image, layer: Image.Image, rng: np.random.Generator, grain: float = 4.0) -> Image.Image:
    """Composite an RGBA layer, softened and grained so the paste is not trivially flat."""
    layer = layer.filter(ImageFilter.GaussianBlur(0.8))
    merged = Image.alpha_composite(base.convert("RGBA"), layer).convert("RGB")
    alpha = np.asarray(layer, np.float32)[..., 3:] / 255.0
    noise = rng.normal(0, grain, alpha.shape[:2]).astype(np.float32)[..., None]
    return to_image(to_array(merged) + noise * alpha)


def new_layer() -> tuple[Image.Image, ImageDraw.ImageDraw]:
    layer = Image.new("RGBA", (SCENE_W, SCENE_H), (0, 0, 0, 0))
    return layer, ImageDraw.Draw(layer)


def edit_shark_fin(painted: Painted, rng: np.random.Generator) -> Image.Image:
    x, y = anchor_xy(painted, "open_water")
    layer, draw = new_layer()
    draw.ellipse([x - 70, y - 8, x + 80, y + 14], fill=(40, 35, 30, 90))
    draw.polygon([(x - 40, y), (x - 12, y - 45), (x + 4, y - 88), (x + 14, y - 62), (x + 44, y)],
                 fill=(72, 78, 84, 255))
    draw.polygon([(x + 4, y - 88), (x + 14, y - 62), (x + 44, y), (x + 20, y)], fill=(52, 56, 62, 255))
    for k in range(3):
        draw.arc([x - 60 - k * 22, y - 10 - k * 4, x + 70 + k * 22, y + 14 + k * 4], 0, 180,
                 fill=(215, 210, 195, 160 - k * 40), width=3)
    return paste_layer(painted.image, layer, rng)


def edit_second_fireball(painted: Painted, rng: np.random.Generator) -> Image.Image:
    x, y = anchor_xy(painted, "intact_tank")
    image = blend(painted.image, (255, 150, 50), glow(x, y - 40, 120) * 0.8)
    smoke = plume(rng, x, y - 40, SCENE_H * 0.35, 35, 110, float(rng.uniform(-0.3, 0.3)))
    image = blend(image, (35, 30, 28), smoke * 0.9)
    layer, draw = new_layer()
    draw.ellipse([x - 75, y - 110, x + 75, y + 5], fill=(255, 200, 90, 235))
    draw.ellipse([x - 40, y - 80, x + 40, y - 15], fill=(255, 245, 200, 255))
    return paste_layer(image, layer, rng)


def edit_lion(painted: Painted, rng: np.random.Generator) -> Image.Image:
    x, y = anchor_xy(painted, "carriageway")
    layer, draw = new_layer()
    tawny, mane = (192, 144, 78, 255), (120, 78, 38, 255)
    draw.ellipse([x - 80, y + 28, x + 90, y + 48], fill=(30, 30, 30, 110))
    for leg_x in (x - 55, x - 35, x + 35, x + 55):
        draw.rectangle([leg_x - 8, y - 5, leg_x + 8, y + 38], fill=tawny)
    draw.ellipse([x - 75, y - 45, x + 65, y + 12], fill=tawny)
    draw.line([(x - 72, y - 20), (x - 105, y - 45), (x - 112, y - 30)], fill=tawny, width=6)
    draw.ellipse([x + 40, y - 80, x + 110, y - 10], fill=mane)
    draw.ellipse([x + 58, y - 62, x + 100, y - 22], fill=tawny)
    draw.ellipse([x + 86, y - 50, x + 92, y - 44], fill=(20, 20, 20, 255))
    return paste_layer(painted.image, layer, rng)


def edit_tornado(painted: Painted, rng: np.random.Generator) -> Image.Image:
    x, y = anchor_xy(painted, "touchdown")
    ys, xs = np.mgrid[0:SCENE_H, 0:SCENE_W].astype(np.float32)
    top = SCENE_H * 0.08
    t = np.clip((ys - top) / (y - top), 0, 1)
    centre = x + 40 * np.sin(t * 3.0) - 60 * (1 - t)
    half_width = 110 * (1 - t) ** 1.8 + 9
    funnel = (np.abs(xs - centre) < half_width) & (ys > top) & (ys < y)
    texture = fractal_noise(rng, SCENE_H, SCENE_W, cells=10, octaves=3)
    image = blend(painted.image, (62, 64, 70), funnel * (0.75 + 0.25 * texture))
    debris = glow(x, y, 70) * 0.8
    return blend(image, (110, 95, 80), debris)


def edit_eruption(painted: Painted, rng: np.random.Generator) -> Image.Image:
    x, y = anchor_xy(painted, "summit")
    ash = plume(rng, x, y + 5, y + 5, 25, 170, float(rng.uniform(-0.4, 0.4)))
    image = blend(painted.image, (85, 78, 72), ash * 0.95)
    image = blend(image, (255, 110, 40), glow(x, y + 8, 45) * 0.9)
    layer, draw = new_layer()
    for dx in (-30, -12, 10, 26):
        draw.line([(x + dx * 0.2, y + 6), (x + dx, y + 70 + abs(dx))], fill=(255, 120, 40, 220), width=4)
    return paste_layer(image, layer, rng)


def edit_glowing_craft(painted: Painted, rng: np.random.Generator) -> Image.Image:
    x, y = anchor_xy(painted, "open_sky")
    image = blend(painted.image, (170, 220, 255), glow(x, y, 70) * 0.3)
    ys, xs = np.mgrid[0:SCENE_H, 0:SCENE_W].astype(np.float32)
    beam = (ys > y) & (np.abs(xs - x) < 14 + (ys - y) * 0.3)
    image = blend(image, (190, 230, 255), beam * 0.1 * np.clip(1 - (ys - y) / 160, 0, 1))
    layer, draw = new_layer()
    draw.ellipse([x - 24, y - 24, x + 24, y + 2], fill=(150, 170, 185, 255))
    draw.ellipse([x - 60, y - 12, x + 60, y + 12], fill=(120, 130, 140, 255))
    for k in range(5):
        lx = x - 44 + k * 22
        draw.ellipse([lx - 4, y - 2, lx + 4, y + 6], fill=(255, 250, 190, 255))
    return paste_layer(image, layer, rng)


def edit_banner_text(painted: Painted, rng: np.random.Generator, text: str) -> Image.Image:
    x0, y0 = anchor_xy(painted, "banner_top_left")
    x1, y1 = anchor_xy(painted, "banner_bottom_right")
    layer, draw = new_layer()
    paint_banner(draw, text, (x0, y0, x1, y1))
    # Only the cloth is replaced; the poles below it stay as photographed.
    layer = layer.crop((0, 0, SCENE_W, int(y1) + 2))
    full = Image.new("RGBA", (SCENE_W, SCENE_H), (0, 0, 0, 0))
    full.paste(layer, (0, 0))
    return paste_layer(painted.image, full, rng, grain=3.0)


# ---------------------------------------------------------------------------------------
# Printed claims: the agent's only input is the picture, so the claim is part of it.
# ---------------------------------------------------------------------------------------

POST_TEXT, POST_MUTED, BAND_TEXT = (20, 24, 28), (100, 108, 116), (248, 248, 244)


def wrap(text: str, typeface: ImageFont.FreeTypeFont, max_width: float) -> list[str]:
    lines: list[str] = []
    for word in text.split():
        candidate = f"{lines[-1]} {word}" if lines else word
        if lines and typeface.getlength(candidate) <= max_width:
            lines[-1] = candidate
        else:
            lines.append(word)
    return lines


def caption_below(photo: Image.Image, claim: str, handle: str, posted: str, size: int,
                  face: str | None = None) -> Image.Image:
    """A social-media post: the photo above a white strip with the account and the claim."""
    width = photo.width
    claim_font, meta_font = font(size, face), font(16, face)
    lines = wrap(claim, claim_font, width - 36)
    line_height = int(size * 1.3)
    strip = 16 + 30 + 10 + line_height * len(lines) + 12 + 20 + 14
    post = Image.new("RGB", (width, photo.height + strip), (255, 255, 255))
    post.paste(photo, (0, 0))
    draw = ImageDraw.Draw(post)
    y = photo.height + 16
    draw.ellipse([18, y, 48, y + 30], fill=(120, 150, 190))
    draw.text((58, y + 6), f"{handle}  ·  {posted}", font=meta_font, fill=POST_MUTED)
    y += 40
    for line in lines:
        draw.text((18, y), line, font=claim_font, fill=POST_TEXT)
        y += line_height
    draw.text((18, y + 10), "Reply   Repost   Like   Share", font=meta_font, fill=POST_MUTED)
    return post


def caption_band(photo: Image.Image, claim: str, size: int, at_top: bool, tag: str | None,
                 face: str | None = None, fill: Color = (8, 10, 14)) -> Image.Image:
    """A semi-transparent dark band over the photo with light text, as on shared graphics."""
    claim_font = font(size, face)
    lines = wrap(claim, claim_font, photo.width - 40)
    line_height = int(size * 1.3)
    band_h = 22 + line_height * len(lines)
    top = 0 if at_top else photo.height - band_h
    overlay = Image.new("RGBA", photo.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    draw.rectangle([0, top, photo.width, top + band_h], fill=fill + (170,))
    y = top + 11
    for line in lines:
        draw.text((20, y), line, font=claim_font, fill=BAND_TEXT + (255,))
        y += line_height
    if tag:
        tag_font = font(15, face)
        tag_y = photo.height - 26 if at_top else 8
        tag_w = tag_font.getlength(tag) + 16
        draw.rectangle([photo.width - tag_w - 8, tag_y, photo.width - 8, tag_y + 20], fill=(180, 20, 30, 220))
        draw.text((photo.width - tag_w, tag_y + 2), tag, font=tag_font, fill=(255, 255, 255, 255))
    return Image.alpha_composite(photo.convert("RGBA"), overlay).convert("RGB")


def caption_side(photo: Image.Image, claim: str, size: int, face: str | None, fill: Color) -> Image.Image:
    """A shared graphic: the photo beside an opaque strip carrying the claim (tuning variants)."""
    claim_font = font(size, face)
    strip_w = max(220, photo.width // 2)
    lines = wrap(claim, claim_font, strip_w - 32)
    line_height = int(size * 1.3)
    canvas = Image.new("RGB", (photo.width + strip_w, max(photo.height, 32 + line_height * len(lines))), fill)
    canvas.paste(photo, (0, 0))
    draw = ImageDraw.Draw(canvas)
    y = 16
    for line in lines:
        draw.text((photo.width + 16, y), line, font=claim_font, fill=BAND_TEXT)
        y += line_height
    return canvas


# ---------------------------------------------------------------------------------------
# Renditions: how a picture reappears on other pages (resized, cropped, recompressed).
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rendition:
    """Crop fractions off each edge, then a target width and JPEG quality."""

    width: int
    quality: int
    crop: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)  # left, top, right, bottom


def render(image: Image.Image, rendition: Rendition) -> Image.Image:
    left, top, right, bottom = rendition.crop
    w, h = image.size
    box = (round(w * left), round(h * top), round(w * (1 - right)), round(h * (1 - bottom)))
    cropped = image.crop(box)
    height = round(cropped.height * rendition.width / cropped.width)
    return cropped.resize((rendition.width, height), Image.Resampling.LANCZOS)


def photo_region(case_image: Image.Image) -> Image.Image:
    """The picture part of a case image: a post's white strip below the photo is cut off.

    The strip is found the way a reverse-image-search front end trims uniform borders:
    the run of bottom rows whose left and right margins are pure white (the claim text
    never reaches the margins, photo rows never are pure white there). Band-style
    captions sit on the photo and stay.
    """
    grey = np.asarray(case_image.convert("L"))
    margins = np.concatenate([grey[:, :12], grey[:, -12:]], axis=1)
    strip_rows = margins.min(axis=1) >= 245
    bottom = grey.shape[0]
    while bottom > grey.shape[0] // 2 and strip_rows[bottom - 1]:
        bottom -= 1
    if grey.shape[0] - bottom < 40:  # a thin white edge is part of the photo, not a post strip
        return case_image
    return case_image.crop((0, 0, case_image.width, bottom))


class SceneBook:
    """Paints every distinct picture of the release and keeps them visually distinct.

    A new picture whose perceptual hash lands too close to one already painted is
    repainted from the next seed variant, so a look-alike stays a *different* picture
    (a hard negative) and never a near-duplicate by accident. Some pictures are mirrored:
    it multiplies layouts for free; pictures with lettering never are.
    """

    def __init__(self) -> None:
        self.hashes: list[imagehash.ImageHash] = []

    def paint(self, kind: str, name: str) -> Painted:
        for variant in range(40):
            seed_name = name if variant == 0 else f"{name}#{variant}"
            painted = self._mirrored(kind, seed_name, render_scene(kind, seed_name))
            digest = imagehash.phash(painted.image)
            if all(digest - other >= MIN_SCENE_PHASH_DISTANCE for other in self.hashes):
                self.hashes.append(digest)
                return painted
        raise RuntimeError(f"no distinct variant of scene {name!r} ({kind}) after 40 tries")

    @staticmethod
    def _mirrored(kind: str, name: str, painted: Painted) -> Painted:
        if kind.startswith("protest") or stable_seed(name, "mirror") % 2 == 0:
            return painted
        anchors = {key: (1.0 - fx, fy) for key, (fx, fy) in painted.anchors.items()}
        return Painted(painted.image.transpose(Image.Transpose.FLIP_LEFT_RIGHT), anchors)


# ---------------------------------------------------------------------------------------
# The offline web: sites, and the stories behind each case
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Site:
    domain: str
    name: str
    url_style: str  # how this site builds article URLs, see `article_url`


SITES: dict[str, Site] = {
    # News agencies: where photos are first published.
    "meridian": Site("meridianpress.example", "Meridian Press Agency", "agency_dated"),
    "globalwire": Site("globalwire.example", "Global Wire", "agency_serial"),
    "northstar": Site("www.northstar-news.example", "Northstar News", "section_serial"),
    # Photo libraries and photo blogs: later copies that credit and link the original.
    "atlas": Site("atlasphoto.example", "Atlas Photo Service", "image_serial"),
    "archive": Site("pressimages-archive.example", "Press Images Archive", "collection"),
    "lens": Site("lenscollective.example", "Lens Collective", "yearly"),
    # Local and specialist outlets.
    "gazette": Site("riverside-gazette.example", "Riverside Gazette", "monthly_slash"),
    "observer": Site("metro-observer.example", "Metro Observer", "monthly_slash"),
    "tribune": Site("coastal-tribune.example", "Coastal Tribune", "monthly_slash"),
    "herald": Site("valley-herald.example", "Valley Herald", "monthly_slash"),
    "ledger": Site("southern-ledger.example", "Southern Ledger", "monthly_slash"),
    "capital": Site("capital-daily.example", "Capital Daily", "monthly_slash"),
    "stormtrack": Site("stormtrack-weather.example", "StormTrack Weather", "report"),
    "trendfeed": Site("trendfeed.example", "TrendFeed", "post"),
    "urbanlens": Site("urbanlens-blog.example", "Urban Lens", "blog_html"),
    # Fact-checkers: they publish this benchmark's answers, so the policy blocks them.
    "factdesk": Site("factcheck-desk.example", "FactCheck Desk", "check"),
    "truthmeter": Site("truthmeter.example", "TruthMeter", "rating"),
    "verifyline": Site("verifyline.example", "VerifyLine", "yearly"),
}
FACT_CHECK_DOMAINS = ("factcheck-desk.example", "truthmeter.example", "verifyline.example")
# Fact-check desks inside otherwise allowed news sites: blocked by URL prefix...
FACT_CHECK_SECTIONS = {"observer": "https://metro-observer.example/fact-check/",
                       "globalwire": "https://globalwire.example/verify/"}
# ...or, where the article sits among ordinary news URLs, by its content hash.
FACT_CHECK_BY_CONTENT = ("tribune", "capital")

# How each fact-check site words its verdicts (visible only on blocked pages).
VERDICT_WORDS = {
    "factdesk": {"authentic": "True", "out_of_context": "Missing context", "manipulated": "Altered",
                 "unverifiable": "Unproven"},
    "truthmeter": {"authentic": "Accurate", "out_of_context": "Out of context", "manipulated": "Manipulated image",
                   "unverifiable": "Unverified"},
    "verifyline": {"authentic": "Genuine photo", "out_of_context": "Misleading context", "manipulated": "Doctored",
                   "unverifiable": "Unconfirmed"},
}


@dataclass(frozen=True)
class Event:
    """Something that happened, as the publisher of a photo of it reported it."""

    place: str
    country: str
    day: str  # ISO date
    topic: str  # key of TOPIC_PARAGRAPHS
    what: str  # short noun phrase for facts, e.g. "flooding in central Porto Alegre"
    headline: str
    lead: str
    detail: str
    caption: str  # the photo's caption / alt text


@dataclass(frozen=True)
class Article:
    """A page that is not where the case photo comes from (context, distractor)."""

    site: str
    place: str
    country: str
    day: str  # the day reported on
    topic: str
    headline: str
    lead: str
    author: str | None = None
    published: str | None = "same"  # "same" = `day`; None = the page shows no date
    scene: str | None = None  # a different picture on the page, if any
    caption: str | None = None


@dataclass(frozen=True)
class Caption:
    """How the claim is printed: a post's strip below the photo, or a band over it."""

    style: str  # "post" | "band" | "side" (a strip beside the photo: tuning variants only)
    handle: str | None = None
    posted: str = "2h"
    at_top: bool = False
    tag: str | None = None
    size: int = 24
    face: str | None = None  # a TrueType file (tuning variants); None: Pillow's bundled font
    fill: Color = (8, 10, 14)  # the band's or side strip's colour


@dataclass(frozen=True)
class Edit:
    apply: Callable[[Painted, np.random.Generator], Image.Image]
    added: str  # what the edit put into the picture
    original: str  # what the unedited photo shows


@dataclass(frozen=True)
class Story:
    key: str  # internal name; seeds only, never written
    label: str
    scene: str
    claim: str
    caption: Caption
    event: Event | None  # where the photo really comes from; None when nobody published it
    origin_site: str | None = None
    photographer: str | None = None
    reporter: str | None = None
    bridge: tuple[str, str] | None = None  # (site, published day) of a later credited copy
    context: tuple[Article, ...] = ()
    claimed_what: str | None = None  # out_of_context: the event the claim invokes
    edit: Edit | None = None
    fact_check: str | None = None  # site key of the fact-check; None: nobody checked it


def post(handle: str, posted: str = "2h", size: int = 24) -> Caption:
    return Caption("post", handle=handle, posted=posted, size=size)


def band(at_top: bool = False, tag: str | None = None, size: int = 24) -> Caption:
    return Caption("band", at_top=at_top, tag=tag, size=size)


STORIES: tuple[Story, ...] = (
    # --- authentic: the claim matches where and when the photo was taken ----------------
    Story(
        "poa-flood", "authentic", "flood_street", "Floodwaters sweep through Porto Alegre, 6 May 2024",
        post("@sul_updates"),
        Event("Porto Alegre", "Brazil", "2024-05-06", "flood", "flooding in central Porto Alegre",
              "Floodwaters sweep through central Porto Alegre as the Guaíba overflows",
              "Floodwater poured into the historic centre of Porto Alegre on Monday as the Guaíba river rose past "
              "its previous record, forcing residents onto rooftops and into boats.",
              "Civil defence teams and volunteers with private boats worked through the day to reach families in "
              "the Centro Histórico and Navegantes districts. The main bus station and the airport were closed.",
              "Floodwater fills a street in the Centro Histórico district of Porto Alegre, Brazil, on 6 May 2024."),
        "meridian", "Lucas Ferreira", "Ana Beatriz Lima", ("atlas", "2024-05-09"),
        (Article("ledger", "Porto Alegre", "Brazil", "2024-05-06", "flood",
                 "Guaíba river reaches record level as Porto Alegre airport closes",
                 "The Guaíba river in Porto Alegre rose above five metres on Monday, the highest level ever "
                 "recorded, flooding the city centre and closing Salgado Filho airport.", "Marcos Teixeira"),),
        fact_check="factdesk"),
    Story(
        "valpo-fire", "authentic", "wildfire_hills", "Wildfire smoke engulfs hills above Valparaiso, 3 February 2024",
        band(tag="LIVE"),
        Event("Valparaíso", "Chile", "2024-02-03", "wildfire", "wildfires on the hills above Valparaíso",
              "Wildfires race through hills above Valparaíso and Viña del Mar",
              "Fast-moving wildfires spread across the hills above Valparaíso on Saturday, sending thick smoke over "
              "the port city as firefighters fought flames close to homes.",
              "Authorities declared a state of emergency in the region and ordered evacuations in several hillside "
              "neighbourhoods. Strong winds and temperatures above 35 degrees hampered the response.",
              "Smoke rises from a wildfire on the hills above Valparaíso, Chile, on 3 February 2024."),
        "globalwire", "Camila Rojas", "Diego Fuentes", None,
        (Article("tribune", "Viña del Mar", "Chile", "2024-02-03", "wildfire",
                 "Evacuations ordered as fires spread near Viña del Mar",
                 "Residents of several hillside neighbourhoods of Viña del Mar and Valparaíso were told to leave "
                 "their homes on Saturday as wildfires spread towards the coast.", "Paula Contreras",
                 scene="wildfire_hills",
                 caption="Firefighters work on a ridge near Viña del Mar, Chile, on 3 February 2024."),
         Article("stormtrack", "Valparaíso", "Chile", "2024-02-05", "wildfire",
                 "Heat and wind: why the Valparaíso fires spread so fast",
                 "A heatwave, dry vegetation and strong afternoon winds combined to drive the fires that burned "
                 "across the hills of the Valparaíso region on 2 and 3 February.", None)),
        fact_check="truthmeter"),
    Story(
        "berlin-march", "authentic", "crowd_plaza", "Thousands march for climate action in Berlin, 2023-09-15",
        post("@klima_live", "5h"),
        Event("Berlin", "Germany", "2023-09-15", "protest", "the climate strike march in Berlin",
              "Thousands join climate strike march in Berlin",
              "Thousands of people marched through central Berlin on Friday as part of a global climate strike, "
              "filling the square in front of the Reichstag building.",
              "Organisers said the protest called for a faster phase-out of fossil fuels. Police reported no major "
              "incidents.",
              "Climate strike protesters gather in front of the Reichstag building in Berlin, Germany, on "
              "15 September 2023."),
        "northstar", "Jonas Weber", "Miriam Schulz", ("lens", "2023-12-20"),
        (Article("capital", "Berlin", "Germany", "2023-09-15", "protest",
                 "Climate strike: tens of thousands protest across Germany",
                 "Climate activists staged marches in more than 200 German towns on Friday, with the largest crowd "
                 "gathering in Berlin's government quarter.", "Lena Hoffmann"),),
        fact_check="observer"),
    Story(
        "buffalo-blizzard", "authentic", "snow_highway",
        "Blizzard strands drivers on highway outside Buffalo, 24 December 2022", band(at_top=True),
        Event("Buffalo", "United States", "2022-12-24", "snow", "the Christmas blizzard around Buffalo",
              "Blizzard strands hundreds of drivers around Buffalo",
              "A ferocious blizzard left hundreds of drivers stranded on highways around Buffalo, New York, on "
              "Saturday as whiteout conditions and drifting snow made roads impassable.",
              "Erie County officials imposed a driving ban and said emergency crews were unable to answer many "
              "calls. Wind gusts topped 110 km/h.",
              "Trucks and cars stranded in snow on a highway outside Buffalo, New York, on 24 December 2022."),
        "meridian", "Dana Kowalski", "Peter Novak", ("archive", "2023-01-10"),
        (Article("stormtrack", "Buffalo", "United States", "2022-12-24", "snow",
                 "Lake-effect blizzard buries Erie County",
                 "Blizzard conditions persisted across Erie County on Saturday, with snowfall rates of several "
                 "centimetres an hour and visibility near zero on the highways around Buffalo.", None),),
        fact_check="verifyline"),
    Story(
        "hamburg-ship", "authentic", "harbor", "Fire breaks out on cargo ship in port of Hamburg, 8 November 2023",
        post("@portwatcher", "1h"),
        Event("Hamburg", "Germany", "2023-11-08", "ship_fire", "a container ship fire in the port of Hamburg",
              "Container ship catches fire at Hamburg terminal",
              "A fire broke out on a container ship moored at a terminal in the port of Hamburg on Wednesday, "
              "sending a column of dark smoke over the Elbe.",
              "The harbour fire brigade said the blaze started in containers stacked on deck. Nobody was injured "
              "and the crew left the vessel safely.",
              "Smoke rises from a container ship on fire at a terminal in the port of Hamburg, Germany, on "
              "8 November 2023."),
        "globalwire", "Henrik Lange", "Katrin Vogel", ("atlas", "2023-11-10"),
        (Article("observer", "Hamburg", "Germany", "2023-11-08", "ship_fire",
                 "Harbour fire brigade battles blaze on container vessel",
                 "Fireboats and more than 80 firefighters fought a fire on a container ship in Hamburg's port on "
                 "Wednesday afternoon; the fire brigade said the blaze was under control by the evening.",
                 "Jan Petersen"),),
        fact_check="factdesk"),
    Story(
        "beijing-dust", "authentic", "dust_skyline", "Sandstorm turns the sky orange over Beijing, 2023-03-22",
        band(tag="NEWS"),
        Event("Beijing", "China", "2023-03-22", "dust", "the sandstorm over Beijing",
              "Sandstorm turns Beijing sky orange",
              "A thick sandstorm swept over Beijing on Wednesday, turning the sky an orange-brown colour and pushing "
              "air pollution readings to hazardous levels.",
              "The weather service issued a yellow alert and advised residents to stay indoors. Visibility in parts "
              "of the city fell below one kilometre.",
              "Pedestrians walk beneath high-rise buildings shrouded in sand and dust in Beijing, China, on "
              "22 March 2023."),
        "northstar", "Li Wei", "Chen Yu", None,
        (Article("stormtrack", "Beijing", "China", "2023-03-22", "dust",
                 "Dust storm pushes Beijing air quality off the scale",
                 "Readings of coarse particles in Beijing passed 2,000 micrograms per cubic metre on Wednesday as "
                 "the season's strongest sandstorm reached the capital.", None),),
        fact_check="truthmeter"),
    Story(
        "antakya-quake", "authentic", "rubble", "Rescuers search collapsed buildings in Antakya, 7 February 2023",
        post("@relief_now", "3h"),
        Event("Antakya", "Turkey", "2023-02-07", "quake", "the search for survivors in Antakya",
              "Rescuers search rubble in Antakya a day after deadly earthquake",
              "Rescue teams dug through the rubble of collapsed apartment blocks in Antakya on Tuesday, a day after "
              "a powerful earthquake struck southern Turkey and northern Syria.",
              "Volunteers in hard hats formed human chains to remove debris by hand. Heavy machinery was in short "
              "supply in the worst-hit districts of Hatay province.",
              "Rescue workers search the rubble of collapsed buildings in Antakya, Turkey, on 7 February 2023."),
        "meridian", "Elif Demir", "Murat Aksoy", ("archive", "2023-02-20"),
        (Article("capital", "Antakya", "Turkey", "2023-02-07", "quake",
                 "Search and rescue continues across Hatay province",
                 "Rescuers worked through a freezing night in Antakya and other towns of Hatay province on Tuesday, "
                 "pulling survivors from the rubble more than 24 hours after the earthquake.", "Selin Kaya"),),
        fact_check="tribune"),
    # --- out_of_context: a real photo, but from another time and place ------------------
    Story(
        "jakarta-dubai", "out_of_context", "flood_street", "Dubai streets underwater after record storm, 16 April 2024",
        post("@gulf_alerts", "4h"),
        Event("Jakarta", "Indonesia", "2020-01-01", "flood", "the New Year floods in Jakarta",
              "New Year floods submerge East Jakarta neighbourhoods",
              "Torrential rain on New Year's Eve flooded large parts of Jakarta on Wednesday, submerging streets and "
              "cars and forcing thousands of residents to leave their homes.",
              "The city recorded its heaviest rainfall in more than a decade. Residents waded through chest-deep "
              "water carrying children and belongings.",
              "Residents wade through floodwater in a street in East Jakarta, Indonesia, on 1 January 2020."),
        "northstar", "Rizky Pratama", "Sari Wulandari", ("lens", "2022-06-14"),
        (Article("tribune", "Dubai", "United Arab Emirates", "2024-04-16", "flood",
                 "Dubai records heaviest rain in 75 years as flights are diverted",
                 "A storm dumped more than a year's worth of rain on parts of the United Arab Emirates on Tuesday, "
                 "flooding highways and residential streets in Dubai and disrupting flights.", "Omar Haddad",
                 scene="flood_street",
                 caption="Cars stranded on a flooded road in Dubai, United Arab Emirates, on 16 April 2024."),
         Article("stormtrack", "Dubai", "United Arab Emirates", "2024-04-18", "flood",
                 "How a slow-moving storm flooded the UAE",
                 "The system that flooded Dubai on 16 April stalled over the Gulf for more than a day, feeding "
                 "repeated thunderstorms over the same cities.", None)),
        claimed_what="the April 2024 floods in Dubai", fact_check="factdesk"),
    Story(
        "santiago-paris", "out_of_context", "crowd_plaza", "Pension protest crowds fill central Paris, 23 March 2023",
        band(tag="VIRAL"),
        Event("Santiago", "Chile", "2019-10-25", "protest", "the mass march in Santiago",
              "More than a million march in Santiago in largest protest in decades",
              "More than a million people marched through central Santiago on Friday in the largest demonstration "
              "since the return of democracy, demanding social reforms.",
              "The peaceful march filled Plaza Italia and the surrounding avenues. Protesters waved Chilean and "
              "Mapuche flags.",
              "Demonstrators fill a square in central Santiago, Chile, on 25 October 2019."),
        "globalwire", "Francisca Soto", "Matías Herrera", ("atlas", "2019-11-02"),
        (Article("capital", "Paris", "France", "2023-03-23", "protest",
                 "Pension reform protests: hundreds of thousands march in Paris",
                 "Hundreds of thousands of people marched in Paris on Thursday against the government's plan to "
                 "raise the retirement age, the ninth national day of action since January.", "Claire Martin",
                 scene="crowd_plaza",
                 caption="Protesters march against pension reform in Paris, France, on 23 March 2023."),),
        claimed_what="the pension reform protests in Paris", fact_check="truthmeter"),
    Story(
        "paradise-athens", "out_of_context", "wildfire_hills", "Forest fire rages near Athens, 18 July 2023",
        post("@hellas_now", "6h"),
        Event("Paradise", "United States", "2018-11-08", "wildfire", "the Camp Fire near Paradise, California",
              "Camp Fire races into Paradise, forcing mass evacuation",
              "A fast-moving wildfire swept into the town of Paradise in Northern California on Thursday, forcing "
              "thousands of residents to flee as flames jumped roads and smoke blotted out the sun.",
              "Fire officials said the blaze, driven by strong winds, had grown to tens of thousands of acres "
              "within hours.",
              "Smoke billows over the hills as the Camp Fire burns near Paradise, California, on 8 November 2018."),
        "meridian", "Mark Ellison", "Jessica Tran", ("archive", "2019-11-08"),
        (Article("ledger", "Athens", "Greece", "2023-07-18", "wildfire",
                 "Wildfires burn west of Athens as heatwave grips Greece",
                 "Wildfires fanned by strong winds burned through pine forest west of Athens on Tuesday, forcing "
                 "the evacuation of several villages as temperatures passed 40 degrees.", "Nikos Papadakis",
                 scene="wildfire_hills",
                 caption="A wildfire burns near Mandra, west of Athens, Greece, on 18 July 2023."),),
        claimed_what="the July 2023 wildfires near Athens", fact_check="verifyline"),
    Story(
        "houston-tampa", "out_of_context", "highway_traffic",
        "Residents flee Tampa ahead of Hurricane Milton, 2024-10-08", band(at_top=True, tag="BREAKING"),
        Event("Houston", "United States", "2005-09-21", "evacuation", "the evacuation of Houston before Hurricane Rita",
              "Gridlock as Houston residents flee Hurricane Rita",
              "Hundreds of thousands of people tried to leave the Houston area on Wednesday ahead of Hurricane Rita, "
              "creating traffic jams that stretched for dozens of kilometres on outbound highways.",
              "Officials opened inbound lanes to outbound traffic, but many drivers spent more than ten hours on "
              "the road. Petrol stations along the route ran dry.",
              "Traffic backs up on a highway out of Houston, Texas, as residents evacuate ahead of Hurricane Rita "
              "on 21 September 2005."),
        "globalwire", "Carla Jiménez", "Tom Becker", ("lens", "2015-09-21"),
        (Article("stormtrack", "Tampa", "United States", "2024-10-08", "evacuation",
                 "Milton: mandatory evacuations ordered around Tampa Bay",
                 "Officials ordered residents of coastal zones around Tampa Bay to leave on Tuesday as Hurricane "
                 "Milton strengthened over the Gulf of Mexico.", None, scene="highway_traffic",
                 caption="Traffic heads east out of Tampa, Florida, on 8 October 2024."),),
        claimed_what="the evacuation of Tampa before Hurricane Milton", fact_check="globalwire"),
    Story(
        "oklahoma-bologna", "out_of_context", "storm_field",
        "Supercell storm looms over farmland near Bologna, 21 June 2024", post("@meteo_italia", "1h"),
        Event("El Reno", "United States", "2013-05-31", "storm", "the El Reno supercell in Oklahoma",
              "Supercell storm produces tornadoes near El Reno",
              "A massive supercell thunderstorm moved across central Oklahoma on Friday evening, producing "
              "tornadoes near El Reno and bringing hail and flash flooding to the Oklahoma City area.",
              "Storm chasers and residents photographed the rotating storm as it crossed open farmland west of "
              "the city.",
              "A supercell thunderstorm over farmland near El Reno, Oklahoma, on 31 May 2013."),
        "northstar", "Travis Boone", "Emily Carter", ("atlas", "2013-06-03"),
        (Article("herald", "Bologna", "Italy", "2024-06-21", "storm",
                 "Hailstorms and strong winds hit Emilia-Romagna",
                 "Violent thunderstorms swept across the plains around Bologna on Friday afternoon, flattening "
                 "crops and bringing down trees.", "Giulia Ferri", scene="storm_field",
                 caption="Storm clouds over fields outside Bologna, Italy, on 21 June 2024."),),
        claimed_what="the June 2024 storms around Bologna", fact_check="factdesk"),
    Story(
        "johannesburg-buenosaires", "out_of_context", "stadium",
        "Fans pack stadium to celebrate World Cup win in Buenos Aires, 20 December 2022", band(),
        Event("Johannesburg", "South Africa", "2010-06-11", "football", "the 2010 World Cup opening match in Johannesburg",
              "Soccer City roars as World Cup kicks off in Johannesburg",
              "Tens of thousands of fans filled Soccer City stadium in Johannesburg on Friday for the opening match "
              "of the first World Cup held in Africa.",
              "The sound of vuvuzelas filled the stadium as South Africa played Mexico in the tournament's first "
              "game.",
              "Fans fill the stands of Soccer City stadium in Johannesburg, South Africa, during the World Cup "
              "opening match on 11 June 2010."),
        "meridian", "Thabo Nkosi", "Sipho Dlamini", ("archive", "2020-06-11"),
        (Article("ledger", "Buenos Aires", "Argentina", "2022-12-20", "football",
                 "Millions take to Buenos Aires streets to greet world champions",
                 "Millions of fans filled the streets of Buenos Aires on Tuesday to welcome Argentina's World Cup "
                 "winners, so many that the team bus could not reach the Obelisco.", "Martín Acosta",
                 scene="crowd_plaza",
                 caption="Fans celebrate in central Buenos Aires, Argentina, on 20 December 2022."),),
        claimed_what="the World Cup victory celebrations in Buenos Aires", fact_check="truthmeter"),
    Story(
        "nyc-karachi", "out_of_context", "night_skyline_dark",
        "Nationwide blackout plunges Karachi into darkness, 23 January 2023", post("@pk_citydesk", "8h"),
        Event("New York City", "United States", "2003-08-14", "blackout", "the 2003 Northeast blackout in New York",
              "Blackout plunges New York and much of the Northeast into darkness",
              "A massive power failure left New York City and large parts of the northeastern United States and "
              "Canada without electricity on Thursday evening.",
              "Millions of commuters walked home across bridges as subways stopped. Only a few buildings with "
              "backup generators remained lit.",
              "The Manhattan skyline sits mostly dark during the blackout in New York City on 14 August 2003."),
        "globalwire", "Robert Hayes", "Linda Moreno", ("lens", "2013-08-14"),
        (Article("capital", "Karachi", "Pakistan", "2023-01-23", "blackout",
                 "Power gradually restored after nationwide grid failure in Pakistan",
                 "Electricity began to return to parts of Karachi, Lahore and Islamabad on Monday evening after a "
                 "grid failure left much of Pakistan without power for most of the day.", "Ayesha Siddiqui"),
         Article("tribune", "Karachi", "Pakistan", "2023-01-23", "blackout",
                 "Karachi in the dark: traders count losses after grid failure",
                 "Shopkeepers in Karachi ran diesel generators on Monday as a nationwide power cut stretched into "
                 "the evening.", "Bilal Ahmed", scene="night_skyline",
                 caption="Generators light a few buildings in Karachi, Pakistan, on 23 January 2023.")),
        claimed_what="the January 2023 grid failure in Pakistan", fact_check="capital"),
    # --- manipulated: a real photo with something pasted in -----------------------------
    Story(
        "houston-shark", "manipulated", "flood_street", "Shark swims down flooded street in Houston, 28 August 2017",
        band(tag="VIRAL"),
        Event("Houston", "United States", "2017-08-28", "flood", "the Hurricane Harvey floods in Houston",
              "Harvey floodwaters swamp Houston neighbourhoods",
              "Floodwater from Hurricane Harvey filled streets across Houston on Monday as record rainfall kept "
              "falling and rescuers in boats pulled residents from their homes.",
              "Forecasters said parts of the Houston area could receive more than a metre of rain before the storm "
              "moved away.",
              "Floodwater from Hurricane Harvey covers a street in Houston, Texas, on 28 August 2017."),
        "meridian", "Grace Miller", "Daniel Ortiz", None,
        (Article("meridian", "Houston", "United States", "2017-08-29", "flood",
                 "Harvey: volunteers in boats rescue residents from flooded streets",
                 "Volunteers with fishing boats joined emergency crews in Houston on Tuesday, ferrying residents "
                 "who had waded through brown floodwater past submerged cars and parked trucks.", "Daniel Ortiz"),
         Article("urbanlens", "Houston", "United States", "2018-09-14", "editing",
                 "Why the same hoax pictures return with every hurricane",
                 "Every big flood brings back a familiar set of pictures: sharks in streets, animals on highways, "
                 "impossible waves. Most are old photos with something pasted in.", "Kim Harlow", published=None)),
        edit=Edit(edit_shark_fin, "a shark fin in the floodwater",
                  "residents in brown floodwater between houses and parked cars, with no animal in the water"),
        fact_check="factdesk"),
    Story(
        "rotterdam-fire", "manipulated", "industrial_fire", "Second explosion rocks refinery in Rotterdam, 2024-03-14",
        post("@nl_breaking", "2h"),
        Event("Rotterdam", "Netherlands", "2024-03-14", "industrial_fire", "a storage tank fire in the port of Rotterdam",
              "Fire breaks out at storage tank in Rotterdam port",
              "A fire broke out at a fuel storage tank in the port of Rotterdam on Thursday, sending a plume of "
              "black smoke over the Botlek industrial area.",
              "The safety region said there was no danger to residents but advised people nearby to keep windows "
              "closed.",
              "Black smoke rises from a burning storage tank in the port of Rotterdam, Netherlands, on "
              "14 March 2024."),
        "globalwire", "Pieter de Vries", "Sanne Jansen", None,
        (Article("globalwire", "Rotterdam", "Netherlands", "2024-03-15", "industrial_fire",
                 "Rotterdam tank fire under control, no injuries",
                 "Firefighters brought the blaze at a storage tank in Rotterdam's Botlek area under control "
                 "overnight. The fire stayed confined to the one tank where it started.", "Sanne Jansen"),),
        edit=Edit(edit_second_fireball, "a second fireball and smoke column over another tank",
                  "a single burning tank with one column of black smoke"),
        fact_check="truthmeter"),
    Story(
        "brussels-banner", "manipulated", "protest_fair_prices",
        "Farmers' banner calls to burn parliament in Brussels, 1 February 2024", band(at_top=True, size=26),
        Event("Brussels", "Belgium", "2024-02-01", "protest", "the farmers' protest in Brussels",
              "Tractors fill Brussels as farmers protest during EU summit",
              "Farmers drove hundreds of tractors into Brussels on Thursday, blocking streets around the European "
              "quarter as EU leaders met for a summit.",
              "Protesters carried banners demanding fair prices for farmers and lower costs.",
              "Farmers hold a banner reading 'Fair prices for farmers' during a protest in Brussels, Belgium, on "
              "1 February 2024."),
        "northstar", "Sofie Claes", "Thomas Peeters", None,
        (Article("northstar", "Brussels", "Belgium", "2024-02-02", "protest",
                 "Farmers leave Brussels after day of protests",
                 "Tractors began leaving Brussels on Friday morning after a day of protests in which farmers marched "
                 "behind banners calling for fair prices for farmers.", "Thomas Peeters"),),
        edit=Edit(lambda painted, rng: edit_banner_text(painted, rng, "BURN THE PARLIAMENT"),
                  "new banner lettering reading 'BURN THE PARLIAMENT'",
                  "protesters holding a banner that reads 'FAIR PRICES FOR FARMERS'"),
        fact_check="verifyline"),
    Story(
        "johannesburg-lion", "manipulated", "empty_street",
        "Lion roams empty streets of Johannesburg during lockdown, 2020-04-02", post("@jozi_watch", "7h"),
        Event("Johannesburg", "South Africa", "2020-04-02", "lockdown", "the first week of lockdown in Johannesburg",
              "Johannesburg streets deserted in first week of lockdown",
              "Streets in central Johannesburg stood empty on Thursday as South Africa's nationwide lockdown entered "
              "its first week, with residents allowed out only for essential trips.",
              "Police and soldiers patrolled the city to enforce the stay-at-home order. Shops other than "
              "supermarkets and pharmacies were closed.",
              "An empty street in central Johannesburg, South Africa, during the coronavirus lockdown on "
              "2 April 2020."),
        "meridian", "Naledi Mokoena", "Johan Botha", None,
        (Article("meridian", "Johannesburg", "South Africa", "2020-04-04", "lockdown",
                 "Lockdown diary: a city without traffic",
                 "For a week the streets of central Johannesburg have been silent: no minibus taxis, no street "
                 "vendors, only the occasional police patrol passing closed shopfronts.", "Johan Botha"),),
        edit=Edit(edit_lion, "a lion standing in the road", "an empty street with closed shops and no people or animals"),
        fact_check="factdesk"),
    Story(
        "lisbon-tornado", "manipulated", "storm_city", "Tornado touches down over Lisbon, 5 November 2023",
        band(tag="BREAKING"),
        Event("Lisbon", "Portugal", "2023-11-05", "storm", "the November storm over Lisbon",
              "Heavy rain and wind warnings as storm sweeps over Lisbon",
              "Dark storm clouds rolled over Lisbon on Sunday as a powerful Atlantic storm brought heavy rain and "
              "strong winds to the Portuguese coast.",
              "The civil protection authority placed the Lisbon district on orange alert and reported fallen trees "
              "and flooded underpasses.",
              "Storm clouds gather over the rooftops of Lisbon, Portugal, on 5 November 2023."),
        "globalwire", "Rui Santos", "Inês Carvalho", None,
        (Article("globalwire", "Lisbon", "Portugal", "2023-11-06", "storm",
                 "Lisbon counts the cost of Sunday's storm",
                 "Crews in Lisbon cleared fallen trees and pumped water from underpasses on Monday after a day of "
                 "heavy rain and gusty wind.", "Inês Carvalho"),),
        edit=Edit(edit_tornado, "a tornado funnel reaching down to the rooftops",
                  "dark rain clouds over the rooftops with no funnel cloud"),
        fact_check="observer"),
    Story(
        "fuji-eruption", "manipulated", "mountain_lake",
        "Mount Fuji erupts for the first time in 300 years, 12 January 2024", post("@japan_now", "3h", size=26),
        Event("Fujikawaguchiko", "Japan", "2024-01-12", "mountain", "a clear winter morning at Lake Kawaguchi",
              "Clear winter skies bring crowds to Lake Kawaguchi",
              "A cold, clear spell brought sharp views of Mount Fuji on Friday, drawing photographers and tourists "
              "to the shores of Lake Kawaguchi.",
              "Local tourism officials said visitor numbers had returned to pre-pandemic levels for the winter "
              "season.",
              "Mount Fuji reflected in Lake Kawaguchi on a clear winter morning, 12 January 2024."),
        "northstar", "Haruto Sato", "Yuki Tanaka", None,
        (Article("northstar", "Fujikawaguchiko", "Japan", "2024-01-20", "mountain",
                 "Fuji Five Lakes winter season draws record visitors",
                 "Hotels around Lake Kawaguchi reported near-full bookings through January as clear weather kept "
                 "Mount Fuji's snow-capped summit in view day after day.", "Yuki Tanaka"),),
        edit=Edit(edit_eruption, "an ash plume and lava streaks at the summit",
                  "a calm, snow-capped Mount Fuji above the lake"),
        fact_check="truthmeter"),
    Story(
        "seattle-craft", "manipulated", "night_skyline_tower", "Glowing craft hovers over Seattle skyline, 2023-10-14",
        band(at_top=True, tag="VIRAL"),
        Event("Seattle", "United States", "2023-10-14", "night_city", "a clear night over the Seattle skyline",
              "Seattle skyline glows on a clear autumn night",
              "A rare clear night gave photographers a sharp view of the Seattle skyline across Elliott Bay on "
              "Saturday.",
              "Long exposures from the waterfront caught the lights of downtown towers and the Space Needle "
              "reflected in the water.",
              "The Seattle skyline and the Space Needle at night, seen across the water on 14 October 2023."),
        "meridian", "Evan Brooks", "Megan Price", None,
        (Article("meridian", "Seattle", "United States", "2023-10-15", "night_city",
                 "Photographers flock to the waterfront for clear-night views",
                 "Dozens of photographers lined the Seattle waterfront on Saturday night to make the most of a "
                 "cloudless sky over the city.", "Megan Price"),),
        edit=Edit(edit_glowing_craft, "a glowing disc-shaped craft with a light beam",
                  "the lit skyline and tower under an empty night sky"),
        fact_check="factdesk"),
    # --- unverifiable: nobody published this photo; pages nearby neither confirm nor deny -
    Story(
        "madrid-hail", "unverifiable", "hail_street", "Giant hail smashes car windows in Madrid, 30 May 2024",
        post("@madrid_directo", "9h"), None,
        context=(Article("stormtrack", "Zaragoza", "Spain", "2023-08-29", "hail",
                         "Hailstorm dents hundreds of cars in Zaragoza",
                         "Hailstones the size of tennis balls fell on Zaragoza on Tuesday evening, denting cars and "
                         "smashing windows across the city.", None, scene="hail_street",
                         caption="Hail-damaged cars in a street in Zaragoza, Spain, on 29 August 2023."),
                 Article("capital", "Madrid", "Spain", "2023-09-03", "flood",
                         "Summer storm floods streets and metro stations in Madrid",
                         "A violent storm dropped a month's rain on Madrid in a few hours on Sunday, flooding "
                         "streets and several metro stations.", "Lucía Romero")),
        fact_check="truthmeter"),
    Story(
        "lagos-market", "unverifiable", "market_fire", "Fire destroys market stalls in Lagos, 2024-01-12",
        band(tag="LIVE"), None,
        context=(Article("ledger", "Lagos", "Nigeria", "2021-11-20", "market_fire",
                         "Fire guts shops at busy Lagos market",
                         "A fire tore through rows of shops at a busy market on Lagos Island on Saturday, destroying "
                         "goods worth millions of naira.", "Chinedu Okafor", scene="market_fire",
                         caption="Smoke rises over a market on Lagos Island, Nigeria, on 20 November 2021."),
                 Article("tribune", "Accra", "Ghana", "2023-03-05", "market_fire",
                         "Blaze at Accra market destroys hundreds of stalls",
                         "Traders at a second-hand clothing market in Accra lost their stock when fire spread "
                         "through the stalls early on Sunday.", "Kwame Mensah")),
        fact_check=None),
    Story(
        "kathmandu-flood", "unverifiable", "village_flood", "Flash flood hits village near Kathmandu, 4 July 2023",
        post("@nepal_watch", "5h"), None,
        context=(Article("herald", "Kathmandu", "Nepal", "2024-09-28", "flood",
                         "Monsoon floods inundate Kathmandu valley",
                         "Rivers burst their banks across the Kathmandu valley on Saturday after the heaviest "
                         "rainfall in decades, flooding low-lying settlements.", "Anil Shrestha", scene="village_flood",
                         caption="Floodwater surrounds houses in the Kathmandu valley, Nepal, on 28 September 2024."),
                 Article("stormtrack", "Pokhara", "Nepal", "2023-07-06", "flood",
                         "Landslides block highways in western Nepal",
                         "Monsoon landslides cut several highways around Pokhara on Thursday, stranding buses and "
                         "trucks.", None)),
        fact_check="factdesk"),
    Story(
        "chennai-water", "unverifiable", "queue_street", "Residents queue for water tankers in Chennai, 19 June 2019",
        band(at_top=True), None,
        context=(Article("tribune", "Cape Town", "South Africa", "2018-01-26", "water",
                         "Cape Town residents queue at springs as taps run low",
                         "Long queues formed at natural springs across Cape Town on Friday as the city warned that "
                         "its taps could be switched off within months.", "Lindiwe Dube", scene="queue_street",
                         caption="Residents queue to fill containers in Cape Town, South Africa, on 26 January 2018."),
                 Article("capital", "Chennai", "India", "2015-12-02", "flood",
                         "Chennai under water after record rainfall",
                         "Record rainfall submerged large parts of Chennai on Wednesday, cutting off neighbourhoods and "
                         "closing the airport.", "Priya Raman")),
        fact_check=None),
    Story(
        "marseille-warehouse", "unverifiable", "industrial_fire",
        "Black smoke rises over warehouse fire in Marseille, 2024-08-09", post("@marseille_info", "1h"), None,
        context=(Article("gazette", "Lyon", "France", "2022-07-19", "industrial_fire",
                         "Warehouse fire sends smoke over Lyon suburb",
                         "A fire at a logistics warehouse in the eastern suburbs of Lyon sent a column of black "
                         "smoke over the area on Tuesday.", "Julien Moreau", scene="industrial_fire",
                         caption="Smoke rises from a warehouse fire near Lyon, France, on 19 July 2022."),
                 Article("observer", "Marseille", "France", "2016-08-10", "wildfire",
                         "Wildfire near Marseille forces evacuations",
                         "A wildfire driven by the mistral burned towards the northern suburbs of Marseille on "
                         "Wednesday, forcing hundreds of people from their homes.", "Élodie Bernard",
                         scene="wildfire_hills",
                         caption="A wildfire burns near Marseille, France, on 10 August 2016.")),
        fact_check="verifyline"),
    Story(
        "montreal-ice", "unverifiable", "powerlines", "Ice storm brings down power lines in Montreal, 5 April 2023",
        band(tag="NEWS", size=22), None,
        context=(Article("lens", "Montreal", "Canada", "2018-01-05", "ice",
                         "The great ice storm of 1998, remembered",
                         "Twenty years ago this week, freezing rain coated southern Quebec in ice, toppling pylons and "
                         "leaving more than a million homes without power.", "Marie Tremblay",
                         scene="powerlines", caption="Ice-laden power lines near Montreal, Canada, in January 1998."),
                 Article("stormtrack", "Ottawa", "Canada", "2022-05-21", "storm",
                         "Derecho knocks out power across Ottawa",
                         "A line of violent thunderstorms brought down trees and hydro poles across Ottawa on Saturday, "
                         "cutting power to hundreds of thousands of customers.", None)),
        fact_check=None),
    Story(
        "lima-fish", "unverifiable", "beach", "Thousands of dead fish wash up on beach in Lima, 2024-02-18",
        post("@peru_costa", "6h"), None,
        context=(Article("ledger", "Lima", "Peru", "2022-01-18", "fish_kill",
                         "Oil spill blackens beaches north of Lima",
                         "Oil from a spill at a refinery terminal spread along beaches north of Lima on Tuesday, "
                         "killing fish and seabirds.", "Rosa Quispe", scene="beach",
                         caption="Workers clean a beach north of Lima, Peru, on 18 January 2022."),
                 Article("herald", "Menindee", "Australia", "2023-03-17", "fish_kill",
                         "Millions of dead fish clog river at Menindee",
                         "Millions of dead fish choked a stretch of the Darling River near Menindee on Friday, "
                         "which officials blamed on low oxygen levels after floods.", "Sam Whitaker")),
        fact_check="observer"),
)


# Pages that belong to no case's chain but share its places, events or look (hard negatives).
DISTRACTORS: tuple[Article, ...] = (
    Article("ledger", "Porto Alegre", "Brazil", "2024-06-18", "flood", "Flooding returns to Porto Alegre's Sarandi district",
            "Heavy rain sent water back into streets of the Sarandi district of Porto Alegre on Tuesday, six weeks "
            "after the city's worst flood on record.", "Marcos Teixeira", scene="flood_street",
            caption="Water covers a street in the Sarandi district of Porto Alegre, Brazil, on 18 June 2024."),
    Article("gazette", "Houston", "United States", "2016-04-18", "flood", "Flash floods strand drivers across Houston",
            "More than 40 centimetres of rain fell on parts of Houston overnight, stranding hundreds of drivers on "
            "flooded roads on Monday.", "Rachel Gomez", scene="flood_street",
            caption="Floodwater covers a street in west Houston, Texas, on 18 April 2016."),
    Article("tribune", "Jakarta", "Indonesia", "2021-02-20", "flood", "Floods return to Jakarta after heavy rain",
            "Parts of Jakarta were under water again on Saturday after a night of heavy rain, forcing more than "
            "a thousand people into shelters.", "Dewi Lestari", scene="flood_street",
            caption="Residents wade through floodwater in South Jakarta, Indonesia, on 20 February 2021."),
    Article("observer", "Valparaíso", "Chile", "2014-04-13", "wildfire", "Valparaíso fire destroys thousands of homes",
            "A wildfire that jumped from forest into the hillside neighbourhoods of Valparaíso destroyed more than "
            "2,500 homes over the weekend.", "Andrés Vidal", scene="wildfire_hills",
            caption="Smoke over the hills of Valparaíso, Chile, on 13 April 2014."),
    Article("capital", "Berlin", "Germany", "2023-09-24", "protest", "Berlin Marathon draws record field",
            "Nearly 48,000 runners from more than 150 countries set off from the Tiergarten on Sunday, watched by "
            "crowds lining the course.", "Lena Hoffmann", scene="crowd_plaza",
            caption="Spectators gather near the finish of the Berlin Marathon in Berlin, Germany, on 24 September 2023."),
    Article("stormtrack", "Buffalo", "United States", "2014-11-20", "snow", "Buffalo digs out after November lake-effect storm",
            "Parts of the Buffalo area were buried under more than 1.5 metres of snow after three days of "
            "lake-effect storms.", None, scene="snow_highway",
            caption="Snow-covered vehicles on a road near Buffalo, New York, on 20 November 2014."),
    Article("herald", "Hamburg", "Germany", "2023-05-12", "ship_fire", "Hamburg port celebrates its birthday with parade of ships",
            "Tall ships, tugboats and container vessels paraded along the Elbe on Friday as Hamburg's port marked "
            "its 834th birthday.", "Jan Petersen", scene="harbor",
            caption="Ships in the port of Hamburg, Germany, on 12 May 2023."),
    Article("northstar", "Beijing", "China", "2021-03-15", "dust", "Beijing hit by worst sandstorm in a decade",
            "A huge sandstorm blown in from Inner Mongolia and the Gobi desert turned the sky over Beijing yellow "
            "on Monday.", "Chen Yu", scene="dust_skyline",
            caption="Buildings in Beijing, China, shrouded in dust on 15 March 2021."),
    Article("meridian", "Antakya", "Turkey", "2024-02-06", "quake", "One year after the earthquake, Antakya rebuilds slowly",
            "A year after the earthquake that flattened much of Antakya, cranes and container homes fill the city "
            "where apartment blocks once stood.", "Murat Aksoy", scene="rubble",
            caption="Demolition work continues in Antakya, Turkey, on 6 February 2024."),
    Article("ledger", "Athens", "Greece", "2023-07-13", "wildfire", "Heatwave: Acropolis closes as temperatures top 40C",
            "Authorities closed the Acropolis during the hottest hours of the day on Thursday as a heatwave pushed "
            "temperatures in Athens above 40 degrees.", "Nikos Papadakis"),
    Article("globalwire", "Santiago", "Chile", "2020-10-18", "protest", "Santiago marks a year since the start of mass protests",
            "Tens of thousands gathered around Plaza Italia in Santiago on Sunday to mark one year since the "
            "protests that shook Chile began.", "Matías Herrera", scene="crowd_plaza",
            caption="Crowds gather in Santiago, Chile, on 18 October 2020."),
    Article("lens", "Paradise", "United States", "2023-11-08", "wildfire", "Paradise, five years after the Camp Fire",
            "Five years after the Camp Fire, new houses stand on lots that were ash, and the town's population is "
            "slowly growing again.", "Jessica Tran"),
    Article("stormtrack", "Fort Myers", "United States", "2022-09-29", "flood", "Hurricane Ian: storm surge floods Fort Myers",
            "A storm surge of more than three metres swept through Fort Myers on Wednesday as Hurricane Ian made "
            "landfall on Florida's Gulf coast.", None, scene="flood_street",
            caption="Floodwater in a street in Fort Myers, Florida, on 29 September 2022."),
    Article("northstar", "Moore", "United States", "2013-05-20", "storm", "Tornado devastates Moore, Oklahoma",
            "A violent tornado tore through the city of Moore, south of Oklahoma City, on Monday afternoon, "
            "flattening homes and two schools.", "Emily Carter", scene="storm_field",
            caption="A storm over the plains near Moore, Oklahoma, on 20 May 2013."),
    Article("observer", "Johannesburg", "South Africa", "2023-08-03", "evacuation",
            "Minibus taxi strike brings Johannesburg traffic to a standstill",
            "A strike by minibus taxi operators left commuters stranded and highways around Johannesburg jammed on "
            "Thursday.", "Naledi Mokoena", scene="highway_traffic",
            caption="Traffic on a highway into Johannesburg, South Africa, on 3 August 2023."),
    Article("gazette", "New York City", "United States", "2019-07-13", "blackout",
            "Manhattan blackout leaves West Side in the dark",
            "A power failure cut electricity to a large part of Manhattan's West Side on Saturday evening, "
            "darkening Times Square billboards and stopping subway lines.", "Rachel Gomez",
            scene="night_skyline_dark",
            caption="Darkened buildings in Manhattan, New York City, on 13 July 2019."),
    Article("globalwire", "Antwerp", "Belgium", "2022-06-09", "industrial_fire", "Fire at chemical plant in Antwerp port",
            "A fire at a chemical plant in the port of Antwerp sent a column of smoke over the Scheldt on "
            "Thursday; residents were told to keep windows closed.", "Sanne Jansen", scene="industrial_fire",
            caption="Smoke rises from a chemical plant in the port of Antwerp, Belgium, on 9 June 2022."),
    Article("capital", "Brussels", "Belgium", "2024-02-26", "protest", "Farmers return to Brussels with tractors",
            "Hundreds of tractors blocked streets near the EU headquarters in Brussels on Monday as agriculture "
            "ministers met.", "Claire Martin", scene="protest_no_farmers",
            caption="Farmers protest with tractors in Brussels, Belgium, on 26 February 2024."),
    Article("meridian", "Kruger National Park", "South Africa", "2020-04-16", "lockdown",
            "Lions nap on empty road in Kruger park during lockdown",
            "With tourists kept away by the lockdown, rangers in Kruger National Park found a pride of lions "
            "sleeping on a tarred road normally busy with safari vehicles.", "Johan Botha"),
    Article("tribune", "Lisbon", "Portugal", "2022-12-13", "storm", "Flash floods hit Lisbon for second time in a week",
            "Torrential rain flooded streets and metro stations in Lisbon on Tuesday, days after a first storm "
            "caused widespread damage.", "Inês Carvalho", scene="storm_city",
            caption="Rain over the rooftops of Lisbon, Portugal, on 13 December 2022."),
    Article("northstar", "Fujiyoshida", "Japan", "2024-07-01", "mountain", "Mount Fuji climbing season opens with new entry fee",
            "Climbers on Mount Fuji's most popular trail now pay a fee and must book a slot, as the summer climbing "
            "season opened on Monday.", "Yuki Tanaka", scene="mountain_lake",
            caption="Mount Fuji seen from the lakeshore, Japan, on 1 July 2024."),
    Article("stormtrack", "Seattle", "United States", "2022-04-20", "sky",
            "Bright lights over the Pacific Northwest were a satellite train",
            "A string of bright dots moving across the sky over Seattle on Wednesday evening was a batch of "
            "recently launched satellites, astronomers said.", None, published=None),
    Article("urbanlens", "Seattle", "United States", "2022-11-05", "night_city", "Seattle after dark: a photo walk",
            "Our photo walk along the Seattle waterfront, from the piers to the sculpture park, with tips for long "
            "exposures of the skyline.", "Kim Harlow", scene="night_skyline_tower",
            caption="The Seattle skyline at night, 5 November 2022."),
    Article("herald", "Verona", "Italy", "2023-07-21", "hail", "Hail the size of golf balls hits northern Italy",
            "Hailstorms swept across the Veneto and Lombardy on Friday, smashing car windscreens and injuring "
            "dozens of people.", "Giulia Ferri", scene="hail_street",
            caption="Hail-damaged cars in Verona, Italy, on 21 July 2023."),
    Article("ledger", "Al Haouz", "Morocco", "2023-09-09", "quake", "Rescuers search for survivors after Morocco earthquake",
            "Rescuers dug through the rubble of mountain villages in Al Haouz province on Saturday after the "
            "strongest earthquake to hit Morocco in decades.", "Youssef Amrani", scene="rubble",
            caption="Rescue workers in a damaged village in Al Haouz province, Morocco, on 9 September 2023."),
    Article("observer", "Colombo", "Sri Lanka", "2021-05-25", "ship_fire", "Container ship burns off Sri Lanka's coast",
            "A container ship carrying chemicals burned off the coast near Colombo on Tuesday, with plastic pellets "
            "washing up on nearby beaches.", "Nimal Perera", scene="harbor",
            caption="Smoke rises from a container ship off Colombo, Sri Lanka, on 25 May 2021."),
    Article("capital", "Madrid", "Spain", "2021-01-09", "snow", "Storm Filomena buries Madrid in snow",
            "The heaviest snowfall in half a century paralysed Madrid on Saturday, stranding drivers on the city's "
            "ring roads.", "Lucía Romero", scene="snow_highway",
            caption="Vehicles stuck in snow on a road in Madrid, Spain, on 9 January 2021."),
    Article("tribune", "Buenos Aires", "Argentina", "2023-11-04", "football", "Fans pack the Monumental for the cup final",
            "More than 80,000 fans filled the Monumental stadium in Buenos Aires on Saturday for the final of South "
            "America's top club competition.", "Martín Acosta", scene="stadium",
            caption="Fans in the stands of the Monumental stadium in Buenos Aires, Argentina, on 4 November 2023."),
    Article("trendfeed", "Lisbon", "Portugal", "2023-11-07", "storm", "Waterspout filmed off the Lisbon coast",
            "Beachgoers filmed a waterspout spinning over the sea off the coast near Lisbon on Tuesday; it "
            "dissipated before reaching land.", None),
    Article("gazette", "Mumbai", "India", "2019-06-28", "water", "Mumbai residents wait for tankers as wells run dry",
            "In suburbs on the edge of Mumbai, families queued for hours on Friday for water delivered by tanker "
            "trucks.", "Priya Raman", scene="queue_street",
            caption="Residents wait for a water tanker on the outskirts of Mumbai, India, on 28 June 2019."),
    Article("trendfeed", "Phoenix", "United States", "2022-07-10", "dust", "Haboob swallows Phoenix in minutes",
            "A towering wall of dust rolled over Phoenix on Sunday evening, cutting visibility to near zero on "
            "the freeways.", None, published=None, scene="dust_skyline",
            caption="A dust storm over Phoenix, Arizona, on 10 July 2022."),
)


TOPIC_PARAGRAPHS: dict[str, tuple[str, ...]] = {
    "flood": ("Emergency services urged residents in low-lying areas to move to higher ground and not to walk or drive "
              "through floodwater, which can hide open drains and debris.",
              "Power was cut to several neighbourhoods as a precaution, and schools in the affected districts were "
              "closed until further notice.",
              "Meteorologists warned that more rain was expected over the coming days."),
    "wildfire": ("Firefighting aircraft dropped water on the flames while ground crews cut firebreaks to protect homes on "
                 "the edge of the burning area.",
                 "Officials urged residents to follow evacuation orders promptly, warning that a shift in the wind could "
                 "push the fire in a new direction within minutes.",
                 "Smoke drifted over nearby towns, and health authorities advised people to stay indoors."),
    "protest": ("Organisers put the turnout at several times the figure given by police, a familiar gap in counts of "
                "large demonstrations.",
                "Public transport in the city centre was disrupted for several hours as marchers filled the main "
                "avenues.",
                "Police said the day passed largely without incident."),
    "snow": ("Snowploughs struggled to keep up with drifting snow, and officials said abandoned vehicles were slowing "
             "the clean-up.",
             "Forecasters said temperatures would stay well below freezing for several more days.",
             "Residents were urged to stay off the roads unless their journey was essential."),
    "ship_fire": ("Fireboats sprayed water onto the burning containers while crews on the quay kept other vessels at a "
                  "distance.",
                  "Port authorities suspended operations at nearby berths for several hours as a precaution.",
                  "Investigators will examine the cargo manifests to find out what was stored in the containers."),
    "dust": ("Health officials advised children, older people and anyone with breathing problems to stay indoors and "
             "to wear masks outside.",
             "Meteorologists said the dust had been carried hundreds of kilometres by strong winds from arid regions.",
             "Flights were delayed as visibility dropped at the city's airports."),
    "quake": ("Aftershocks continued to rattle the region, complicating the work of rescue teams and leaving many "
              "residents afraid to return indoors.",
              "International search-and-rescue teams were arriving, but debris still blocked access to some districts.",
              "Aid groups appealed for tents, blankets and heaters as night-time temperatures fell below freezing."),
    "evacuation": ("Officials urged drivers to fill up before leaving and to follow designated evacuation routes rather "
                   "than side roads.",
                   "Shelters opened in schools and sports halls further inland for residents with nowhere else to go.",
                   "Traffic authorities said journeys that normally take an hour were taking five or more."),
    "storm": ("Weather services issued warnings for large hail, damaging winds and possible tornadoes as the storm "
              "system moved east.",
              "Storm chasers lined rural roads to photograph the towering clouds, while emergency managers urged "
              "residents to stay indoors.",
              "Utility crews were on standby to repair lines brought down by the wind."),
    "football": ("Fans began arriving hours before kick-off, and public transport ran extra services to cope with the "
                 "crowds.",
                 "Police said the celebrations were largely peaceful, although several streets were closed to traffic "
                 "late into the night.",
                 "Street vendors sold flags, scarves and shirts in the national colours."),
    "blackout": ("Traffic lights failed across the city, and volunteers directed cars at major junctions until police "
                 "arrived.",
                 "Hospitals switched to backup generators, and officials appealed to residents to check on elderly "
                 "neighbours.",
                 "Grid operators said restoring power would be done in stages to avoid overloading the network."),
    "industrial_fire": ("Air quality was being monitored around the site, and residents were advised to keep windows and "
                        "doors closed.",
                        "Investigators said it was too early to say what caused the fire.",
                        "Nearby roads were closed to allow fire engines to reach the site."),
    "lockdown": ("Only essential workers and people buying food or medicine were allowed to travel, and roadblocks were "
                 "set up on major routes.",
                 "Business groups warned that the restrictions would hit informal traders especially hard.",
                 "Officials said the measures would be reviewed at the end of the month."),
    "mountain": ("Photographers gathered before dawn along the shore to capture the mountain's reflection on the still "
                 "water.",
                 "Local officials reminded visitors to respect private land and not to stop on narrow roads.",
                 "Winter is the best season for views of the mountain, when the air is clear and dry."),
    "night_city": ("The waterfront is a favourite spot for night photography, with long exposures capturing the city "
                   "lights reflected in the bay.",
                   "Clear nights are rare in the region at this time of year, when cloud and drizzle usually dominate.",
                   "Photographers recommend a tripod and an exposure of several seconds."),
    "sky": ("Astronomers said such sightings are increasingly common shortly after launches, when the satellites fly "
            "close together.",
            "Reports of unusual lights in the sky usually have an ordinary explanation, from aircraft to planets."),
    "hail": ("Insurers said they expected a large number of claims for damaged cars, roofs and windows.",
             "Meteorologists said warm, humid air combined with cold air aloft had created ideal conditions for large "
             "hail.",
             "Residents shared pictures of hailstones piled in gutters and on balconies."),
    "market_fire": ("Traders said they had lost goods worth years of savings, and many had no insurance.",
                    "Fire officials said narrow passageways and illegal electrical connections made it hard to stop the "
                    "blaze from spreading.",
                    "The market association called for a review of fire safety across the city's markets."),
    "water": ("Residents said they were spending hours each day waiting for tankers, often starting before dawn.",
              "Authorities blamed the shortage on weak rains and reservoirs that had fallen to a fraction of their "
              "capacity.",
              "Hotels and restaurants cut back on services to save water."),
    "ice": ("Crews worked around the clock to restore power, but officials warned that some customers could be without "
            "electricity for days.",
            "Residents were urged not to approach fallen lines and to report them to the utility.",
            "Warming centres opened for people whose homes had lost heating."),
    "fish_kill": ("Environmental officials collected water samples to find out whether low oxygen, pollution or warm "
                  "water was to blame.",
                  "Residents were told not to collect or eat the dead fish.",
                  "Fishermen said the losses would hit their income for months."),
    "editing": ("Reverse image search usually finds the original within minutes: the same street, the same cars, the "
                "same clouds, but nothing swimming in the water.",
                "Look for edges that are too sharp, shadows that fall the wrong way, and water that does not ripple "
                "around the object.",
                "Many of these pictures first circulated years ago and are reshared with a new caption each time."),
}


# ---------------------------------------------------------------------------------------
# Page writing
# ---------------------------------------------------------------------------------------

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")


def long_date(iso: str) -> str:
    day = date.fromisoformat(iso)
    return f"{day.day} {MONTHS[day.month - 1]} {day.year}"


def shifted(iso: str, days: int) -> str:
    return (date.fromisoformat(iso) + timedelta(days=days)).isoformat()


def claim_day(claim: str) -> str:
    """The date printed in a claim, as ISO (claims use '6 May 2024' or '2024-05-06')."""
    iso = re.search(r"\d{4}-\d{2}-\d{2}", claim)
    if iso:
        return iso.group(0)
    day, month, year = re.search(r"(\d{1,2}) ([A-Z][a-z]+) (\d{4})", claim).groups()
    return date(int(year), MONTHS.index(month) + 1, int(day)).isoformat()


def slugify(text: str, max_words: int = 9) -> str:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return "-".join(re.findall(r"[a-z0-9]+", ascii_text)[:max_words])


def serial(*parts: object, digits: int = 6) -> int:
    return stable_seed("serial", *parts) % 10**digits


def article_url(site_key: str, day: str, title: str) -> str:
    site = SITES[site_key]
    base, slug, n = f"https://{site.domain}", slugify(title), serial(site_key, day, title)
    yyyy, mm, dd = day.split("-")
    styles = {
        "agency_dated": f"{base}/news/{yyyy}/{mm}/{dd}/{slug}",
        "agency_serial": f"{base}/{day}/{slug}-{n:06d}",
        "section_serial": f"{base}/world/{slug}-n{n:06d}",
        "image_serial": f"{base}/editorial/image/{n:06d}",
        "collection": f"{base}/collections/{slugify(title, 5)}/photo-{n % 100000:05d}",
        "yearly": f"{base}/{yyyy}/{slug}",
        "monthly_slash": f"{base}/{yyyy}/{mm}/{slug}/",
        "report": f"{base}/reports/{yyyy}{mm}{dd}-{slug}",
        "post": f"{base}/p/{slug}-{n % 100000:05d}",
        "blog_html": f"{base}/{yyyy}/{mm}/{dd}/{slug}.html",
        "check": f"{base}/checks/{yyyy}/{mm}/{slug}",
        "rating": f"{base}/rating/{n % 100000:05d}-{slug}",
    }
    return styles[site.url_style]


def fact_check_url(site_key: str, day: str, title: str) -> str:
    if site_key == "observer":
        return f"{FACT_CHECK_SECTIONS['observer']}{day[:4]}/{slugify(title)}"
    if site_key == "globalwire":
        return f"{FACT_CHECK_SECTIONS['globalwire']}{slugify(title)}-{serial('verify', title):06d}"
    return article_url(site_key, day, title)


@dataclass
class PageImage:
    jpeg: bytes
    alt: str
    size: tuple[int, int]


@dataclass
class Page:
    url: str
    site: str
    title: str
    published: str | None
    author: str | None
    paragraphs: list[str]
    images: list[PageImage] = field(default_factory=list)
    blocked: bool = False

    @property
    def text(self) -> str:
        return "\n\n".join(self.paragraphs)


def page_image(image: Image.Image, rendition: Rendition, alt: str) -> PageImage:
    rendered = render(image, rendition)
    return PageImage(jpeg_bytes(rendered, rendition.quality), alt, rendered.size)


def topic_paragraphs(topic: str, rng: random.Random, count: int) -> list[str]:
    return rng.sample(TOPIC_PARAGRAPHS[topic], k=min(count, len(TOPIC_PARAGRAPHS[topic])))


def origin_page(story: Story, photo: Image.Image, rng: np.random.Generator) -> Page:
    event, site = story.event, SITES[story.origin_site]
    text_rng = random.Random(stable_seed("origin-text", story.key))
    crop = [0.0, 0.0, 0.0, 0.0]
    crop[int(rng.integers(4))] = 0.05  # agencies publish (nearly) the full frame
    rendition = Rendition(int(rng.choice([640, 680, 720])), int(rng.choice([86, 88, 90])), tuple(crop))
    return Page(
        article_url(story.origin_site, event.day, event.headline), story.origin_site, event.headline, event.day,
        story.reporter,
        [f"{event.place.upper()}, {event.country}, {long_date(event.day)} ({site.name}) — {event.lead}",
         event.detail,
         *topic_paragraphs(event.topic, text_rng, 2),
         f"Photo: {event.caption} Photograph by {story.photographer} for {site.name}."],
        [page_image(photo, rendition, event.caption)])


def bridge_page(story: Story, origin: Page, photo: Image.Image, rng: np.random.Generator) -> Page:
    """A later copy that credits the photographer and links the origin by URL."""
    event, agency = story.event, SITES[story.origin_site].name
    site_key, day = story.bridge
    crop = [0.0, 0.0, 0.0, 0.0]
    for edge in rng.choice(4, size=2, replace=False):
        crop[int(edge)] = float(np.round(rng.uniform(0.06, 0.15), 3))
    rendition = Rendition(int(rng.choice([480, 520, 560])), int(rng.choice([76, 80, 84])), tuple(crop))
    credit = f"{story.photographer} / {agency}"
    if VARIANT_SEED is not None and rng.random() < 0.6:  # tuning variants: libraries stamp their copies
        photo = library_mark(photo, f"© {credit}", rng)
    years = int(day[:4]) - int(event.day[:4])
    if site_key == "atlas":
        title = f"Editorial image: {event.what}"
        paragraphs = [f"Editorial image {serial(site_key, day, title):06d}", event.caption,
                      f"Photographer: {credit}. Date taken: {long_date(event.day)}. Location: {event.place}, "
                      f"{event.country}.",
                      f"Editorial use only. First distributed with the {agency} report \"{event.headline}\": "
                      f"{origin.url}",
                      f"Keywords: {event.topic.replace('_', ' ')}, {event.place}, {event.country}, {event.day[:4]}"]
        author = None
    elif site_key == "archive":
        title = f"{event.place} {event.day[:4]} — {event.what} (collection)"
        paragraphs = [f"From the collection \"{event.what[0].upper() + event.what[1:]}\".", event.caption,
                      f"Credit: {credit}. Source story: {origin.url}",
                      "Prints and licences are available for editorial and educational use. Captions are reproduced "
                      "as supplied by the original agency."]
        author = None
    else:
        ago = f"{years} years ago" if years > 1 else "This year"
        title = f"Looking back: {event.what}"
        paragraphs = [f"{ago}, {story.photographer} made this picture for {agency}: {event.caption}",
                      f"The original report, \"{event.headline}\", is still online at {origin.url}",
                      "We asked photographers to pick one frame that stayed with them. Their choices, and the stories "
                      "behind them, are collected in this series."]
        author = "Lens Collective editors"
    return Page(article_url(site_key, day, title), site_key, title, day, author, paragraphs,
                [page_image(photo, rendition, event.caption)])


def library_mark(photo: Image.Image, credit: str, rng: np.random.Generator) -> Image.Image:
    """A photo library's stamp on its copy: a translucent watermark across the picture, or an
    opaque credit strip along its bottom edge (tuning variants)."""
    overlay = Image.new("RGBA", photo.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    if rng.random() < 0.5:
        mark_font = font(photo.width // 16)
        draw.text((photo.width * 0.1, photo.height * rng.uniform(0.35, 0.6)), credit.upper(), font=mark_font, fill=(255, 255, 255, 110))
    else:
        strip = photo.height // 14
        draw.rectangle([0, photo.height - strip, photo.width, photo.height], fill=(0, 0, 0, 255))
        draw.text((12, photo.height - strip + strip // 5), credit, font=font(strip * 3 // 5), fill=(230, 230, 230, 255))
    return Image.alpha_composite(photo.convert("RGBA"), overlay).convert("RGB")


def article_page(article: Article, book: SceneBook, name: str, rng: np.random.Generator,
                 related: tuple[str, ...] = ()) -> Page:
    """A news or blog article; it may carry its own (different) photo."""
    published = article.day if article.published == "same" else article.published
    text_rng = random.Random(stable_seed("article-text", name))
    # Sites state place and date in their own ways; some leave the date to page metadata.
    if article.site == "stormtrack":
        opening = f"Report for {article.day} — {article.place}, {article.country}. {article.lead}"
    elif article.published is None or article.site in ("ledger", "capital", "tribune"):
        opening = f"{article.place.upper()}, {long_date(article.day)} — {article.lead}"
    else:
        opening = f"{article.place.upper()} — {article.lead}"
    paragraphs = [opening, *topic_paragraphs(article.topic, text_rng, 2)]
    images = []
    if article.scene:
        picture = book.paint(article.scene, name).image
        rendition = Rendition(int(rng.choice([520, 560, 600, 640])), int(rng.choice([78, 82, 85])))
        images.append(page_image(picture, rendition, article.caption))
        paragraphs.append(f"Pictured: {article.caption}")
    if related:
        paragraphs.append("Related coverage: " + " ".join(related))
    if article.author:
        paragraphs.append(f"Reporting by {article.author}.")
    title = article.headline
    return Page(article_url(article.site, article.day, title), article.site, title, published, article.author,
                paragraphs, images)


def fact_check_page(story: Story, case_image: Image.Image, original: Image.Image | None,
                    origin: Page | None, context: list[Page]) -> Page:
    """The benchmark's answer, stated outright: only ever reachable if the policy fails."""
    site_key, label, event = story.fact_check, story.label, story.event
    published = shifted(claim_day(story.claim), 3)
    title = f"Fact check: photo shared as \"{story.claim}\""
    # Fact-check desks inside news sites word their ratings like FactCheck Desk.
    rating = VERDICT_WORDS.get(site_key, VERDICT_WORDS["factdesk"])[label]
    agency = SITES[story.origin_site].name if story.origin_site else None
    if label == "authentic":
        finding = (f"The photo is genuine. It was taken by {story.photographer} for {agency} in {event.place} on "
                   f"{long_date(event.day)} and published with the report \"{event.headline}\" ({origin.url}). "
                   f"We found no earlier copies, and the scene matches other reporting of {event.what}.")
    elif label == "out_of_context":
        finding = (f"The photo is real, but it does not show {story.claimed_what}. It was taken by "
                   f"{story.photographer} in {event.place}, {event.country}, on {long_date(event.day)} during "
                   f"{event.what}, and first published by {agency} at {origin.url}. It is being reshared with a "
                   f"new caption.")
    elif label == "manipulated":
        finding = (f"The picture has been edited. The original, taken by {story.photographer} for {agency} on "
                   f"{long_date(event.day)} ({origin.url}), shows {story.edit.original}. The circulating version "
                   f"adds {story.edit.added}.")
    else:
        finding = ("We could not verify this picture. Reverse image searches found no earlier copy, and we found no "
                   "report of the scene described in the caption. The coverage we found concerns other events: "
                   + "; ".join(f"\"{page.title}\" ({page.url})" for page in context)
                   + ". Until an original source comes forward, we cannot say where or when it was taken.")
    paragraphs = [f"Claim: a picture shared on social media is captioned \"{story.claim}\".",
                  f"Rating: {rating}.", finding,
                  "How we checked: reverse image searches, comparison with agency archives and local news "
                  "coverage, and a frame-by-frame comparison with the earliest copy we could find."]
    images = []
    if label != "unverifiable":
        images.append(page_image(case_image, Rendition(420, 75), "Screenshot of the post being checked"))
    if original is not None:
        images.append(page_image(original, Rendition(400, 75), "The original photograph"))
    return Page(fact_check_url(site_key, published, title), site_key, title, published, "Fact-check team",
                paragraphs, images, blocked=True)


# ---------------------------------------------------------------------------------------
# Assembling the release
# ---------------------------------------------------------------------------------------


@dataclass
class BuiltCase:
    story: Story
    image: Image.Image  # the case image as the agent sees it (decoded from its JPEG)
    jpeg: bytes
    pages: dict[str, Page]  # role -> page: origin, bridge, context-N, fact_check
    context_roles: list[str]


def decoded(jpeg: bytes) -> Image.Image:
    return Image.open(io.BytesIO(jpeg)).convert("RGB")


def print_claim(photo: Image.Image, caption: Caption, claim: str) -> Image.Image:
    if caption.style == "post":
        return caption_below(photo, claim, caption.handle, caption.posted, caption.size, caption.face)
    if caption.style == "side":
        return caption_side(photo, claim, caption.size, caption.face, caption.fill)
    return caption_band(photo, claim, caption.size, caption.at_top, caption.tag, caption.face, caption.fill)


def build_case(story: Story, book: SceneBook) -> BuiltCase:
    rng = rng_for("case", story.key)
    painted = book.paint(story.scene, story.key)
    pictured = story.edit.apply(painted, rng) if story.edit else painted.image
    if VARIANT_SEED is None:
        jpeg = jpeg_bytes(print_claim(render(pictured, Rendition(CASE_PHOTO_WIDTH, 85)), story.caption, story.claim), 85)
    else:
        jpeg = case_variation(pictured, story, rng_for("variation", story.key))
    pages: dict[str, Page] = {}
    if story.event:
        pages["origin"] = origin_page(story, painted.image, rng)
        if story.bridge:
            pages["bridge"] = bridge_page(story, pages["origin"], painted.image, rng)
    context_roles = []
    for index, article in enumerate(story.context):
        role = f"context-{index + 1}"
        # Follow-up coverage of the same place cites the first article, as news sites do.
        related = (pages["context-1"].url,) if index and article.place == story.context[0].place else ()
        pages[role] = article_page(article, book, f"{story.key}/{role}", rng, related)
        context_roles.append(role)
    if story.fact_check:
        pages["fact_check"] = fact_check_page(
            story, decoded(jpeg), painted.image if story.edit else None, pages.get("origin"),
            [pages[role] for role in context_roles])
    return BuiltCase(story, decoded(jpeg), jpeg, pages, context_roles)


TUNING_FONTS = ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSerif-Bold.ttf",
                "/usr/share/fonts/truetype/dejavu/DejaVuSansCondensed-Oblique.ttf",
                "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf")


def case_variation(pictured: Image.Image, story: Story, rng: np.random.Generator) -> bytes:
    """A tuning variant's case image: the picture as a copy reaches a post, varied the ways
    copies vary (crop, size, tone and colour, a slight turn, mirroring, a watermark across
    the picture, screenshot chrome, caption placement, font, colours, quality)."""
    crop = tuple(float(np.round(rng.uniform(0.0, 0.12), 3)) if rng.random() < 0.5 else 0.0 for _ in range(4))
    photo = render(pictured, Rendition(int(rng.integers(300, 900)), 90, crop))
    array = to_array(photo) / 255.0
    gamma, contrast, brightness = rng.uniform(0.8, 1.25), rng.uniform(0.85, 1.15), rng.uniform(-0.06, 0.06)
    cast = 1.0 + rng.uniform(-0.05, 0.05, size=3)
    photo = to_image(((array ** gamma - 0.5) * contrast + 0.5 + brightness) * cast * 255.0)
    faces = [face for face in TUNING_FONTS if Path(face).exists()]
    face = str(rng.choice(faces)) if faces and rng.random() < 0.7 else None
    if rng.random() < 0.3:
        photo = photo.rotate(float(rng.uniform(-2.0, 2.0)), resample=Image.Resampling.BICUBIC, expand=False, fillcolor=(255, 255, 255))
    if rng.random() < 0.2 and not story.scene.startswith("protest"):
        photo = photo.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    if rng.random() < 0.3:  # a semi-transparent watermark across the picture
        overlay = Image.new("RGBA", photo.size, (0, 0, 0, 0))
        mark_font = font(max(14, photo.width // 18), face)
        ImageDraw.Draw(overlay).text((photo.width * rng.uniform(0.05, 0.4), photo.height * rng.uniform(0.2, 0.7)),
                                     str(rng.choice(["@viralnews", "SHARED", "newsfeed.example", "EXCLUSIVE"])),
                                     font=mark_font, fill=(255, 255, 255, 120))
        photo = Image.alpha_composite(photo.convert("RGBA"), overlay).convert("RGB")
    if rng.random() < 0.2:  # a screenshot: grey UI chrome above and below
        framed = Image.new("RGB", (photo.width + 16, photo.height + 70), (236, 236, 240))
        framed.paste(photo, (8, 44))
        ImageDraw.Draw(framed).text((12, 12), "9:41   photos.example   ...", font=font(16, face), fill=(60, 60, 60))
        photo = framed
    fill = tuple(int(v) for v in rng.choice([(8, 10, 14), (150, 20, 28), (16, 48, 120), (30, 30, 30)]))
    style = str(rng.choice(["post", "band", "side"]))
    caption = replace(story.caption, style=style, handle=story.caption.handle or "@newsdesk_now", at_top=bool(rng.random() < 0.5),
                      size=int(rng.integers(18, 30)), face=face, fill=fill)
    return jpeg_bytes(print_claim(photo, caption, story.claim), int(rng.integers(55, 93)))


def build_distractors(book: SceneBook) -> list[Page]:
    urls = [article_url(article.site, article.day, article.headline) for article in DISTRACTORS]
    pages = []
    for index, article in enumerate(DISTRACTORS):
        # A page cites the latest earlier distractor about the same place, as real sites do.
        earlier = sorted((other.day, urls[j]) for j, other in enumerate(DISTRACTORS)
                         if other.place == article.place and other.day < article.day)
        name = f"distractor-{index:02d}-{slugify(article.headline, 4)}"
        pages.append(article_page(article, book, name, rng_for(name), tuple(url for _, url in earlier[-1:])))
    return pages


def gold_row(case_id: str, built: BuiltCase) -> dict:
    story, pages = built.story, built.pages
    source_ids: dict[str, str] = {}
    sources = []
    for role in ("origin", "bridge", *built.context_roles):
        if role in pages:
            source_ids[role] = f"{case_id}-S{len(sources) + 1}"
            sources.append({"source_id": source_ids[role], "url": pages[role].url,
                            "content_sha256": sha256_text(pages[role].text), "role": role.split("-")[0]})
    facts = [{"fact_id": f"{case_id}-F{i + 1}", "statement": statement, "source_ids": [source_ids[r] for r in roles]}
             for i, (statement, roles) in enumerate(fact_statements(built))]
    bridges = [{"bridge_id": f"{case_id}-B{i + 1}", "source_id": source_ids[role],
                "reference_image_sha256": sha256_bytes(pages[role].images[0].jpeg)}
               for i, role in enumerate(r for r in ("origin", "bridge") if r in pages)]
    origin_pages = [pages["fact_check"]] if "fact_check" in pages else []
    return {"case_id": case_id, "label": story.label,
            "reference_chain": {"sources": sources, "facts": facts, "bridges": bridges,
                                "benchmark_origin": [{"url": p.url, "content_sha256": sha256_text(p.text)}
                                                     for p in origin_pages]}}


def fact_statements(built: BuiltCase) -> list[tuple[str, list[str]]]:
    """What a correct investigation establishes, each with the roles of its supporting pages."""
    story, pages, event = built.story, built.pages, built.story.event
    agency = SITES[story.origin_site].name if story.origin_site else ""
    has_bridge = "bridge" in pages
    news_context = [r for r, a in zip(built.context_roles, story.context) if a.topic != "editing"]
    if story.label == "authentic":
        facts = [(f"{agency} first published the photograph on {long_date(event.day)} with its report "
                  f"\"{event.headline}\" from {event.place}, {event.country}.", ["origin"])]
        if has_bridge:
            facts.append((f"{SITES[story.bridge[0]].name} carries the same photograph credited to "
                          f"{story.photographer} / {agency} and links it to the original report.", ["bridge"]))
        facts.append((f"Independent coverage reports {event.what} on {long_date(event.day)}, matching the place and "
                      f"date in the claim.", news_context))
        return facts
    if story.label == "out_of_context":
        claimed = claim_day(story.claim)
        years = int(claimed[:4]) - int(event.day[:4])
        return [(f"The photograph was taken by {story.photographer} and first published by {agency} on "
                 f"{long_date(event.day)}, showing {event.what} ({event.place}, {event.country}).",
                 ["origin", "bridge"] if has_bridge else ["origin"]),
                (f"The photograph was published {years} years before the date in the claim "
                 f"({long_date(claimed)}) and shows a different place and event than {story.claimed_what}.",
                 ["origin"]),
                (f"Coverage of {story.claimed_what} shows different photographs.", news_context)]
    if story.label == "manipulated":
        facts = [(f"The unedited photograph was published by {agency} on {long_date(event.day)} and shows "
                  f"{story.edit.original}.", ["origin"]),
                 (f"The circulating image matches the original except in one region: it adds {story.edit.added}.",
                  ["origin"]),
                 (f"{agency}'s follow-up coverage of {event.what} describes the scene with nothing of the kind.",
                  news_context)]
        explainers = [r for r, a in zip(built.context_roles, story.context) if a.topic == "editing"]
        if explainers:
            facts.append(("Flood photos with pasted-in animals are a recurring hoax format.", explainers))
        return facts
    first, second = story.context
    return [(f"No earlier copy of the photograph can be found; the closest look-alike shows {first.place} on "
             f"{long_date(first.day)} and is a different picture.", ["context-1"]),
            (f"Coverage of {second.place} on {long_date(second.day)} (\"{second.headline}\") concerns another "
             f"event and does not confirm the claim.", ["context-2"])]


def assign_case_ids(stories: tuple[Story, ...]) -> list[tuple[str, Story]]:
    """Case ids follow a fixed shuffle, so neither ids nor file order group the labels."""
    order = list(stories)
    random.Random(stable_seed("case-order", RELEASE_ID)).shuffle(order)
    return [(f"demo-{index + 1:04d}", story) for index, story in enumerate(order)]


def source_access_policy(all_pages: list[Page]) -> dict:
    blocked_hashes = sorted(sha256_text(p.text) for p in all_pages if p.blocked and p.site in FACT_CHECK_BY_CONTENT)
    return {"policy_id": f"{RELEASE_ID}-benchmark-origin-v1",
            "blocked_domains": list(FACT_CHECK_DOMAINS),
            "blocked_url_prefixes": list(FACT_CHECK_SECTIONS.values()),
            "blocked_content_sha256": blocked_hashes,
            "cache_partition": f"{RELEASE_ID}/evaluation"}


MANIFEST = {
    "schema_version": "ifv-runtime-release-v0.3",
    "release_id": RELEASE_ID,
    "release_stage": "development_subset",
    "runtime_contract_version": "ifv-runtime-contract-v0.3",
    "input_mode": "image_only",
    "decision_policy_version": "unified-react-v1",
    "label_set": list(LABELS),
    "artifacts": {
        "evaluation_gold": "private/evaluation_gold.jsonl",
        "classification_protocol": "private/classification_protocol.json",
        "process_reference_protocol": "private/process_reference_protocol.json",
        "source_access_policy": "private/source_access_policy.json",
        "corpus": "corpus",
    },
}

CLASSIFICATION_PROTOCOL = {
    "protocol_version": "ifv-classification-protocol-v1",
    "label_set": list(LABELS),
    "labels": {
        "authentic": "The image is real and the printed claim places it correctly: its place, date and event match "
                     "where the image was first published.",
        "out_of_context": "The image is real and unedited, but the claim attaches it to the wrong time, place or event.",
        "manipulated": "The image has been edited or synthesised so that it shows something the original scene did not.",
        "unverifiable": "The evidence available can neither confirm nor refute the claim: no original source or earlier "
                        "copy of the image can be found.",
    },
    "metrics": ["accuracy", "macro_f1", "per_class_precision", "per_class_recall", "per_class_f1", "confusion_matrix"],
    "abstention": {
        "allowed": False,
        "unverifiable_is_a_verdict": True,
        "missing_or_invalid_judgment": "scored as incorrect; counted as a prediction of no class",
    },
}

PROCESS_REFERENCE_PROTOCOL = {
    "process_reference_protocol_version": "ifv-process-reference-v1",
    "url_matching": {
        "normalization": ["lowercase scheme and host", "drop a leading 'www.'", "drop the default port",
                          "drop the fragment", "drop utm_* query parameters", "drop a trailing slash"],
        "match": "a visited page matches a gold source when the normalized URLs are equal or the content_sha256 "
                 "values are equal",
    },
    "bridge_matching": {
        "tool": "compare_with_reference",
        "match": "the call compared the case image with the image whose sha256 is the bridge's "
                 "reference_image_sha256, taken from the bridge's source page",
    },
    "benchmark_origin": {
        "handling": "blocked by the source-access policy before anything reaches the model",
        "match": "normalized URL or content_sha256",
        "visit_counts_as": "source_policy_violation",
    },
}

# Byte-identical output holds for the same image and array libraries on CPUs with the same
# vector instructions: JPEG encoding, text rasterising and resampling may change between Pillow
# releases, and numpy's powers and sines in their last bits between CPUs (with AVX512 it uses
# other kernels), which moves a few pixels (tests/test_example_release.py bounds how far).
BUILD_LIBRARIES = f"Pillow {PIL.__version__}, numpy {np.__version__}"

README = f"""# {RELEASE_ID}

A small, fully synthetic benchmark release generated by `scripts/make_example_release.py`
(deterministic: rerunning it with the same libraries rewrites these files byte for byte on a
CPU with the same vector instructions; on another, a few pixels of a few pictures may round
the other way). Pictures are painted procedurally; sites, photographers and many events are
fictional, although real place names are used so that claims read like real ones. Nothing here
is a record of real events.

- `runtime_input/`: what the agent sees, one image per case with the claim printed on it.
- `private/`: gold reference chains, protocols and the source-access policy (never shown to the agent).
- `corpus/`: the offline web the embedded tools search and visit.

Built with: {BUILD_LIBRARIES}
"""


# ---------------------------------------------------------------------------------------
# Writing files
# ---------------------------------------------------------------------------------------


def dump_json(data: object) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def dump_jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def prepare_output_dir(out: Path) -> None:
    """Empty `out`, but only if it is empty already or holds an earlier copy of this release."""
    if out.exists():
        manifest = out / "manifest.json"
        is_ours = manifest.is_file() and json.loads(manifest.read_text("utf-8")).get("release_id") == RELEASE_ID
        if any(out.iterdir()) and not is_ours:
            raise SystemExit(f"refusing to overwrite {out}: it is not empty and holds no {RELEASE_ID} release")
        shutil.rmtree(out)
    for sub in ("runtime_input/images", "private", "corpus/images"):
        (out / sub).mkdir(parents=True)


@dataclass
class Release:
    cases: list[tuple[str, BuiltCase]]
    pages: list[tuple[str, Page]]  # (page_id, page), page_id order
    policy: dict


def build_release() -> Release:
    book = SceneBook()
    built = {story.key: build_case(story, book) for story in STORIES}
    cases = [(case_id, built[story.key]) for case_id, story in assign_case_ids(STORIES)]
    all_pages = [page for _, case in cases for page in case.pages.values()] + build_distractors(book)
    # Page ids follow a hash of the URL: the corpus order says nothing about roles or cases.
    all_pages.sort(key=lambda page: sha256_text(page.url))
    pages = [(f"p{index + 1:04d}", page) for index, page in enumerate(all_pages)]
    return Release(cases, pages, source_access_policy(all_pages))


def write_release(release: Release, out: Path) -> None:
    prepare_output_dir(out)
    (out / "manifest.json").write_text(dump_json(MANIFEST), "utf-8")
    (out / "README.md").write_text(README, "utf-8")
    case_rows = []
    for case_id, case in release.cases:
        relative = f"runtime_input/images/{case_id}.jpg"
        (out / relative).write_bytes(case.jpeg)
        case_rows.append({"case_id": case_id, "image_path": relative, "image_sha256": sha256_bytes(case.jpeg)})
    (out / "runtime_input/cases.jsonl").write_text(dump_jsonl(case_rows), "utf-8")
    gold = [gold_row(case_id, case) for case_id, case in release.cases]
    (out / "private/evaluation_gold.jsonl").write_text(dump_jsonl(gold), "utf-8")
    (out / "private/classification_protocol.json").write_text(dump_json(CLASSIFICATION_PROTOCOL), "utf-8")
    (out / "private/process_reference_protocol.json").write_text(dump_json(PROCESS_REFERENCE_PROTOCOL), "utf-8")
    (out / "private/source_access_policy.json").write_text(dump_json(release.policy), "utf-8")
    page_rows = []
    for page_id, page in release.pages:
        images = []
        for index, image in enumerate(page.images):
            relative = f"images/{page_id}-{index + 1}.jpg"
            (out / "corpus" / relative).write_bytes(image.jpeg)
            images.append({"path": relative, "sha256": sha256_bytes(image.jpeg), "alt": image.alt,
                           "width": image.size[0], "height": image.size[1]})
        site = SITES[page.site]
        page_rows.append({"page_id": page_id, "url": page.url, "domain": page.url.split("/")[2],
                          "site_name": site.name, "title": page.title, "published": page.published,
                          "author": page.author, "text": page.text, "content_sha256": sha256_text(page.text),
                          "images": images})
    (out / "corpus/pages.jsonl").write_text(dump_jsonl(page_rows), "utf-8")


# ---------------------------------------------------------------------------------------
# Reports: OCR read-back of the printed claims, perceptual-hash distances
# ---------------------------------------------------------------------------------------


def squeeze(text: str) -> str:
    """Lower-case letters and digits only: the OCR engine often drops spaces between words."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def ocr_report(release: Release) -> None:
    from rapidocr_onnxruntime import RapidOCR

    engine = RapidOCR()
    exact = 0
    for case_id, case in release.cases:
        result, _ = engine(np.asarray(case.image))
        read = " ".join(line[1] for line in result or [])
        ok = squeeze(case.story.claim) in squeeze(read)
        exact += ok
        if not ok:
            print(f"  OCR miss {case_id}: {read!r}")
    print(f"OCR read-back: {exact}/{len(release.cases)} claims read back exactly (ignoring spaces and case)")


def phash_report(release: Release) -> None:
    corpus = [(page, imagehash.phash(decoded(image.jpeg))) for _, page in release.pages for image in page.images]
    rows = {label: {"copy": [], "distractor": []} for label in LABELS}
    for case_id, case in release.cases:
        digest = imagehash.phash(photo_region(case.image))
        own = {id(case.pages[r]) for r in ("origin", "bridge") if r in case.pages}
        chain = {id(page) for page in case.pages.values()}
        copies = [digest - h for page, h in corpus if id(page) in own]
        others = [digest - h for page, h in corpus if id(page) not in chain]
        rows[case.story.label]["copy"].append(min(copies) if copies else None)
        rows[case.story.label]["distractor"].append(min(others))
    for label, found in rows.items():
        copies = [d for d in found["copy"] if d is not None]
        span = f"{min(copies)}-{max(copies)} (mean {sum(copies) / len(copies):.1f})" if copies else "none in corpus"
        print(f"{label:15s} nearest own copy: {span:24s} nearest other picture: "
              f"{min(found['distractor'])}-{max(found['distractor'])}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"release directory (default: {DEFAULT_OUT})")
    parser.add_argument("--check-ocr", action="store_true", help="OCR every case image and report claim read-back")
    parser.add_argument("--stats", action="store_true", help="report perceptual-hash distances")
    parser.add_argument("--seed", type=int, help="a tuning variant drawn from this seed (default: the bundled release)")
    args = parser.parse_args(argv)
    global VARIANT_SEED
    VARIANT_SEED = args.seed
    release = build_release()
    write_release(release, args.out)
    print(f"wrote {args.out}: {len(release.cases)} cases, {len(release.pages)} corpus pages")
    if args.stats:
        phash_report(release)
    if args.check_ocr:
        ocr_report(release)
    return 0


if __name__ == "__main__":
    sys.exit(main())
