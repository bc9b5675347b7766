"""A seeded suite for `compare`: photo-like pictures, the benign changes a copy picks up on
its way around the web, and real local edits with their truth masks.

Everything is drawn here from a seed (numpy, Pillow, OpenCV); no file is read except the
fonts the machine has. Pictures of seeds in `TUNING_SEEDS` were used to choose
`image_compare`'s thresholds; `HELD_OUT_SEEDS` only to report them (tests and
`bench/forensic_suite.py`).

The splits: 1000-1399 tune. 5000-5399 were the first held-out split; its misses were read
and a threshold changed after them, so they are tuning seeds now too. 8000-8399 are the
held-out split that replaced them: no threshold was chosen or checked against them before
the figures in the README were measured once.

`BLENDED_KINDS`, `blend` (a splice near the scene's colours with a feathered edge) and
`tint` (a soft glow or shadow), came later (compare v5): the first kinds are strong-coloured
and hard-edged, while releases' edits blend in.

A transform maps a `Sample` (picture, truth mask of edited pixels, OCR-like text boxes)
to a new one, carrying the mask and the boxes through every geometric change, so a
benign copy knows where its printed text is (what the agent's OCR reports) and an edited
copy knows where its edit lies.
"""

from __future__ import annotations

import glob
import io
import math
from dataclasses import dataclass, field
from typing import Callable

import cv2
import numpy as np
from PIL import Image, ImageDraw, ImageEnhance, ImageFont

# Interleaved, so the first N tuning pictures (the bench's --pictures) draw on both ranges.
TUNING_SEEDS = tuple(seed for pair in zip(range(1000, 1400), range(5000, 5400)) for seed in pair)
HELD_OUT_SEEDS = range(8000, 8400)

Box = list[list[float]]  # four corner points, as OCR reports them


@dataclass
class Sample:
    image: Image.Image
    mask: np.ndarray  # bool, True on edited pixels (all False for an unedited picture)
    boxes: list[Box] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)

    def with_(self, image: Image.Image, mask: np.ndarray, boxes: list[Box], step: str) -> "Sample":
        return Sample(image, mask, boxes, self.steps + [step])


# -- fonts -----------------------------------------------------------------------------------

def font_files() -> list[str]:
    return sorted(glob.glob("/usr/share/fonts/**/*.ttf", recursive=True))


def pick_font(rng: np.random.Generator, size: int) -> ImageFont.ImageFont:
    """One of the machine's TrueType fonts, or Pillow's built-in one."""
    files = font_files()
    choice = int(rng.integers(0, len(files) + 1))
    if choice == len(files):
        return ImageFont.load_default(size=size)
    return ImageFont.truetype(files[choice], size)


# -- photo-like pictures ---------------------------------------------------------------------

def _noise(rng: np.random.Generator, h: int, w: int, cells: int, octaves: int = 4) -> np.ndarray:
    """Fractal value noise in -1..1."""
    out = np.zeros((h, w), np.float32)
    amplitude, total = 1.0, 0.0
    for octave in range(octaves):
        n = cells * 2**octave
        grid = rng.standard_normal((n + 1, max(2, round(n * w / h)) + 1)).astype(np.float32)
        out += amplitude * cv2.resize(grid, (w, h), interpolation=cv2.INTER_CUBIC)
        total += amplitude
        amplitude *= 0.55
    return np.clip(out / total, -1.5, 1.5) / 1.5


