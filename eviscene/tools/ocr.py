"""Text in an image, read with RapidOCR (PP-OCRv4 ONNX models shipped in the wheel).

Text is read as upright: the 0/180-degree line classifier is off, since it turned
correctly detected caption lines upside down often enough to lose them (and printed
captions are upright).

One engine is built lazily per process (loading three ONNX models) and reused; inference
is serialized by a lock (the engine keeps per-call state) and results are cached by the
image's sha256, so the perception step and later tools reading the same case image pay
once (~0.4 s for a 640-pixel image on one CPU core). Async callers use `aread_text`,
which runs in a worker thread that a cancelled caller leaves behind: a read not yet at the
engine gives up, one in it finishes into the cache only.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Optional

import anyio.to_thread
import cv2
import numpy as np
from PIL import Image
from pydantic import BaseModel, Field

from eviscene.release.case_image import CaseImage
from eviscene.rules.blocking import unless_abandoned
from eviscene.tools.images import open_image

BACKEND = "rapidocr-onnxruntime"
_CACHE_SIZE = 256
OCR_DECODE_SIDE = 1280
"""Long side OCR reads at: larger pictures are read from a reduced copy (a caption legible
on a 13000-pixel picture is legible at 1280; a 1080p photo is read at 2/3 scale), boxes
scaled back to the original."""

MAX_READ_ASPECT = 2
"""A picture longer than this many times its width (or the reverse) is read padded to this
shape with its own mean colour, past its right or bottom edge. RapidOCR scales a picture up
until its short side is 30 px, then its detector until it is 736: a 1280 x 1 strip became a
9600 x 38400 array (4 GiB), and a run over it was killed for memory. Padded, the detector's
input is at most 1472 x 736, a 2:1 panorama's (a 1080p photo's is 1308 x 736); at 3:1
(2208 x 736) a strip cost 110 to 330 MB more than a small picture, by machine. The picture's
own pixels keep their coordinates. The bundled release's pictures are all within 2:1."""

MAX_CHAR_ASPECT = 2.0
"""A detected line is text only when its box is at most this many line heights wide per
character read. Printed lines measure at most 0.85 (bundled release and tuning variants
111-112 of its generator: captions, badges, handles, signs); the detector also boxes
texture (a row of pines over a lake, 730 x 168 px) and reads one character in it, a box
over 4 heights wide per character, which would hide that part of the picture from
`compare` as printed text."""

_engine: Any = None
_engine_lock = threading.Lock()
_run_lock = threading.Lock()
_cache: "OrderedDict[str, OcrResult]" = OrderedDict()
_cache_lock = threading.Lock()


class OcrLine(BaseModel):
    text: str
    confidence: float = Field(description="Recognition score 0..1.")
    box: list[list[float]] = Field(description="Four corner points [x, y] in image pixels, clockwise from top-left.")


class OcrResult(BaseModel):
    lines: list[OcrLine] = Field(default_factory=list, description="Lines in reading order.")
    text: str = Field("", description="Lines joined: a space within a visual row, a newline between rows.")
    width: int = 0
    height: int = 0


def _get_engine() -> Any:
    global _engine
    with _engine_lock:
        if _engine is None:
            from rapidocr_onnxruntime import RapidOCR

            _engine = RapidOCR()
            _boost_spaces(_engine)
        return _engine


SPACE_BOOST = 50.0
"""The bundled recognizer was trained mostly on Chinese and under-predicts the space
between Latin words ("Harborfire"). Its space probability is multiplied by this before
decoding: on Pillow's default font at 14-44 px that took lines with a wrong word split
or merge from 28 of 45 to 4 of 45 (factor 10: 18, 100: 4, 300: 9 with false splits)."""


