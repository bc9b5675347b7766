"""Deterministic picture fixtures: photo-like scenes drawn with Pillow, and the edits a
case image typically carries (resize, crop, recompression, caption banner, caption band,
pasted object)."""

from __future__ import annotations

import io
import random

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont


def scene(seed: int, size: tuple[int, int] = (640, 426)) -> Image.Image:
    """A landscape-like picture: sky gradient, ground, hills, buildings, blobs, texture."""
    rng = random.Random(seed)
    w, h = size
    horizon = int(h * rng.uniform(0.35, 0.65))
    top = np.array([rng.randint(60, 200), rng.randint(90, 220), rng.randint(150, 255)], float)
    bottom = np.array([rng.randint(150, 255), rng.randint(150, 240), rng.randint(150, 255)], float)
    t = np.linspace(0, 1, h)[:, None, None]
    arr = (top * (1 - t) + bottom * t) * np.ones((1, w, 1))
    ground = np.array([rng.randint(30, 140), rng.randint(60, 160), rng.randint(20, 110)], float)
    arr[horizon:] = ground
    image = Image.fromarray(arr.clip(0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    for _ in range(rng.randint(2, 4)):  # hills
        cx, r = rng.randint(0, w), rng.randint(w // 6, w // 2)
        color = tuple(rng.randint(20, 150) for _ in range(3))
        draw.ellipse((cx - r, horizon - r // 2, cx + r, horizon + r // 2), fill=color)
    for _ in range(rng.randint(4, 9)):  # buildings
        bw, bh = rng.randint(w // 20, w // 7), rng.randint(h // 8, h // 2)
        x = rng.randint(0, w - bw)
        color = tuple(rng.randint(40, 230) for _ in range(3))
        draw.rectangle((x, horizon - bh, x + bw, horizon + rng.randint(0, h // 10)), fill=color)
        for wy in range(horizon - bh + 6, horizon - 6, 14):
            for wx in range(x + 4, x + bw - 6, 12):
                draw.rectangle((wx, wy, wx + 5, wy + 7), fill=tuple(rng.randint(0, 255) for _ in range(3)))
    for _ in range(rng.randint(5, 12)):  # people, cars, trees
        x, y = rng.randint(0, w), rng.randint(horizon, h)
        r = rng.randint(6, max(7, w // 18))
        color = tuple(rng.randint(0, 255) for _ in range(3))
        if rng.random() < 0.5:
            draw.ellipse((x - r, y - 2 * r, x + r, y), fill=color)
        else:
            draw.polygon([(x, y - 2 * r), (x - r, y), (x + r, y)], fill=color)
    noise = np.random.default_rng(seed).normal(0, 1, (h // 8 + 1, w // 8 + 1, 3))
    texture = np.asarray(Image.fromarray(((noise * 40) + 128).clip(0, 255).astype(np.uint8)).resize((w, h), Image.Resampling.BICUBIC), float) - 128
    out = np.asarray(image, float) + 0.35 * texture + np.random.default_rng(seed + 1).normal(0, 3, (h, w, 3))
    return Image.fromarray(out.clip(0, 255).astype(np.uint8)).filter(ImageFilter.GaussianBlur(0.6))


def jpeg(image: Image.Image, quality: int = 60) -> Image.Image:
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, "JPEG", quality=quality)
    buffer.seek(0)
    return Image.open(buffer).convert("RGB")


def crop_fraction(image: Image.Image, left: float, top: float, right: float, bottom: float) -> Image.Image:
    w, h = image.size
    return image.crop((round(left * w), round(top * h), round(w - right * w), round(h - bottom * h)))


def resize_to(image: Image.Image, factor: float) -> Image.Image:
    return image.resize((round(image.width * factor), round(image.height * factor)), Image.Resampling.LANCZOS)


def font(size: int = 24) -> ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def caption_banner(image: Image.Image, text: str, *, where: str = "bottom") -> Image.Image:
    """The picture with a white banner of caption text below (or above) it."""
    w, h = image.size
    band = max(48, h // 7)
    out = Image.new("RGB", (w, h + band), "white")
    out.paste(image, (0, band if where == "top" else 0))
    ImageDraw.Draw(out).text((12, (0 if where == "top" else h) + band // 2 - 12), text, fill=(20, 20, 20), font=font(24))
    return out


def caption_band(image: Image.Image, text: str, *, alpha: float = 0.55, at: float = 0.78) -> Image.Image:
    """The picture with a dark semi-transparent band of white text across it."""
    w, h = image.size
    band = max(40, h // 8)
    y0 = int(h * at)
    arr = np.asarray(image, float).copy()
    arr[y0:y0 + band] *= (1 - alpha)
    out = Image.fromarray(arr.clip(0, 255).astype(np.uint8))
    ImageDraw.Draw(out).text((14, y0 + band // 2 - 12), text, fill=(255, 255, 255), font=font(24))
    return out


def paste_object(image: Image.Image, box: tuple[float, float, float, float], color=(220, 30, 30)) -> Image.Image:
    """A solid ellipse pasted over the fractional box (x0, y0, x1, y1)."""
    out = image.copy()
    w, h = out.size
    x0, y0, x1, y1 = box
    ImageDraw.Draw(out).ellipse((x0 * w, y0 * h, x1 * w, y1 * h), fill=color, outline=(0, 0, 0))
    return out