def photo(seed: int) -> Image.Image:
    """A picture with a photo's texture and edges: a graded sky, textured ground and
    hills, structures with windows, blurred blobs (trees, smoke), wires and poles, small
    sharp objects, sensor grain and a slight lens blur."""
    rng = np.random.default_rng(seed)
    w = int(rng.integers(440, 760))
    h = int(w * rng.choice([0.56, 0.66, 0.75, 1.0, 1.25]))
    horizon = int(h * rng.uniform(0.3, 0.65))
    sky_top, sky_low = rng.uniform(40, 220, 3), rng.uniform(120, 250, 3)
    t = np.linspace(0, 1, h, dtype=np.float32)[:, None, None]
    arr = sky_top * (1 - t) + sky_low * t + 25 * _noise(rng, h, w, 2)[..., None] * rng.uniform(0.3, 1.0)
    arr = np.broadcast_to(arr, (h, w, 3)).copy()
    ground = rng.uniform(30, 170, 3)
    texture = _noise(rng, h, w, int(rng.integers(6, 20)), 5)[..., None]
    arr[horizon:] = ground + 45 * texture[horizon:] * rng.uniform(0.5, 1.2, 3)
    for _ in range(int(rng.integers(1, 4))):  # hills: a noisy ridge line filled below
        base = horizon - rng.uniform(0.02, 0.2) * h
        ridge = base + _noise(rng, 1, w, 3)[0] * rng.uniform(0.03, 0.12) * h
        below = np.arange(h)[:, None] >= ridge[None, :]
        colour = rng.uniform(20, 160, 3)
        arr[below & (np.arange(h)[:, None] < horizon + 2)] = (colour + 30 * texture[below & (np.arange(h)[:, None] < horizon + 2)])
    image = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    for _ in range(int(rng.integers(2, 8))):  # structures with windows
        bw, bh = int(rng.uniform(0.05, 0.16) * w), int(rng.uniform(0.1, 0.45) * h)
        x = int(rng.integers(0, max(1, w - bw)))
        top = horizon - bh
        draw.rectangle((x, top, x + bw, horizon + int(rng.integers(0, h // 12 + 1))), fill=tuple(int(v) for v in rng.integers(30, 230, 3)))
        lit = tuple(int(v) for v in rng.integers(0, 255, 3))
        for wy in range(top + 5, horizon - 6, int(rng.integers(10, 18))):
            for wx in range(x + 4, x + bw - 6, int(rng.integers(9, 15))):
                if rng.random() < 0.7:
                    draw.rectangle((wx, wy, wx + 4, wy + 6), fill=lit)
    for _ in range(int(rng.integers(1, 4))):  # wires and poles
        x = int(rng.integers(0, w))
        draw.line((x, horizon + int(rng.integers(0, h // 4)), x, int(rng.uniform(0.05, 0.3) * h)), fill=(40, 35, 30), width=int(rng.integers(2, 5)))
        draw.line((0, int(rng.uniform(0.1, 0.4) * h), w, int(rng.uniform(0.1, 0.4) * h)), fill=(30, 30, 30), width=1)
    for _ in range(int(rng.integers(6, 16))):  # small sharp objects on the ground
        x, y = int(rng.integers(0, w)), int(rng.integers(horizon, h))
        r = int(rng.integers(4, max(6, w // 30)))
        colour = tuple(int(v) for v in rng.integers(0, 255, 3))
        if rng.random() < 0.5:
            draw.ellipse((x - r, y - 2 * r, x + r, y), fill=colour)
        else:
            draw.rectangle((x - r, y - r, x + 2 * r, y), fill=colour, outline=(10, 10, 10))
    arr = np.asarray(image, np.float32).copy()
    for _ in range(int(rng.integers(2, 6))):  # blurred blobs: foliage, smoke, shadows
        blob = np.zeros((h, w), np.float32)
        cx, cy = rng.uniform(0, w), rng.uniform(0.2 * h, h)
        cv2.ellipse(blob, (int(cx), int(cy)), (int(rng.uniform(0.04, 0.14) * w), int(rng.uniform(0.04, 0.14) * h)), float(rng.uniform(0, 180)), 0, 360, 1.0, -1)
        blob = cv2.GaussianBlur(blob, (0, 0), rng.uniform(3, 12)) * (0.6 + 0.4 * _noise(rng, h, w, 12, 3))
        arr = arr * (1 - blob[..., None]) + rng.uniform(0, 200, 3) * blob[..., None]
    arr += rng.normal(0, rng.uniform(1.5, 4.0), arr.shape)
    arr = cv2.GaussianBlur(np.clip(arr, 0, 255).astype(np.float32), (0, 0), 0.5)
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))


def jpeg(image: Image.Image, quality: int) -> Image.Image:
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, "JPEG", quality=int(quality))
    buffer.seek(0)
    return Image.open(buffer).convert("RGB")


# -- geometry helpers ------------------------------------------------------------------------

def _map_boxes(boxes: list[Box], fn: Callable[[float, float], tuple[float, float]]) -> list[Box]:
    return [[list(fn(x, y)) for x, y in box] for box in boxes]


def _text_box(draw: ImageDraw.ImageDraw, xy: tuple[float, float], text: str, typeface) -> Box:
    x0, y0, x1, y1 = draw.textbbox(xy, text, font=typeface)
    return [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]


def _caption_text(rng: np.random.Generator) -> str:
    lines = ["Flooding hits the old town", "Photo: Agence Nord / staff", "Incendio en el puerto, 3 de marzo",
             "Manifestation devant la mairie", "Sturm über dem Hafen", "BREAKING: bridge closed",
             "Credit: R. Okafor for The Daily", "Vista aérea de la ciudad", "Shared 2.4K times", "Live coverage"]
    return str(rng.choice(lines))


def _colour(rng: np.random.Generator) -> tuple[int, int, int]:
    return tuple(int(v) for v in rng.integers(0, 256, 3))


# -- benign transforms -----------------------------------------------------------------------

def recompress(s: Sample, rng: np.random.Generator) -> Sample:
    quality = int(rng.integers(35, 96))
    return s.with_(jpeg(s.image, quality), s.mask, s.boxes, f"jpeg q{quality}")


def resize(s: Sample, rng: np.random.Generator) -> Sample:
    factor = float(np.exp(rng.uniform(np.log(0.3), np.log(2.0))))
    w, h = s.image.size
    size = (max(16, round(w * factor)), max(16, round(h * factor)))
    fx, fy = size[0] / w, size[1] / h
    method = [Image.Resampling.BILINEAR, Image.Resampling.BICUBIC, Image.Resampling.LANCZOS][int(rng.integers(0, 3))]
    mask = cv2.resize(s.mask.astype(np.uint8), size, interpolation=cv2.INTER_NEAREST).astype(bool)
    return s.with_(s.image.resize(size, method), mask, _map_boxes(s.boxes, lambda x, y: (x * fx, y * fy)), f"resize x{factor:.2f}")


def crop(s: Sample, rng: np.random.Generator) -> Sample:
    w, h = s.image.size
    left, top, right, bottom = (rng.uniform(0, 0.2) if rng.random() < 0.7 else 0.0 for _ in range(4))
    x0, y0, x1, y1 = round(left * w), round(top * h), round(w - right * w), round(h - bottom * h)
    boxes = [b for b in _map_boxes(s.boxes, lambda x, y: (x - x0, y - y0)) if min(p[0] for p in b) >= 0 and max(p[0] for p in b) <= x1 - x0
             and min(p[1] for p in b) >= 0 and max(p[1] for p in b) <= y1 - y0]
    return s.with_(s.image.crop((x0, y0, x1, y1)), s.mask[y0:y1, x0:x1], boxes, f"crop {left:.2f}/{top:.2f}/{right:.2f}/{bottom:.2f}")


def pad(s: Sample, rng: np.random.Generator) -> Sample:
    w, h = s.image.size
    sides = [int(rng.uniform(0, 0.15) * (w if i % 2 == 0 else h)) for i in range(4)]  # left, top, right, bottom
    colour = _colour(rng) if rng.random() < 0.5 else (0, 0, 0) if rng.random() < 0.5 else (255, 255, 255)
    out = Image.new("RGB", (w + sides[0] + sides[2], h + sides[1] + sides[3]), colour)
    out.paste(s.image, (sides[0], sides[1]))
    mask = np.zeros((out.height, out.width), bool)
    mask[sides[1]:sides[1] + h, sides[0]:sides[0] + w] = s.mask
    return s.with_(out, mask, _map_boxes(s.boxes, lambda x, y: (x + sides[0], y + sides[1])), f"pad {sides}")


def banner(s: Sample, rng: np.random.Generator) -> Sample:
    """A caption or credit banner of flat colour above, below, left or right, with text."""
    w, h = s.image.size
    where = str(rng.choice(["top", "bottom", "left", "right"]))
    size = int(rng.integers(13, 30))
    typeface = pick_font(rng, size)
    text = _caption_text(rng)
    background = _colour(rng) if rng.random() < 0.4 else (255, 255, 255) if rng.random() < 0.5 else (18, 18, 22)
    ink = (250, 250, 250) if sum(background) < 380 else (15, 15, 15)
    if where in ("top", "bottom"):
        depth = int(size * rng.uniform(2.0, 4.5))
        out = Image.new("RGB", (w, h + depth), background)
        offset = (0, depth if where == "top" else 0)
        text_xy = (int(rng.integers(4, max(5, w // 6))), (0 if where == "top" else h) + depth // 2 - size // 2)
    else:
        depth = int(w * rng.uniform(0.2, 0.4))
        out = Image.new("RGB", (w + depth, h), background)
        offset = (depth if where == "left" else 0, 0)
        text_xy = ((0 if where == "left" else w) + 6, int(rng.integers(4, max(5, h // 2))))
        text = "\n".join(text.split(" ", 2)[:3])
    out.paste(s.image, offset)
    draw = ImageDraw.Draw(out)
    draw.text(text_xy, text, fill=ink, font=typeface)
    mask = np.zeros((out.height, out.width), bool)
    mask[offset[1]:offset[1] + h, offset[0]:offset[0] + w] = s.mask
    boxes = _map_boxes(s.boxes, lambda x, y: (x + offset[0], y + offset[1])) + [_text_box(draw, text_xy, text, typeface)]
    return s.with_(out, mask, boxes, f"banner {where}")


def overlay_text(s: Sample, rng: np.random.Generator) -> Sample:
    """Text laid over the picture: a caption on a (semi-)opaque plate, or bare text with a
    shadow, a handle or a watermark-like credit."""
    out = s.image.copy()
    w, h = out.size
    boxes = list(s.boxes)
    for _ in range(int(rng.integers(1, 3))):
        size = int(max(12, min(w, h) * rng.uniform(0.04, 0.09)))
        typeface = pick_font(rng, size)
        text = _caption_text(rng)
        draw = ImageDraw.Draw(out)
        tw = draw.textlength(text, font=typeface)
        x = float(rng.uniform(0, max(1.0, w - tw)))
        y = float(rng.uniform(0, h - size * 1.5))
        style = int(rng.integers(0, 3))
        if style == 0:  # plate behind the text
            plate = Image.new("RGBA", out.size, (0, 0, 0, 0))
            pad = size * 0.3
            ImageDraw.Draw(plate).rectangle((x - pad, y - pad, x + tw + pad, y + size * 1.2 + pad), fill=(*_colour(rng), int(rng.integers(140, 256))))
            out = Image.alpha_composite(out.convert("RGBA"), plate).convert("RGB")
            draw = ImageDraw.Draw(out)
            draw.text((x, y), text, fill=(255, 255, 255), font=typeface)
        elif style == 1:  # bare text with a shadow
            draw.text((x + 2, y + 2), text, fill=(0, 0, 0), font=typeface)
            draw.text((x, y), text, fill=_colour(rng), font=typeface)
        else:  # outlined text
            draw.text((x, y), text, fill=(255, 255, 255), font=typeface, stroke_width=2, stroke_fill=(0, 0, 0))
        boxes.append(_text_box(draw, (x, y), text, typeface))
    return s.with_(out, s.mask, boxes, "text overlay")


def tone(s: Sample, rng: np.random.Generator) -> Sample:
    """Brightness, contrast and gamma changes (some clip highlights or shadows)."""
    out = ImageEnhance.Brightness(s.image).enhance(float(rng.uniform(0.7, 1.35)))
    out = ImageEnhance.Contrast(out).enhance(float(rng.uniform(0.7, 1.4)))
    gamma = float(rng.uniform(0.65, 1.5))
    lut = [min(255, round(255 * (i / 255) ** gamma)) for i in range(256)] * 3
    if rng.random() < 0.4:
        out = ImageEnhance.Color(out).enhance(float(rng.uniform(0.5, 1.5)))
    return s.with_(out.point(lut), s.mask, s.boxes, f"tone gamma {gamma:.2f}")


def rotate(s: Sample, rng: np.random.Generator) -> Sample:
    angle = float(rng.uniform(-2.0, 2.0))
    w, h = s.image.size
    matrix = cv2.getRotationMatrix2D((w / 2, h / 2), angle, 1.0)
    fill = _colour(rng) if rng.random() < 0.5 else (255, 255, 255)
    out = cv2.warpAffine(np.asarray(s.image), matrix, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=fill)
    mask = cv2.warpAffine(s.mask.astype(np.uint8), matrix, (w, h), flags=cv2.INTER_NEAREST).astype(bool)
    boxes = _map_boxes(s.boxes, lambda x, y: (matrix[0, 0] * x + matrix[0, 1] * y + matrix[0, 2], matrix[1, 0] * x + matrix[1, 1] * y + matrix[1, 2]))
    return s.with_(Image.fromarray(out), mask, boxes, f"rotate {angle:.2f}")


def screenshot(s: Sample, rng: np.random.Generator) -> Sample:
    """The picture inside a phone or browser screenshot: status bar, header with a name and
    an avatar, action icons and a text line below."""
    w, h = s.image.size
    width = int(w * rng.uniform(1.05, 1.3))
    dark = rng.random() < 0.5
    page = (16, 16, 20) if dark else (250, 250, 250)
    ink = (235, 235, 235) if dark else (20, 20, 25)
    header, footer = int(rng.uniform(0.12, 0.25) * h) + 40, int(rng.uniform(0.1, 0.25) * h) + 30
    out = Image.new("RGB", (width, h + header + footer), page)
    x_off = (width - w) // 2 if rng.random() < 0.5 else int(rng.integers(0, width - w + 1))
    out.paste(s.image, (x_off, header))
    draw = ImageDraw.Draw(out)
    small = pick_font(rng, 14)
    boxes = _map_boxes(s.boxes, lambda x, y: (x + x_off, y + header))
    boxes.append(_text_box(draw, (10, 4), "9:41", small))
    draw.text((10, 4), "9:41", fill=ink, font=small)
    draw.rectangle((width - 40, 6, width - 14, 16), outline=ink)
    draw.ellipse((10, 26, 40, 56), fill=_colour(rng))
    name = str(rng.choice(["@citywatch", "Maria L.", "newsfeed_24", "Kenji T.", "@outre_mer"]))
    boxes.append(_text_box(draw, (48, 32), name, small))
    draw.text((48, 32), name, fill=ink, font=small)
    y = header + h + 8
    for i in range(4):
        draw.ellipse((12 + 36 * i, y, 30 + 36 * i, y + 18), outline=ink, width=2)
    line = _caption_text(rng)
    boxes.append(_text_box(draw, (12, y + 26), line, small))
    draw.text((12, y + 26), line, fill=ink, font=small)
    mask = np.zeros((out.height, out.width), bool)
    mask[header:header + h, x_off:x_off + w] = s.mask
    return s.with_(out, mask, boxes, "screenshot")


def mirror(s: Sample, rng: np.random.Generator) -> Sample:
    w = s.image.width
    boxes = [[[w - x, y] for x, y in [box[1], box[0], box[3], box[2]]] for box in s.boxes]
    return s.with_(s.image.transpose(Image.Transpose.FLIP_LEFT_RIGHT), s.mask[:, ::-1].copy(), boxes, "mirror")


BENIGN: dict[str, Callable[[Sample, np.random.Generator], Sample]] = {
    "jpeg": recompress, "resize": resize, "crop": crop, "pad": pad, "banner": banner, "text_overlay": overlay_text,
    "tone": tone, "rotate": rotate, "screenshot": screenshot, "mirror": mirror,
}
_LAST = ("banner", "screenshot", "pad", "text_overlay", "jpeg")  # framing goes on last, recompression after all


def benign_plans(rng: np.random.Generator, pairs: int) -> list[tuple[str, ...]]:
    """Each transform alone, then `pairs` distinct random pairs in a natural order."""
    names = list(BENIGN)
    plans: list[tuple[str, ...]] = [(name,) for name in names]
    all_pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    for index in rng.permutation(len(all_pairs))[:pairs]:
        a, b = all_pairs[int(index)]
        plans.append(tuple(sorted((a, b), key=lambda n: (_LAST.index(n) if n in _LAST else -1))))
    return plans


def apply(sample: Sample, plan: tuple[str, ...], rng: np.random.Generator, *, final_jpeg: bool = True) -> Sample:
    for name in plan:
        sample = BENIGN[name](sample, rng)
    if final_jpeg and plan[-1] != "jpeg":  # every copy on the web is a JPEG again
        sample = sample.with_(jpeg(sample.image, int(rng.integers(70, 96))), sample.mask, sample.boxes, "saved")
    return sample


# -- real edits ------------------------------------------------------------------------------

def _blob_mask(rng: np.random.Generator, shape: tuple[int, int], area: float, centre: tuple[float, float] | None = None) -> np.ndarray:
    """A compact irregular blob covering about `area` of the picture."""
    h, w = shape
    ratio = rng.uniform(0.6, 1.6)
    ry = math.sqrt(area * h * w / (math.pi * ratio))
    rx = ry * ratio
    rx, ry = min(rx, 0.45 * w), min(ry, 0.45 * h)
    cx, cy = centre if centre else (rng.uniform(rx + 2, w - rx - 2), rng.uniform(ry + 2, h - ry - 2))
    mask = np.zeros((h, w), np.uint8)
    angles = np.linspace(0, 2 * np.pi, 14, endpoint=False)
    radius = rng.uniform(0.8, 1.15, angles.size)
    points = np.stack([cx + rx * radius * np.cos(angles), cy + ry * radius * np.sin(angles)], axis=1)
    cv2.fillPoly(mask, [points.astype(np.int32)], 1)
    return mask.astype(bool)


def _textured_object(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """RGB float pixels of a foreign object: strong colour, texture and edges."""
    h, w = shape
    base = rng.uniform(0, 255, 3)
    texture = _noise(rng, h, w, int(rng.integers(8, 24)), 3)[..., None]
    stripes = (np.sin(np.arange(w)[None, :] / rng.uniform(2, 6)) > 0)[..., None] * rng.uniform(-60, 60)
    return np.clip(base + 70 * texture + stripes, 0, 255)


def splice(image: Image.Image, rng: np.random.Generator, area: float) -> tuple[Image.Image, np.ndarray]:
    arr = np.asarray(image, np.float32).copy()
    mask = _blob_mask(rng, arr.shape[:2], area)
    arr[mask] = _textured_object(rng, arr.shape[:2])[mask]
    return Image.fromarray(arr.clip(0, 255).astype(np.uint8)), mask


def remove(image: Image.Image, rng: np.random.Generator, area: float) -> tuple[Image.Image, Image.Image, np.ndarray]:
    """(reference with an object, the same picture with the object inpainted away, mask)."""
    with_object, mask = splice(image, rng, area)
    grown = cv2.dilate(mask.astype(np.uint8), np.ones((5, 5), np.uint8))
    removed = cv2.inpaint(np.asarray(with_object), grown, 5, cv2.INPAINT_TELEA)
    return with_object, Image.fromarray(removed), grown.astype(bool)


def copy_move(image: Image.Image, rng: np.random.Generator, area: float) -> tuple[Image.Image, np.ndarray]:
    arr = np.asarray(image).copy()
    h, w = arr.shape[:2]
    side = math.sqrt(area * h * w)
    bw = int(min(0.45 * w, side * rng.uniform(0.8, 1.25)))
    bh = int(min(0.45 * h, area * h * w / max(bw, 1)))
    for _ in range(50):  # source and destination must not overlap much
        sx, sy = int(rng.integers(0, w - bw)), int(rng.integers(0, h - bh))
        dx, dy = int(rng.integers(0, w - bw)), int(rng.integers(0, h - bh))
        if abs(sx - dx) > 0.7 * bw or abs(sy - dy) > 0.7 * bh:
            break
    patch = arr[sy:sy + bh, sx:sx + bw].copy()
    arr[dy:dy + bh, dx:dx + bw] = patch
    mask = np.zeros((h, w), bool)
    mask[dy:dy + bh, dx:dx + bw] = True
    return Image.fromarray(arr), mask


def recolour(image: Image.Image, rng: np.random.Generator, area: float) -> tuple[Image.Image, np.ndarray]:
    """A local change of colour: hue turned and saturation raised inside a blob."""
    arr = np.asarray(image)
    mask = _blob_mask(rng, arr.shape[:2], area)
    hsv = cv2.cvtColor(arr, cv2.COLOR_RGB2HSV).astype(np.int32)
    hsv[..., 0] = (hsv[..., 0] + int(rng.integers(40, 140))) % 180
    hsv[..., 1] = np.clip(hsv[..., 1] + 110, 0, 255)
    hsv[..., 2] = np.clip(hsv[..., 2] * rng.uniform(0.8, 1.2), 30, 255)
    changed = cv2.cvtColor(hsv.astype(np.uint8), cv2.COLOR_HSV2RGB)
    out = arr.copy()
    out[mask] = changed[mask]
    return Image.fromarray(out), mask


def sign_pair(image: Image.Image, rng: np.random.Generator, area: float) -> tuple[Image.Image, Image.Image, np.ndarray, Box]:
    """(reference with a sign, the same picture with the sign's words replaced, mask of
    the changed sign text, the text's OCR box in the edited picture)."""
    words = ["OPEN DAILY", "CLOSED", "EXIT 12", "MARKET", "NO ENTRY", "PHARMACY", "HOTEL SOL", "TAXI", "POLICE", "SCHOOL"]
    first, second = rng.choice(len(words), 2, replace=False)
    w, h = image.size
    sign_w = int(min(0.8 * w, math.sqrt(area * w * h * 4)))
    sign_h = int(min(0.4 * h, area * w * h / max(1, sign_w) * 1.0)) + 12
    x, y = int(rng.integers(0, w - sign_w)), int(rng.integers(0, h - sign_h))
    plate = _colour(rng)
    ink = (255, 255, 255) if sum(plate) < 380 else (0, 0, 0)
    size = max(10, int(sign_h * 0.6))
    typeface = pick_font(rng, size)
    pictures = []
    for word in (words[first], words[second]):
        out = image.copy()
        draw = ImageDraw.Draw(out)
        draw.rectangle((x, y, x + sign_w, y + sign_h), fill=plate, outline=(20, 20, 20), width=2)
        draw.text((x + 6, y + (sign_h - size) // 2), word, fill=ink, font=typeface)
        pictures.append(out)
    mask = np.zeros((h, w), bool)
    mask[y:y + sign_h, x:x + sign_w] = True
    box = _text_box(ImageDraw.Draw(pictures[1]), (x + 6, y + (sign_h - size) // 2), words[second], typeface)
    return pictures[0], pictures[1], mask, box


def blend(image: Image.Image, rng: np.random.Generator, area: float) -> tuple[Image.Image, np.ndarray]:
    """A spliced object blended in as a careful forger would: near the colours of the
    scene around it, lightly textured, its edge feathered (σ 1.5-5 px), at 60-100 %
    opacity. The mask is where the object shows at a quarter of its opacity or more."""
    arr = np.asarray(image, np.float32).copy()
    h, w = arr.shape[:2]
    mask = _blob_mask(rng, (h, w), area)
    colour = np.clip(arr[mask].mean(axis=0) + rng.uniform(-60, 60, 3), 0, 255)
    texture = _noise(rng, h, w, int(rng.integers(6, 16)), 3)[..., None] * rng.uniform(10, 35)
    opacity = cv2.GaussianBlur(mask.astype(np.float32), (0, 0), rng.uniform(1.5, 5.0)) * rng.uniform(0.6, 1.0)
    out = arr * (1 - opacity[..., None]) + (colour + texture) * opacity[..., None]
    return Image.fromarray(out.clip(0, 255).astype(np.uint8)), opacity >= 0.25


def tint(image: Image.Image, rng: np.random.Generator, area: float) -> tuple[Image.Image, np.ndarray]:
    """A soft local change of colour: a glow of fire (orange) or a shadow of smoke (dark
    grey) laid over a blob at 35-70 % opacity with a wide soft edge (σ 3-8 px). The mask
    is where it shows at 15 % opacity or more."""
    arr = np.asarray(image, np.float32).copy()
    h, w = arr.shape[:2]
    mask = _blob_mask(rng, (h, w), area)
    opacity = cv2.GaussianBlur(mask.astype(np.float32), (0, 0), rng.uniform(3.0, 8.0)) * rng.uniform(0.35, 0.7)
    colour = np.array([255.0, 140.0, 40.0]) if rng.random() < 0.5 else np.array([40.0, 38.0, 36.0])
    out = arr * (1 - opacity[..., None]) + colour * opacity[..., None]
    return Image.fromarray(out.clip(0, 255).astype(np.uint8)), opacity >= 0.15


EDIT_KINDS = ("splice", "remove", "replace_text", "copy_move", "recolour")
# Edits that blend in (compare v5); measured apart, since the held-out target was set for
# the kinds above and these do not reach it yet (README, "Image forensics, measured").
BLENDED_KINDS = ("blend", "tint")
EDIT_FOLLOW_UPS = ("jpeg", "resize", "crop", "banner", "tone", "pad")


@dataclass
class EditCase:
    kind: str
    area: float  # of the picture
    reference: Image.Image
    query: Sample


def edit_case(seed: int, kind: str, area: float) -> EditCase:
    """A reference picture and an edited copy of it (then one benign change and a save)."""
    rng = np.random.default_rng([seed, (EDIT_KINDS + BLENDED_KINDS).index(kind), int(area * 1e4)])
    base = photo(seed)
    boxes: list[Box] = []
    if kind == "splice":
        reference = base
        edited, mask = splice(base, rng, area)
    elif kind == "remove":
        reference, edited, mask = remove(base, rng, area)
    elif kind == "replace_text":
        reference, edited, mask, box = sign_pair(base, rng, area)
        boxes = [box]
    elif kind == "copy_move":
        reference = base
        edited, mask = copy_move(base, rng, area)
    elif kind == "recolour":
        reference = base
        edited, mask = recolour(base, rng, area)
    else:
        reference = base
        edited, mask = (blend if kind == "blend" else tint)(base, rng, area)
    follow_up = (str(rng.choice(EDIT_FOLLOW_UPS)),)
    query = apply(Sample(edited, mask, boxes, [kind]), follow_up, rng)
    return EditCase(kind, area, jpeg(reference, 90), query)


def benign_case(seed: int, plan: tuple[str, ...]) -> tuple[Image.Image, Sample]:
    """(reference picture as published, a benignly changed copy)."""
    rng = np.random.default_rng([seed, *(list(BENIGN).index(name) for name in plan)])
    base = photo(seed)
    return jpeg(base, 90), apply(Sample(base, np.zeros((base.height, base.width), bool)), plan, rng)


def predicted_mask(comparison, prepared, shape: tuple[int, int]) -> np.ndarray:
    """The comparison's changed-region boxes as a mask over the query's full picture."""
    x0, y0, x1, y1 = prepared.content_box
    mask = np.zeros(shape, bool)
    for region in comparison.regions:
        left, right = x0 + region.x0 * (x1 - x0), x0 + region.x1 * (x1 - x0)
        top, bottom = y0 + region.y0 * (y1 - y0), y0 + region.y1 * (y1 - y0)
        mask[int(top):int(math.ceil(bottom)), int(left):int(math.ceil(right))] = True
    return mask


def iou(a: np.ndarray, b: np.ndarray) -> float:
    union = (a | b).sum()
    return float((a & b).sum() / union) if union else 0.0
