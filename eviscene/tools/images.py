"""Loading images for matching: decode, orient, trim caption banners and uniform borders,
and compute perceptual hashes.

A case image is often a copy of a corpus picture with a printed caption: a banner strip
of uniform colour holding text (below or above the photo), letterbox bars, or a
semi-transparent band over the photo. Banners and bars are trimmed here
(`find_content_box`); bands over the photo are only located here (`find_overlay_bands`,
a hint for alignment) and measured by `compare`, which sees both images. The same
trimming runs on corpus images, so a banner on either side is ignored.

Banner rule (documented thresholds, none tied to a fixture):
- a side (top/bottom/left/right) is a border when its outermost line is flat: at least
  95% of its pixels lie within `COLOR_TOLERANCE` (max channel difference) of its median
  colour (a filled banner stays that flat through JPEG; sky and walls rarely do);
- banners extend inward over lines where at least half of the pixels have that colour
  (caption text covers the rest), crossing runs of text-heavy lines up to 6% of the image
  height (width); a credit banner beside the photo is trimmed like one above or below;
- the border must end at a sharp edge: in the 3 lines after it, under a quarter of the
  pixels have its colour (a gradient sky fading into the picture fails this), or, for a
  photo turned by a degree or two whose edge crosses the lines at a slant, within
  `TURNED_EDGE` of the line length further in, the border's colour on those lines
  lying in wedges from the line's ends;
- one frame's side is never trimmed past 45% of what is left of the image (nested frames
  below apply it to each frame): a larger uniform area is the picture itself (a product
  shot on white, a night sky), not a caption;
- borders thinner than 2% of the image are kept: a photo's own dark or light rim would
  otherwise be trimmed on one copy and not on a resized one, and comparisons already
  ignore a thin rim;
- frames nest (a post's white strip below a screenshot's grey chrome, a credit strip
  beside it), so the rule runs again on what it left, up to `MAX_FRAMES` times, each
  time on the remaining picture's own size, a side again only for a frame of another colour.
"""

from __future__ import annotations

import io
import re
import struct
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Optional, Sequence, Union

import imagehash
import numpy as np
from PIL import Image, ImageFile, ImageOps, UnidentifiedImageError

DECODE_SIDE = 512  # long side kept in memory for matching; finer detail does not change decisions
COLOR_TOLERANCE = 12  # a JPEG'd flat banner stays within this of its median colour
BORDER_EDGE_UNIFORM = 0.95
BANNER_LINE_BACKGROUND = 0.50
BANNER_TEXT_GAP = 0.06
MAX_TRIM = 0.45
MIN_TRIM = 0.02
BANNER_EDGE_ROWS = 3
BANNER_BEYOND_MAX = 0.25
MAX_FRAMES = 3
TURNED_EDGE = 0.045  # a 2.5-degree turn moves an edge by 4.4% of its length
WEDGE_SHARE = 0.8

ImageInput = Union[str, Path, Image.Image, BinaryIO]


@dataclass(frozen=True)
class PreparedImage:
    """An image ready for matching: the content region (banners trimmed) as uint8 RGB with
    its long side at most DECODE_SIDE, and where that region lies in the original."""

    rgb: np.ndarray = field(repr=False)
    content_box: tuple[int, int, int, int]  # x0, y0, x1, y1 in original pixels
    size: tuple[int, int]  # original width, height
    trimmed: dict[str, int]  # side -> pixels removed in the original, for sides that had a border
    scale: float  # pixels of `rgb` per original pixel
    text_mask: Optional[np.ndarray] = field(default=None, repr=False)  # bool per pixel of `rgb`: under OCR'd text
    bands: tuple[tuple[float, float], ...] = ()  # rows (fractions of the content height) that look like overlaid bands
    # Grey versions of this picture (`image_align.grey_at`), each computed once: one query
    # is resized for every compare and several times within one. Not part of its identity,
    # and a copy (`dataclasses.replace`) starts without them.
    derived: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def content_size(self) -> tuple[int, int]:
        x0, y0, x1, y1 = self.content_box
        return x1 - x0, y1 - y0


