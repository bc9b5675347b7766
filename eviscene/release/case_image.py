"""A case image as an episode uses it: its bytes read once and checked against the sha256 the
case records. Preflight hashes every image before the first episode, but a file swapped after
that would otherwise be analysed under its old hash, and its perception report cached under
that hash for later runs. So every reader in an episode (perception, the tools, the copy sent
to the model) takes these checked bytes, never the file again.

A picture's file, a case's or a corpus page's, is read whole (and a case's held while an episode
uses it): one over `MAX_PICTURE_BYTES` is refused by its size, before it is read."""

from __future__ import annotations

import hashlib
import io
import threading
from dataclasses import dataclass, field
from pathlib import Path
from weakref import WeakValueDictionary

from eviscene.errors import ReleaseError

MAX_PICTURE_BYTES = 64 * 1024**2
"""The largest picture file read at all: a news photo is a few MB, a camera's full-size JPEG
tens. Pillow decodes a picture followed by any padding, so without it a sparse 3 GB "JPEG"
(96 KB on disk) cost 3.6 GB of memory. Pixels have their bound too (`tools.images.MAX_DECODE_PIXELS`)."""


def over_file_limit(size: int) -> str | None:
    """Why a picture file of `size` bytes is never read ("N bytes, above the file size limit of
    …"), or None: the one test, for reading a picture and for a run's preflight of its cases."""
    if size > MAX_PICTURE_BYTES:
        return f"{size:,} bytes, above the file size limit of {MAX_PICTURE_BYTES:,} bytes ({MAX_PICTURE_BYTES // 1024**2} MiB)"
    return None


class PictureFileTooLarge(ReleaseError):
    """A picture file over MAX_PICTURE_BYTES (`detail` says how large)."""

    def __init__(self, path: str | Path, detail: str):
        super().__init__(f"{path}: picture file is {detail}")
        self.detail = detail


def read_picture(path: str | Path) -> bytes:
    """A picture file's bytes, refused (PictureFileTooLarge) by its size before they are read,
    and never more than one byte past the limit of them (a file growing meanwhile)."""
    path = Path(path)
    size = path.stat().st_size
    if size <= MAX_PICTURE_BYTES:
        with path.open("rb") as handle:
            data = handle.read(MAX_PICTURE_BYTES + 1)
        size = len(data)
    too_large = over_file_limit(size)
    if too_large:
        raise PictureFileTooLarge(path, too_large)
    return data


class CaseImageChanged(ReleaseError):
    """A case image no longer hashes to the sha256 its case records (the run checked it at start)."""


class CheckedImageStream(io.BytesIO):
    """A stream over checked bytes, carrying the file's name (for error messages) and sha256
    (a key for caches that would otherwise key on the file)."""

    def __init__(self, data: bytes, name: str, sha256: str):
        super().__init__(data)
        self.name, self.sha256 = name, sha256


@dataclass(frozen=True)
class CaseImage:
    path: Path
    sha256: str
    data: bytes = field(repr=False)

    def open(self) -> CheckedImageStream:
        """A fresh stream over the bytes (each reader gets its own position)."""
        return CheckedImageStream(self.data, str(self.path), self.sha256)

    @classmethod
    def of_file(cls, path: str | Path) -> CaseImage:
        """A file read once as it is (`read_picture`), unchecked: for the tools used on their own."""
        data = read_picture(path)
        return cls(Path(path), hashlib.sha256(data).hexdigest(), data)


# Checked images some episode still holds, by sha256: the rollouts of a case in flight and the
# copies their model requests send share one, where each read its own (256 episodes in flight
# held 256 copies, and a model request read and hashed the file again on the event loop).
_held: WeakValueDictionary[str, CaseImage] = WeakValueDictionary()
_held_lock = threading.Lock()


def read_case_image(path: str | Path, sha256: str) -> CaseImage:
    """The image's bytes, read once while any episode holds them; CaseImageChanged when they
    no longer hash to `sha256`."""
    with _held_lock:
        held = _held.get(sha256)
    if held is not None:
        return held
    image = CaseImage.of_file(path)
    if image.sha256 != sha256:
        raise CaseImageChanged(f"image {path} changed since the run started: sha256 {image.sha256}, expected {sha256}")
    with _held_lock:
        return _held.setdefault(sha256, image)
