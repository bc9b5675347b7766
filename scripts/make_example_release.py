#!/usr/bin/env python3
"""Generate the bundled demo benchmark release ``examples/eviscene-demo-v1``.

Everything is synthetic: pictures are painted procedurally, pages are written from
templates, and the publications, photographers and most events are fictional (real city
names are used so claims read like real ones). The release follows DESIGN §2: public
cases with the claim printed in the image, private gold reference chains, protocols, a
source-access policy, and an offline corpus ("web") for the embedded tools.

Determinism: every random choice comes from a generator seeded by a sha256 of a stable
name, no clock or hash-randomised ordering is read, and files are written with fixed
encoders, so running the script twice gives byte-identical files (for the same Pillow/libjpeg
and numpy builds).

    python scripts/make_example_release.py                       # writes examples/eviscene-demo-v1
    python scripts/make_example_release.py --out /tmp/x --check-ocr --stats
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
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Callable

import numpy as np
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


def stable_seed(*parts: object) -> int:
    """A seed derived from names only, so adding a scene never reshuffles the others."""
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


def font(size: int) -> ImageFont.FreeTypeFont:
    # Pillow's bundled font: output never depends on the fonts a machine has installed.
    return ImageFont.load_default(size=size)


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


def finish(image: Image.Image, rng: np.random.Generator, grain: float = 5.0, vignette: float = 0.25,
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
    water_spot = (float(rng.uniform(0.3, 0.7)), (waterline + 0.55 * (SCENE_H - waterline)) / SCENE_H)
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
    horizon = int(rng.uniform(0.4, 0.5) * SCENE_H)
    image = sky(rng, (135, 160, 190), (205, 210, 215), (225, 225, 228), 0.6)
    image = ground(image, rng, horizon, (110, 110, 115), (150, 150, 150))
    draw = ImageDraw.Draw(image)
    building_row(draw, rng, -30, SCENE_W, horizon + 5, 170, 300,
                 [(200, 195, 185), (160, 160, 170), (190, 170, 140)])
    for _ in range(3):
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
    x0 = float(rng.uniform(140, 220))
    y0 = float(rng.uniform(0.55, 0.62) * SCENE_H)
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
    return Painted(finish(blend(image, haze, dust), rng, grain=6, cast=(6, 0, -10)))


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


def scene_night_skyline(rng: np.random.Generator, lit: float = 0.45, tower: bool = False) -> Painted:
    image = to_image(vertical_gradient(jitter(rng, (10, 14, 30), 6), jitter(rng, (40, 45, 70), 10)))
    image = blend(image, (60, 60, 90), fractal_noise(rng, SCENE_H, SCENE_W, 2, 4) * 0.3)
    draw = ImageDraw.Draw(image)
    waterline = int(rng.uniform(0.72, 0.82) * SCENE_H)
    building_row(draw, rng, float(rng.uniform(-60, 0)), SCENE_W, waterline, 120, 430,
                 [(25, 28, 40), (35, 38, 50), (20, 22, 30)], lit=lit, window_dark=(15, 17, 25))
    if tower:
        tx = float(rng.uniform(0.55, 0.85) * SCENE_W)
        draw.line([(tx, waterline), (tx, waterline - 400)], fill=(60, 62, 75), width=10)
        draw.ellipse([tx - 60, waterline - 420, tx + 60, waterline - 385], fill=(70, 72, 90))
        draw.line([(tx, waterline - 420), (tx, waterline - 470)], fill=(90, 90, 100), width=3)
    image = reflect_into_water(image, rng, waterline, (10, 12, 25), murk=0.5)
    open_sky = (float(rng.uniform(0.15, 0.4)), float(rng.uniform(0.12, 0.22)))
    return Painted(finish(image, rng, grain=7, vignette=0.35), {"open_sky": open_sky})


def scene_stadium(rng: np.random.Generator) -> Painted:
    image = to_image(vertical_gradient(jitter(rng, (40, 60, 110)), (150, 160, 180)))
    ys, xs = np.mgrid[0:SCENE_H, 0:SCENE_W].astype(np.float32)
    cx, cy = SCENE_W / 2 + float(rng.uniform(-120, 120)), SCENE_H * float(rng.uniform(0.62, 0.72))
    outer = ((xs - cx) / (SCENE_W * 0.75)) ** 2 + ((ys - cy) / (SCENE_H * 0.55)) ** 2 < 1
    pitch = ((xs - cx) / (SCENE_W * 0.38)) ** 2 + ((ys - cy) / (SCENE_H * 0.16)) ** 2 < 1
    array = to_array(image)
    speckle = rng.integers(0, len(CLOTHES), (SCENE_H, SCENE_W))
    colours = np.array(CLOTHES, np.float32)[speckle] * 0.8
    array[outer] = colours[outer]
    array[pitch] = np.array((60, 140, 60), np.float32) + (rng.random((int(pitch.sum()), 1)) * 20)
    image = to_image(array).filter(ImageFilter.GaussianBlur(0.8))
    draw = ImageDraw.Draw(image)
    for k in range(4):
        x = SCENE_W * (0.1 + 0.27 * k)
        draw.line([(x, SCENE_H * 0.35), (x, SCENE_H * 0.05)], fill=(200, 200, 200), width=5)
        draw.rectangle([x - 30, SCENE_H * 0.03, x + 30, SCENE_H * 0.08], fill=(255, 250, 220))
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
    vx = float(rng.uniform(0.4, 0.6) * SCENE_W)
    vy = float(rng.uniform(0.38, 0.48) * SCENE_H)
    draw = ImageDraw.Draw(image)
    draw.polygon([(vx, vy), (SCENE_W, SCENE_H), (0, SCENE_H)], fill=(85, 85, 90))
    draw.polygon([(vx, vy), (0, SCENE_H), (0, SCENE_H * 0.92)], fill=(150, 145, 140))
    draw.polygon([(vx, vy), (SCENE_W, SCENE_H), (SCENE_W, SCENE_H * 0.92)], fill=(150, 145, 140))
    for side, edge in ((-1, 0.0), (1, float(SCENE_W))):
        for k in range(6):
            t0, t1 = 0.12 + k * 0.15, 0.12 + (k + 1) * 0.15
            top0 = vy - (vy - float(rng.uniform(0.0, 0.25)) * SCENE_H) * t0 * 1.2
            top1 = vy - (vy - float(rng.uniform(0.0, 0.25)) * SCENE_H) * t1 * 1.2
            xa, xb = vx + (edge - vx) * t0, vx + (edge - vx) * t1
            ya, yb = vy + (SCENE_H * 0.92 - vy) * t0, vy + (SCENE_H * 0.92 - vy) * t1
            draw.polygon([(xa, top0), (xb, top1), (xb, yb), (xa, ya)],
                         fill=jitter(rng, [(200, 170, 130), (170, 175, 180), (220, 210, 195)][k % 3], 15))
            draw.polygon([(xa, ya - (ya - top0) * 0.25), (xb, yb - (yb - top1) * 0.25), (xb, yb), (xa, ya)],
                         fill=(70, 72, 78))
    for k in range(1, 8):
        t = k / 8
        draw.line([(vx, vy + (SCENE_H - vy) * t * t), (vx, vy + (SCENE_H - vy) * (t * t + 0.03))],
                  fill=(235, 235, 225), width=max(1, int(8 * t)))
    return Painted(finish(image, rng), {"carriageway": (vx / SCENE_W + 0.06, (vy + 0.45 * (SCENE_H - vy)) / SCENE_H)})


def scene_mountain_lake(rng: np.random.Generator) -> Painted:
    image = sky(rng, (70, 120, 200), (190, 215, 235), (250, 250, 250), 0.15)
    peak_x = float(rng.uniform(0.3, 0.7) * SCENE_W)
    peak_y = float(rng.uniform(0.12, 0.2) * SCENE_H)
    waterline = int(rng.uniform(0.6, 0.68) * SCENE_H)
    xs = np.arange(SCENE_W, dtype=np.float32)
    slope = peak_y + np.abs(xs - peak_x) ** 1.15 * 0.55
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
    stones = (rng.random((SCENE_H, SCENE_W)) > 0.985) & (np.arange(SCENE_H)[:, None] > horizon)
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
    "night_skyline_tower": lambda rng: scene_night_skyline(rng, lit=0.5, tower=True),
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
    image = blend(painted.image, (255, 150, 50), glow(x, y - 40, 150) * 0.9)
    smoke = plume(rng, x, y - 40, SCENE_H * 0.45, 40, 150, float(rng.uniform(-0.3, 0.3)))
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
    image = blend(painted.image, (170, 220, 255), glow(x, y, 150) * 0.55)
    ys, xs = np.mgrid[0:SCENE_H, 0:SCENE_W].astype(np.float32)
    beam = (ys > y) & (np.abs(xs - x) < 18 + (ys - y) * 0.35)
    image = blend(image, (190, 230, 255), beam * 0.18 * np.clip(1 - (ys - y) / 300, 0, 1))
    layer, draw = new_layer()
    draw.ellipse([x - 34, y - 34, x + 34, y + 2], fill=(150, 170, 185, 255))
    draw.ellipse([x - 85, y - 16, x + 85, y + 16], fill=(120, 130, 140, 255))
    for k in range(7):
        lx = x - 66 + k * 22
        draw.ellipse([lx - 5, y - 3, lx + 5, y + 7], fill=(255, 250, 190, 255))
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


def caption_below(photo: Image.Image, claim: str, handle: str, posted: str, size: int) -> Image.Image:
    """A social-media post: the photo above a white strip with the account and the claim."""
    width = photo.width
    claim_font, meta_font = font(size), font(16)
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


def caption_band(photo: Image.Image, claim: str, size: int, at_top: bool, tag: str | None) -> Image.Image:
    """A semi-transparent dark band over the photo with light text, as on shared graphics."""
    claim_font = font(size)
    lines = wrap(claim, claim_font, photo.width - 40)
    line_height = int(size * 1.3)
    band_h = 22 + line_height * len(lines)
    top = 0 if at_top else photo.height - band_h
    overlay = Image.new("RGBA", photo.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    draw.rectangle([0, top, photo.width, top + band_h], fill=(8, 10, 14, 170))
    y = top + 11
    for line in lines:
        draw.text((20, y), line, font=claim_font, fill=BAND_TEXT + (255,))
        y += line_height
    if tag:
        tag_font = font(15)
        tag_y = photo.height - 26 if at_top else 8
        tag_w = tag_font.getlength(tag) + 16
        draw.rectangle([photo.width - tag_w - 8, tag_y, photo.width - 8, tag_y + 20], fill=(180, 20, 30, 220))
        draw.text((photo.width - tag_w, tag_y + 2), tag, font=tag_font, fill=(255, 255, 255, 255))
    return Image.alpha_composite(photo.convert("RGBA"), overlay).convert("RGB")


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