MAX_DECODE_PIXELS = 2 * 89_478_485
"""The largest picture decoded at all (Pillow's own refusal point at its default
`Image.MAX_IMAGE_PIXELS`): about 179 million pixels, refused as `ImageTooLarge`, one clear
line. Pillow's settings are the process's, never changed here: with a higher or no limit set
by the caller, this one still holds; with a lower one, Pillow's refusal is said the same way.
A case's or corpus page's picture file is bounded before this, by its size
(`release.case_image.MAX_PICTURE_BYTES`): Pillow decodes a picture followed by any padding."""
REDUCE_ABOVE_PIXELS = 40_000_000
"""Pictures larger than this are shrunk in their own mode right after decoding, before
any conversion or rotation copies them: a 13000x13000 PNG then costs one decoded copy."""

_REDUCIBLE_MODES = {"L", "LA", "RGB", "RGBA", "RGBX", "CMYK", "I", "F"}
_EXIF_TRANSPOSE = {
    2: Image.Transpose.FLIP_LEFT_RIGHT, 3: Image.Transpose.ROTATE_180, 4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE, 6: Image.Transpose.ROTATE_270, 7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}


class ImageTooLarge(ValueError):
    """An image with more pixels than MAX_DECODE_PIXELS (`detail` says how many)."""

    def __init__(self, source: "ImageInput", detail: str):
        super().__init__(f"{_source_name(source)}image is {detail}")
        self.detail = detail


def over_decode_limit(width: int, height: int) -> str | None:
    """Why a picture of this size is never decoded ("WxH pixels, above the decoding limit of N
    pixels"), or None: the one test, for the tools and for a run's preflight of its cases."""
    if width * height > MAX_DECODE_PIXELS:
        return f"{width}x{height} pixels, above the decoding limit of {MAX_DECODE_PIXELS:,} pixels"
    return None


def _pillow_refusal(exc: Image.DecompressionBombError) -> str:
    """Pillow's decompression-bomb refusal (raised by `Image.open` before any size is known) in
    the words of `over_decode_limit`: `Image size (N pixels) exceeds limit of M pixels, …`."""
    counts = re.findall(r"(\d+) pixels", str(exc))
    if len(counts) != 2:
        return f"above Pillow's decoding limit ({exc})"
    pixels, limit = map(int, counts)
    return f"{pixels:,} pixels, above the decoding limit of {limit:,} pixels"


class UndecodableImage(ValueError):
    """Bytes Pillow cannot read as a picture (empty, another kind of file, broken data);
    `detail` says which, as a phrase (`not a picture Pillow can read`)."""

    def __init__(self, source: "ImageInput", detail: str):
        super().__init__(f"{_source_name(source)}{detail}")
        self.detail = detail


# What Pillow raises for bytes it cannot read: its own words, and whatever a damaged header
# makes a format plugin raise (a chunk name that is no text: UnicodeDecodeError; text chunks
# that inflate past its limit: ValueError; a short field: struct.error, EOFError).
PILLOW_READ_ERRORS = (UnidentifiedImageError, SyntaxError, OSError, ValueError, EOFError, struct.error)

# How Pillow's `load` says a file ended before its picture did (`image file is truncated (3 bytes
# not processed)`), as against data that decodes to nothing (`broken data stream when reading image file`).
_TRUNCATED = "image file is truncated"
_CUT_BEFORE_PICTURE = "the file is cut off before any of its picture"
_JPEG_END = b"\xff\xd9"


def _source_name(source: ImageInput) -> str:
    """`NAME: ` for an error about `source` (a path, or a stream that carries one), else ``."""
    named = getattr(source, "name", None) if hasattr(source, "read") else source
    return f"{named}: " if isinstance(named, (str, Path)) else ""


