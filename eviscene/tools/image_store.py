"""Reverse image search answers kept on disk, next to the index of the corpus they answer
for (`<corpus key>.answers/`): a query picture's candidates and each comparison of it with a
corpus picture, so a query answered once (the same case image in another rollout, another
run, another process) is answered again from disk in milliseconds instead of the
search's scan and `compare`'s alignment (seconds).

A stored answer is found under the sha256 of what decides it:
- the query picture itself (`picture_digest`: every field of it: pixels, content box, trims,
  scale, text mask, bands);
- the corpus picture (its sha256; the folder is named by the corpus key, which changes
  when any corpus file does);
- the code that computes answers (the source of the modules below) and the versions of
  the libraries it calls (OpenCV, NumPy, Pillow, ImageHash, the OCR engine): a changed
  rule, threshold or library never reads an answer made before it, even where `METHOD`
  was not bumped.
Each software's answers lie in a subfolder named by its digest (nothing removes those of
older code: the runtime directory is cleared with the session or by hand).
Files are written under a temporary name and renamed, so a reader never sees half of one;
an unreadable or unparsable file is a miss, and a folder that cannot be written costs only
the recomputation.
"""

from __future__ import annotations

import dataclasses
import hashlib
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Callable, Optional, TypeVar

import numpy as np

from eviscene.rules.runtime import mark_used, prune_unused, write_replacing
from eviscene.tools.images import PreparedImage

T = TypeVar("T")

# The modules whose code decides a search's candidates and a comparison.
_ANSWERING_MODULES = ("images.py", "image_align.py", "image_compare.py", "image_index.py", "image_store.py", "ocr.py")
_ANSWERING_LIBRARIES = ("opencv-python-headless", "opencv-python", "numpy", "pillow", "imagehash", "rapidocr-onnxruntime", "onnxruntime")


@lru_cache(maxsize=1)
def software_digest() -> str:
    """sha256 of the answering modules' source and the answering libraries' versions."""
    digest = hashlib.sha256()
    folder = Path(__file__).parent
    for name in _ANSWERING_MODULES:
        digest.update(name.encode() + b"\0" + (folder / name).read_bytes() + b"\0")
    for library in _ANSWERING_LIBRARIES:
        try:
            version = metadata.version(library)
        except metadata.PackageNotFoundError:
            version = "-"
        digest.update(f"{library}={version}\n".encode())
    return digest.hexdigest()


def picture_digest(image: PreparedImage) -> str:
    """sha256 of every field of a prepared picture (all a search or `compare` reads of it; a
    field added later counts too), computed once per picture object: `derived` travels with
    it, and a copy starts without it."""
    found = image.derived.get("digest")
    if found is None:
        digest = hashlib.sha256()
        for field in dataclasses.fields(image):
            if field.compare:  # all but `derived`, the picture's own cache
                digest.update(field.name.encode() + b"\0" + _field_bytes(getattr(image, field.name)) + b"\0")
        found = image.derived.setdefault("digest", digest.hexdigest())
    return found


def _field_bytes(value: object) -> bytes:
    if isinstance(value, np.ndarray):  # the shape fixes the length of the bytes that follow
        return repr((value.shape, str(value.dtype))).encode() + np.ascontiguousarray(value).tobytes()
    if isinstance(value, dict):
        value = sorted(value.items())
    return repr(value).encode()


class AnswerStore:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        mark_used(folder)  # the corpus's answers, and below, this code's
        mark_used(folder / software_digest())

    def _path(self, name: str) -> Path:
        # One subfolder per answering software: answers of older code are easy to find and remove.
        return self.folder / software_digest() / f"{hashlib.sha256(name.encode()).hexdigest()}.json"

    def get(self, name: str, parse: Callable[[str], T]) -> Optional[T]:
        """The answer stored under `name`, parsed; None when there is none or it does not parse."""
        try:
            return parse(self._path(name).read_text(encoding="utf-8"))
        except (OSError, ValueError, TypeError):
            return None

    def put(self, name: str, text: str) -> None:
        write_replacing(self._path(name), lambda out: out.write(text.encode("utf-8")))
        prune_unused(self.folder)  # answers of code no longer run