class _SpaceBoostedDecode:
    def __init__(self, inner: Any, space_index: int) -> None:
        self._inner = inner
        self._space = space_index

    def __call__(self, preds: np.ndarray, return_word_box: bool = False, **kwargs: Any) -> Any:
        preds = preds.copy()
        preds[:, :, self._space] = np.minimum(preds[:, :, self._space] * SPACE_BOOST, 1.0)
        return self._inner(preds, return_word_box, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _boost_spaces(engine: Any) -> None:
    """Wrap the recognizer's CTC decoder (RapidOCR internals; left alone if they differ)."""
    decoder = getattr(getattr(engine, "text_rec", None), "postprocess_op", None)
    characters = getattr(decoder, "character", None)
    if decoder is not None and characters and " " in characters:
        engine.text_rec.postprocess_op = _SpaceBoostedDecode(decoder, characters.index(" "))


def read_text(source: str | Path | CaseImage) -> OcrResult:
    """OCR of one image (blocking): a case image's checked bytes, or a file read once. Lines
    are grouped into visual rows top to bottom, each row read left to right."""
    case_image = source if isinstance(source, CaseImage) else CaseImage.of_file(source)
    key = case_image.sha256
    cached = _cached(key)
    if cached is not None:
        return cached
    unless_abandoned()
    image, (width, height) = open_image(case_image.open(), max_side=OCR_DECODE_SIDE)
    read = _within_read_aspect(image)
    engine = _get_engine()
    with _run_lock:
        # Queued behind a read of the same picture (one a timed-out episode left running): its result.
        cached = _cached(key)
        if cached is not None:
            return cached
        unless_abandoned()
        # Character boxes let `_restore_spaces` put back the spaces between Latin words
        # that the bundled (Chinese-trained) recognizer often drops: "Harborfire".
        raw, _ = engine(read, use_cls=False, return_word_box=True)
    grey = np.asarray(read.convert("L"), dtype=np.uint8)
    assembled = _assemble(raw or [], grey).model_copy(update={"width": image.width, "height": image.height})
    result = _in_original_pixels(assembled, width, height)
    with _cache_lock:
        _cache[key] = result
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return result


def _within_read_aspect(image: Image.Image) -> Image.Image:
    """`image` as it is, or padded to `MAX_READ_ASPECT` where it is longer or wider than that."""
    width, height = image.size
    padded = (max(width, -(-height // MAX_READ_ASPECT)), max(height, -(-width // MAX_READ_ASPECT)))
    if padded == (width, height):
        return image
    rgb = image.convert("RGB")
    mean = tuple(round(channel) for channel in np.asarray(rgb, dtype=np.float64).reshape(-1, 3).mean(axis=0))
    canvas = Image.new("RGB", padded, mean)
    canvas.paste(rgb, (0, 0))
    return canvas


def _in_original_pixels(result: OcrResult, width: int, height: int) -> OcrResult:
    """Boxes read on a reduced copy of a very large image, scaled back to its own pixels."""
    if (result.width, result.height) == (width, height):
        return result
    sx, sy = width / max(1, result.width), height / max(1, result.height)
    lines = [line.model_copy(update={"box": [[round(x * sx, 1), round(y * sy, 1)] for x, y in line.box]})
             for line in result.lines]
    return result.model_copy(update={"lines": lines, "width": width, "height": height})


def has_text(rgb: np.ndarray, min_confidence: float = 0.6) -> bool:
    """Whether a crop around one line of text shows legible text: the recognizer alone
    (no detection: fast on a small crop) reads at least two letters or digits with
    `min_confidence`."""
    image = Image.fromarray(np.ascontiguousarray(rgb, dtype=np.uint8)).convert("RGB")
    engine = _get_engine()
    with _run_lock:
        raw, _ = engine(image, use_det=False, use_cls=False)
    return any(sum(c.isalnum() for c in str(text)) >= 2 and float(score) >= min_confidence for text, score, *_ in raw or [])


async def aread_text(source: str | Path | CaseImage) -> OcrResult:
    """`read_text` in a worker thread. A cancelled caller (an episode past its timeout) returns
    at once; the thread gives up before the engine, or (it cannot be stopped there) finishes
    the read into the cache only."""
    return await anyio.to_thread.run_sync(read_text, source, abandon_on_cancel=True)


def cached_text(image_path: str | Path) -> Optional[OcrResult]:
    """The cached OCR of an image, without running OCR."""
    return _cached(hashlib.sha256(Path(image_path).read_bytes()).hexdigest())


def _cached(key: str) -> Optional[OcrResult]:
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
        return _cache.get(key)


def _assemble(raw: list[Any], grey: np.ndarray) -> OcrResult:
    height, width = grey.shape
    lines = []
    for box, text, score, *details in raw:
        text = str(text)
        if len(details) >= 2 and details[0] and len(details[0]) == len(details[1]):
            text = _restore_spaces(grey, box, list(details[1]), details[0])
        text = " ".join(text.split())
        if text and _wide_as_its_text(box, text):
            lines.append(OcrLine(text=text, confidence=round(float(score), 4),
                                 box=[[round(float(x), 1), round(float(y), 1)] for x, y in box]))
    rows = group_rows(lines)
    ordered = [line for row in rows for line in row]
    text = "\n".join(" ".join(line.text for line in row) for row in rows)
    return OcrResult(lines=ordered, text=text, width=width, height=height)


def _wide_as_its_text(box: Any, text: str) -> bool:
    """The box (four corners, clockwise from top-left) is no wider than MAX_CHAR_ASPECT of
    its height per character of `text`."""
    corners = np.asarray(box, dtype=np.float64)
    width, height = np.linalg.norm(corners[1] - corners[0]), np.linalg.norm(corners[2] - corners[1])
    return width <= MAX_CHAR_ASPECT * max(height, 1.0) * len(text)


SPACE_GAP = 0.28
SPACE_MIN_PX = 4
"""A blank run between two characters is a word space when it is at least SPACE_GAP of
the line's ink height and at least SPACE_MIN_PX wide. Measured on Pillow's default font
at 14-44 px (939 character pairs): this splits no word and finds 135 of 148 word gaps;
the rest are 3-pixel spaces of 14-18 px text, as narrow as its letter gaps. Digits are
never split (tabular figures such as `1` carry wide side bearings), and a space the
recognizer puts between two digits without such a gap is dropped."""


def _restore_spaces(grey: np.ndarray, box: Any, chars: list[str], char_boxes: list[Any]) -> str:
    """The recognized characters, with a space inserted wherever the ink of the line has
    a word-sized blank run between two consecutive characters."""
    xs = [float(p[0]) for p in box]
    ys = [float(p[1]) for p in box]
    x0, x1 = max(0, int(min(xs))), min(grey.shape[1], int(np.ceil(max(xs))))
    y0, y1 = max(0, int(min(ys))), min(grey.shape[0], int(np.ceil(max(ys))))
    if y1 - y0 < 6 or x1 - x0 < (y1 - y0):
        return "".join(chars)  # vertical or degenerate line: leave as recognized
    crop = grey[y0:y1, x0:x1]
    _, binary = cv2.threshold(crop, 0, 1, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    ink = (binary if binary.mean() < 0.5 else 1 - binary).astype(bool)  # text is the minority class
    ink_rows = np.flatnonzero(ink.any(axis=1))
    if ink_rows.size < 4:
        return "".join(chars)
    ink_height = ink_rows[-1] - ink_rows[0] + 1
    blank = ~ink.any(axis=0)
    centers = [np.mean([float(p[0]) for p in cb]) - x0 for cb in char_boxes]
    gaps = [_longest_run(blank, centers[i - 1], centers[i]) for i in range(1, len(chars))]
    minimum = max(SPACE_GAP * ink_height, SPACE_MIN_PX)
    out = [chars[0]]
    for index in range(1, len(chars)):
        previous, current = chars[index - 1], chars[index]
        if current == " " and previous.isdigit() and index + 1 < len(chars) and chars[index + 1].isdigit():
            # "20 15": a space the recognizer put inside a number with no gap in the ink
            if _longest_run(blank, centers[index - 1], centers[index + 1]) < minimum:
                continue
        split = " " not in (previous, current) and not (previous.isdigit() and current.isdigit())
        if split and gaps[index - 1] >= minimum:
            out.append(" ")
        out.append(current)
    return "".join(out)


def _longest_run(blank: np.ndarray, start: float, stop: float) -> int:
    segment = blank[max(0, int(start)):max(0, int(np.ceil(stop)))]
    best = run = 0
    for value in segment:
        run = run + 1 if value else 0
        best = max(best, run)
    return best


def group_rows(lines: list[OcrLine]) -> list[list[OcrLine]]:
    """Visual rows: a line joins a row when its vertical center lies within the row's
    vertical extent (so slightly skewed lines of one row stay together)."""
    def extent(line: OcrLine) -> tuple[float, float]:
        ys = [y for _, y in line.box]
        return min(ys), max(ys)

    rows: list[tuple[float, float, list[OcrLine]]] = []
    for line in sorted(lines, key=lambda ln: (sum(extent(ln)) / 2, min(x for x, _ in ln.box))):
        top, bottom = extent(line)
        center = (top + bottom) / 2
        if rows and rows[-1][0] <= center <= rows[-1][1]:
            row_top, row_bottom, members = rows[-1]
            members.append(line)
            rows[-1] = (min(row_top, top), max(row_bottom, bottom), members)
        else:
            rows.append((top, bottom, [line]))
    return [sorted(members, key=lambda ln: min(x for x, _ in ln.box)) for _, _, members in rows]