def open_image(source: ImageInput, max_side: int = DECODE_SIDE) -> tuple[Image.Image, tuple[int, int]]:
    """Decoded RGB image (EXIF orientation applied), reduced so its long side is about
    `max_side`, and the original size. JPEGs are decoded directly at reduced scale; other
    very large pictures are reduced in their own mode first (`REDUCE_ABOVE_PIXELS`)."""
    if isinstance(source, Image.Image):
        image = ImageOps.exif_transpose(source)
        original = image.size
    else:
        try:
            image, original = _decoded(source, max_side)
        except PILLOW_READ_ERRORS as exc:
            if isinstance(exc, FileNotFoundError | PermissionError | ImageTooLarge):
                raise
            # Pillow names a stream by its repr (an address that differs every run): the file's name instead.
            if isinstance(exc, UnidentifiedImageError):
                raise UndecodableImage(source, "not a picture Pillow can read") from None
            # Pillow's own words (`broken PNG file`, `broken data stream …`) or a format plugin's, which say
            # nothing of a picture (`'ascii' codec can't decode byte 0xff`)
            raise UndecodableImage(source, f"damaged picture data Pillow cannot read ({exc})") from None
    image = _as_rgb(image)
    if max(image.size) > max_side:
        ratio = max_side / max(image.size)
        image = image.resize((max(1, round(image.width * ratio)), max(1, round(image.height * ratio))), Image.Resampling.BOX)
    return image, original


def _decoded(source: ImageInput, max_side: int) -> tuple[Image.Image, tuple[int, int]]:
    try:
        opened = Image.open(source if hasattr(source, "read") else Path(source))
    except Image.DecompressionBombError as exc:  # Pillow's own limit (the process's setting), met first
        raise ImageTooLarge(source, _pillow_refusal(exc)) from None
    with opened:
        too_large = over_decode_limit(*opened.size)
        if too_large:
            raise ImageTooLarge(source, too_large)
        original = _oriented_size(opened)
        opened.draft("RGB", (max_side, max_side))
        if opened.width * opened.height > REDUCE_ABOVE_PIXELS:
            return _working_copy(source, opened), original
        return ImageOps.exif_transpose(_decoded_as_far_as_it_goes(opened)), original


