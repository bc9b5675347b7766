"""Text in an image, read with RapidOCR (PP-OCRv4 ONNX models shipped in the wheel).

The engine takes about a second to construct, so one is built lazily per process and
reused; inference is serialized by a lock (the engine keeps per-call state) and results
are cached by the image's sha256, so the perception step and later tools reading the
same case image pay once. Async callers use `aread_text`, which runs in a worker thread.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Optional

import anyio.to_thread
from PIL import Image, ImageOps
from pydantic import BaseModel, Field

BACKEND = "rapidocr-onnxruntime"
_CACHE_SIZE = 256

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
        return _engine


def read_text(image_path: str | Path) -> OcrResult:
    """OCR of one image file (blocking). Lines are grouped into visual rows top to bottom,
    each row read left to right."""
    data = Path(image_path).read_bytes()
    key = hashlib.sha256(data).hexdigest()
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    with Image.open(Path(image_path)) as opened:
        image = ImageOps.exif_transpose(opened).convert("RGB")
    engine = _get_engine()
    with _run_lock:
        raw, _ = engine(image)
    result = _assemble(raw or [], image.width, image.height)
    with _cache_lock:
        _cache[key] = result
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return result


async def aread_text(image_path: str | Path) -> OcrResult:
    return await anyio.to_thread.run_sync(read_text, image_path)


def cached_text(image_path: str | Path) -> Optional[OcrResult]:
    """The cached OCR of an image, without running OCR."""
    key = hashlib.sha256(Path(image_path).read_bytes()).hexdigest()
    with _cache_lock:
        return _cache.get(key)


def _assemble(raw: list[Any], width: int, height: int) -> OcrResult:
    lines = [
        OcrLine(text=str(text).strip(), confidence=round(float(score), 4),
                box=[[round(float(x), 1), round(float(y), 1)] for x, y in box])
        for box, text, score in raw
        if str(text).strip()
    ]
    rows = group_rows(lines)
    ordered = [line for row in rows for line in row]
    text = "\n".join(" ".join(line.text for line in row) for row in rows)
    return OcrResult(lines=ordered, text=text, width=width, height=height)


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