def _decoded_as_far_as_it_goes(opened: ImageFile.ImageFile) -> Image.Image:
    """`opened`'s pixels. A picture cut short by its last bytes (a scraped JPEG without its end
    marker) decodes as far as it goes, as viewers show it, the rest filled (grey in a JPEG,
    black in a PNG); data that does not decode (`broken data stream`), or a file cut before any
    of its picture (all fill), raises. Pillow's `LOAD_TRUNCATED_IMAGES` would do the first, but
    swallows the rest too (a damaged picture read as a blank one), and it is a process-wide
    setting read by every thread's decode: it stays the caller's, unset here."""
    try:
        opened.load()
        return opened
    except OSError as exc:
        if not str(exc).startswith(_TRUNCATED):
            raise
    if opened.format in ("JPEG", "MPO"):  # its decoder finishes (a progressive JPEG's every pass so far) only at an end marker
        opened.fp.seek(0)
        content = opened.fp.read()
        scan = content.find(b"\xff\xda")  # the first scan's header, then its data: none, and the end marker draws noise
        if scan < 0 or len(content) <= scan + 2 + int.from_bytes(content[scan + 2:scan + 4], "big"):
            raise OSError(_CUT_BEFORE_PICTURE)
        ended = Image.open(io.BytesIO(content + _JPEG_END))
        scale = opened.decoderconfig[0] if opened.decoderconfig else 1  # the draft's: a size request could give another
        if scale > 1:
            ended.draft(opened.mode, (ended.width // scale, ended.height // scale))
        ended.load()
    else:
        opened.tile = []  # the rows decoded before the cut are in place; nothing more is to be read
        ended = opened
    if all(low == high for low, high in _band_extrema(ended)):
        raise OSError(_CUT_BEFORE_PICTURE)
    return ended


def _band_extrema(image: Image.Image) -> list[tuple[float, float]]:
    extrema = image.getextrema()
    return list(extrema) if isinstance(extrema[0], tuple) else [extrema]


_WIDE_GREY = {"I", "I;16", "I;16L", "I;16B", "I;16N"}


def _as_rgb(image: Image.Image) -> Image.Image:
    """The picture in RGB as a viewer shows it. Pillow's convert clips 16-bit greyscale to
    255 (a 16-bit scan read as a white page) and drops transparency, leaving the colour under
    it (a caption on a transparent ground, black there, read as black on black): 16 bits are
    scaled to 8, and a transparent picture is laid over white."""
    if image.mode in _WIDE_GREY:
        values = np.asarray(image).astype(np.float64)
        if values.max(initial=0) > 255:
            values = values / 257.0
        image = Image.fromarray(np.clip(np.rint(values), 0, 255).astype(np.uint8), "L")
    if image.mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in image.info:
        image = Image.alpha_composite(Image.new("RGBA", image.size, (255, 255, 255, 255)), image.convert("RGBA"))
    return image.convert("RGB")


WORKING_SIDE = 2048  # at least every caller's max_side (matching 512, OCR 1280)
_working_copies: "OrderedDict[tuple, Image.Image]" = OrderedDict()
_working_lock = threading.Lock()


def _working_copy(source: ImageInput, opened: Image.Image) -> Image.Image:
    """A very large picture reduced once (`_reduced` to WORKING_SIDE) and kept for the
    next reader of the same file (OCR, perception hash and matching each open it): its
    decode is the costly part. Two copies at most are kept."""
    if hasattr(source, "read"):
        sha256 = getattr(source, "sha256", None)  # a case image's checked bytes: keyed by their hash
        if sha256 is None:
            return _reduced(opened, WORKING_SIDE)
        key: tuple = ("sha256", sha256)
    else:
        path = Path(source).resolve()
        stat = path.stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size)
    with _working_lock:
        if key in _working_copies:
            return _working_copies[key]
    image = _reduced(opened, WORKING_SIDE)
    with _working_lock:
        _working_copies[key] = image
        while len(_working_copies) > 2:
            _working_copies.popitem(last=False)
    return image


def _reduced(opened: Image.Image, max_side: int) -> Image.Image:
    """`opened` decoded, shrunk by a whole factor that keeps its long side at least
    `max_side` (the caller's resize finishes), then turned upright."""
    orientation = _orientation(opened)
    opened = _decoded_as_far_as_it_goes(opened)
    # 16-bit greyscale widened to 32 (which reduces), not clipped to 8 by an RGB convert: `_as_rgb` scales it.
    image = opened if opened.mode in _REDUCIBLE_MODES else opened.convert("I" if opened.mode in _WIDE_GREY else "RGB")
    factor = max(1, max(image.size) // max_side)
    if factor > 1:
        image = _reduced_in_strips(image, factor) if image.mode in ("RGBA", "LA") else image.reduce(factor)
    method = _EXIF_TRANSPOSE.get(orientation)
    return image.transpose(method) if method is not None else image


_STRIP_PIXELS = 4_000_000


def _reduced_in_strips(image: Image.Image, factor: int) -> Image.Image:
    """`image.reduce(factor)` for a picture with transparency, which Pillow reduces through a
    premultiplied copy of it whole (a second decoded copy: 0.7 GB at 13300 x 13300): strips of
    whole boxes, each premultiplied on its own, give the same pixels at a strip's cost."""
    rows = factor * max(1, _STRIP_PIXELS // (image.width * factor))
    reduced = Image.new(image.mode, (-(-image.width // factor), -(-image.height // factor)))
    for top in range(0, image.height, rows):
        reduced.paste(image.crop((0, top, image.width, min(image.height, top + rows))).reduce(factor), (0, top // factor))
    return reduced


def prepare(source: ImageInput, *, text_boxes: Sequence[Sequence[Sequence[float]]] = (), find_bands: bool = True) -> PreparedImage:
    """Decode and trim an image. `text_boxes` (OCR boxes in original pixels, optional) mark
    printed text inside the picture (captions, badges) for comparisons to sort out;
    `find_bands` looks for caption bands over the picture (worth it for a query only)."""
    image, size = open_image(source)
    rgb = np.asarray(image, dtype=np.uint8)
    (x0, y0, x1, y1), trimmed = find_content_box(rgb)
    factor = size[0] / rgb.shape[1]
    box = (round(x0 * factor), round(y0 * factor), round(x1 * factor), round(y1 * factor))
    content = np.ascontiguousarray(rgb[y0:y1, x0:x1])
    scale = content.shape[1] / max(1, box[2] - box[0])
    trimmed_px = {side: round(px * factor) for side, px in trimmed.items()}
    ignore = _text_mask(text_boxes, box, scale, content.shape[:2]) if text_boxes else None
    bands = find_overlay_bands(content) if find_bands else []
    return PreparedImage(rgb=content, content_box=box, size=size, trimmed=trimmed_px, scale=scale,
                         text_mask=ignore, bands=tuple(bands))


def band_free_strip(image: PreparedImage) -> Optional[tuple[float, float]]:
    """The tallest run of rows (fractions) clear of the image's bands and printed text, when
    it has any and that run still holds at least 40% of the picture; a placement found on
    it cannot be pulled off by them."""
    covered = list(image.bands)
    if image.text_mask is not None and image.text_mask.any():
        covered += _runs(image.text_mask.any(axis=1))
    if not covered:
        return None
    rows = 1000
    free = np.ones(rows, dtype=bool)
    for y0, y1 in covered:
        free[int(y0 * rows):int(np.ceil(y1 * rows))] = False
    runs = [(b - a, a, b) for a, b in _runs(free, as_fraction=False)]
    if not runs:
        return None
    length, start, stop = max(runs)
    return (start / rows, stop / rows) if 0.4 * rows <= length < rows else None


BAND_EDGE_STEP = 10.0  # grey levels a band edge changes most pixels of a row by
BAND_EDGE_SHARE = 0.85  # share of a row's pixels that must change the same way (a sign or banner in the scene rarely spans that much)
BAND_MIN, BAND_MAX = 0.03, 0.45  # band height as a fraction of the picture


def find_overlay_bands(rgb: np.ndarray) -> list[tuple[float, float]]:
    """Rows (fractions of the height) that look like a caption band laid over the photo:
    a straight full-width edge where nearly every pixel gets darker (or lighter), paired
    with the opposite edge below it. (A band reaching the picture's edge shows only one
    edge, like the horizon or a shoreline does, so it is left to the comparison, which
    sees the reference.)"""
    grey = np.asarray(Image.fromarray(rgb).convert("L"), dtype=np.float32)
    if grey.shape[1] > 256:
        grey = np.asarray(Image.fromarray(grey.astype(np.uint8)).resize((256, max(8, round(grey.shape[0] * 256 / grey.shape[1]))), Image.Resampling.BOX), dtype=np.float32)
    height = grey.shape[0]
    if height < 16:
        return []
    step = grey[2:] - grey[:-2]  # row y+1: below minus above
    darker = (step < -BAND_EDGE_STEP).mean(axis=1) >= BAND_EDGE_SHARE
    lighter = (step > BAND_EDGE_STEP).mean(axis=1) >= BAND_EDGE_SHARE
    edges = sorted([(y + 1, "darker") for y, _ in _run_starts(darker)] + [(y + 1, "lighter") for y, _ in _run_starts(lighter)])
    bands, used = [], set()
    for index, (y, kind) in enumerate(edges):
        if y in used:
            continue
        partner = next(((y2, k2) for y2, k2 in edges[index + 1:] if k2 != kind and y2 not in used), None)
        if partner and BAND_MIN * height <= partner[0] - y <= BAND_MAX * height:
            bands.append((y, partner[0]))
            used.update({y, partner[0]})
    return [(a / height, b / height) for a, b in _merge_bands(bands)]


def _merge_bands(bands: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Join bands separated by less than the taller one's height: the edges of a text
    line inside one band can split it in two."""
    merged: list[tuple[int, int]] = []
    for start, stop in sorted(bands):
        if merged and start - merged[-1][1] <= max(stop - start, merged[-1][1] - merged[-1][0]):
            merged[-1] = (merged[-1][0], max(stop, merged[-1][1]))
        else:
            merged.append((start, stop))
    return merged


def _run_starts(flags: np.ndarray) -> list[tuple[int, int]]:
    """(middle, length) of runs of True: an edge blurred over a few rows counts once."""
    return [((a + b) // 2, b - a) for a, b in _runs(flags, as_fraction=False)]


def _runs(flags: np.ndarray, *, as_fraction: bool = True) -> list:
    padded = np.concatenate([[False], flags.astype(bool), [False]])
    changes = np.flatnonzero(padded[1:] != padded[:-1])
    pairs = list(zip(changes[::2], changes[1::2]))
    if as_fraction:
        return [(a / len(flags), b / len(flags)) for a, b in pairs]
    return [(int(a), int(b)) for a, b in pairs]


def find_content_box(rgb: np.ndarray) -> tuple[tuple[int, int, int, int], dict[str, int]]:
    """The picture region of `rgb` (H x W x 3 uint8) without uniform borders and caption
    banners, and the pixels trimmed per side (see the module docstring for the rule).
    Frames nest (a post's white strip around a screenshot's grey chrome around the photo),
    so the rule is applied again inside what it left, up to MAX_FRAMES times; a side is
    trimmed again only where the next frame has another colour (a sky shading into the
    frame's colour would otherwise be eaten a strip at a time)."""
    height, width = rgb.shape[:2]
    x0, y0, x1, y1 = 0, 0, width, height
    trimmed: dict[str, int] = {}
    colours: dict[str, np.ndarray] = {}  # side -> colour of the frame last trimmed there
    for _ in range(MAX_FRAMES):
        part = rgb[y0:y1, x0:x1]
        edges = {"top": part[0], "bottom": part[-1], "left": part[:, 0], "right": part[:, -1]}
        sides = _frame_sides(part)
        sides = {side: depth for side, depth in sides.items()
                 if side not in colours or np.abs(np.median(edges[side], axis=0) - colours[side]).max() > COLOR_TOLERANCE}
        if not sides:
            break
        for side, depth in sides.items():
            trimmed[side] = trimmed.get(side, 0) + depth
            colours[side] = np.median(edges[side], axis=0)
        x0, y0, x1, y1 = x0 + sides.get("left", 0), y0 + sides.get("top", 0), x1 - sides.get("right", 0), y1 - sides.get("bottom", 0)
    return (x0, y0, x1, y1), trimmed


def _frame_sides(rgb: np.ndarray) -> dict[str, int]:
    """One frame of `find_content_box`: the depth of the border or banner at each outer
    side of `rgb` that has one."""
    height, width = rgb.shape[:2]
    top = _border_depth(rgb, text_tolerant=True)
    bottom = _border_depth(rgb[::-1], text_tolerant=True)
    # Side bars are measured between the top and bottom borders: a banner's colour there
    # would otherwise count as the side bar's colour reaching into the picture.
    middle = rgb[top:height - bottom] if height - top - bottom >= height * 0.1 else rgb
    left = _border_depth(middle.transpose(1, 0, 2), text_tolerant=True)
    right = _border_depth(middle.transpose(1, 0, 2)[::-1], text_tolerant=True)
    if height - top - bottom < height * 0.1 or width - left - right < width * 0.1:
        return {}
    return {side: depth for side, depth in (("top", top), ("bottom", bottom), ("left", left), ("right", right)) if depth}


def _border_depth(rgb: np.ndarray, *, text_tolerant: bool) -> int:
    """Lines (rows of `rgb`, counted from row 0) that form a uniform border or banner."""
    lines = rgb.shape[0]
    edge = rgb[0].astype(np.int16)
    color = np.median(edge, axis=0)
    if _background_fraction(edge, color) < BORDER_EDGE_UNIFORM:
        return 0
    limit = int(lines * MAX_TRIM)
    threshold = BANNER_LINE_BACKGROUND if text_tolerant else BORDER_EDGE_UNIFORM
    max_gap = max(2, int(lines * BANNER_TEXT_GAP)) if text_tolerant else 0
    fractions = _background_fraction(rgb[: limit + max_gap + 2].astype(np.int16), color)
    depth, gap = 0, 0
    for index, fraction in enumerate(fractions):
        if fraction >= threshold:
            depth, gap = index + 1, 0
        else:
            gap += 1
            if gap > max_gap:
                break
    if depth > limit or depth < lines * MIN_TRIM:
        return 0
    # A banner ends at a sharp edge: the picture right after it hardly has its colour.
    # (Sky or a plain wall fades out gradually and is left alone.)
    if _edge_mean(fractions, depth) < BANNER_BEYOND_MAX:
        return depth
    # A photo turned by a degree or two meets the border along a slant: the border's colour
    # (its fill in the corners) shrinks to nothing over at most TURNED_EDGE of the line
    # length, as a wedge reaching in from the line's ends. (A sky fading into the border's
    # colour has that colour scattered along the whole line.)
    slant = int(np.ceil(TURNED_EDGE * rgb.shape[1]))
    for end in range(depth + 1, min(depth + slant, limit) + 1):
        if not _wedge_line(rgb[end - 1].astype(np.int16), color):
            return 0
        if _edge_mean(fractions, end) < BANNER_BEYOND_MAX:
            return end
    return 0


def _wedge_line(line: np.ndarray, color: np.ndarray) -> bool:
    """Whether the pixels of `line` close to `color` lie (WEDGE_SHARE) in runs from its ends."""
    close = np.abs(line - color).max(axis=-1) <= COLOR_TOLERANCE
    total = int(close.sum())
    if total == 0:
        return True
    from_start = len(close) if close.all() else int(np.argmin(close))
    from_end = len(close) if close.all() else int(np.argmin(close[::-1]))
    return min(total, from_start + from_end) >= WEDGE_SHARE * total


def _edge_mean(fractions: np.ndarray, depth: int) -> float:
    """Mean border-colour fraction of the BANNER_EDGE_ROWS lines after `depth` (0 past the end)."""
    beyond = fractions[depth:depth + BANNER_EDGE_ROWS]
    return float(beyond.mean()) if beyond.size else 0.0


def _background_fraction(lines: np.ndarray, color: np.ndarray) -> np.ndarray:
    """Per line (or for one line), the fraction of pixels within tolerance of `color`."""
    close = largest_channel(np.abs(lines - color)) <= COLOR_TOLERANCE
    return close.mean(axis=-1)


def largest_channel(values: np.ndarray) -> np.ndarray:
    """Per pixel, the largest of its three channel values: the same as `max(axis=-1)`,
    which NumPy computes several times slower over so short an axis."""
    return np.maximum(np.maximum(values[..., 0], values[..., 1]), values[..., 2])


TEXT_PAD = 0.6
"""OCR boxes are widened by this fraction of their height on every side: the plate,
badge or band a caption is printed on reaches about that far beyond its letters."""


def _text_mask(boxes: Sequence[Sequence[Sequence[float]]], box: tuple[int, int, int, int], scale: float,
               shape: tuple[int, int]) -> np.ndarray:
    """Pixels of the content (at `rgb` resolution) covered by widened OCR boxes."""
    mask = np.zeros(shape, dtype=bool)
    for points in boxes:
        xs, ys = [float(p[0]) for p in points], [float(p[1]) for p in points]
        pad = TEXT_PAD * (max(ys) - min(ys))
        top = int(np.floor((min(ys) - pad - box[1]) * scale))
        bottom = int(np.ceil((max(ys) + pad - box[1]) * scale))
        left = int(np.floor((min(xs) - pad - box[0]) * scale))
        right = int(np.ceil((max(xs) + pad - box[0]) * scale))
        mask[max(0, top):max(0, min(shape[0], bottom)), max(0, left):max(0, min(shape[1], right))] = True
    return mask


def _orientation(image: Image.Image) -> int:
    """The EXIF orientation tag, 1 when absent. Read without decoding the pixels: Pillow
    decodes a whole PNG to look for EXIF after the image data, where the PNG spec does
    not put it."""
    if image.format == "PNG" and "exif" not in image.info:
        return 1
    return image.getexif().get(0x0112, 1)


def _oriented_size(image: Image.Image) -> tuple[int, int]:
    return (image.height, image.width) if _orientation(image) in (5, 6, 7, 8) else image.size


# -- hashes --------------------------------------------------------------------------------

HASH_SOURCE_SIDE = 128

HASH_CROPS: tuple[tuple[float, float, float, float], ...] = (
    (0.0, 0.0, 1.0, 1.0),
    (0.1, 0.1, 0.9, 0.9),
    (0.0, 0.0, 0.8, 0.8),
    (0.2, 0.0, 1.0, 0.8),
    (0.0, 0.2, 0.8, 1.0),
    (0.2, 0.2, 1.0, 1.0),
    (0.175, 0.175, 0.825, 0.825),
)
"""Crops (x0, y0, x1, y1 as fractions) hashed for every corpus image: the whole picture,
a centre 80% and 65%, and the four 80% corners. A case image cropped from a corpus
picture lands near one of them."""

QUERY_CROPS: tuple[tuple[float, float, float, float], ...] = (
    (0.0, 0.0, 1.0, 1.0),
    (0.0, 0.0, 1.0, 0.8),
    (0.0, 0.2, 1.0, 1.0),
    (0.1, 0.1, 0.9, 0.9),
)
"""Crops hashed for a query: the whole picture, without its top or bottom fifth (where
an overlaid caption band usually sits) and a centre 80% (for added margins)."""


def crop_hashes(prepared: PreparedImage, crops: Sequence[tuple[float, float, float, float]]) -> np.ndarray:
    """(len(crops), 2) uint64: pHash and dHash (64 bits each) of each crop of the content."""
    image = Image.fromarray(prepared.rgb).convert("L")
    if max(image.size) > HASH_SOURCE_SIDE:  # hashes look at 32x32 at most: decimate once, crop after
        ratio = HASH_SOURCE_SIDE / max(image.size)
        image = image.resize((max(1, round(image.width * ratio)), max(1, round(image.height * ratio))), Image.Resampling.BOX)
    out = np.zeros((len(crops), 2), dtype=np.uint64)
    for index, (fx0, fy0, fx1, fy1) in enumerate(crops):
        w, h = image.size
        piece = image.crop((round(fx0 * w), round(fy0 * h), max(round(fx1 * w), round(fx0 * w) + 1), max(round(fy1 * h), round(fy0 * h) + 1)))
        out[index, 0] = _hash_int(imagehash.phash(piece))
        out[index, 1] = _hash_int(imagehash.dhash(piece))
    return out


def phash_hex(source: ImageInput) -> str:
    """pHash (16 hex digits) of an image's picture region, banners trimmed."""
    return f"{int(crop_hashes(prepare(source), HASH_CROPS[:1])[0, 0]):016x}"


def _hash_int(value: imagehash.ImageHash) -> int:
    bits = value.hash.flatten()
    return int("".join("1" if bit else "0" for bit in bits), 2)
