"""A case image as an episode uses it: its bytes read once and checked against the sha256 the
case records. Preflight hashes every image before the first episode, but a file swapped after
that would otherwise be analysed under its old hash, and its perception report cached under
that hash for later runs. So every reader in an episode (perception, the tools, the copy sent
to the model) takes these checked bytes, never the file again."""

from __future__ import annotations

import hashlib
import io
import threading
from dataclasses import dataclass, field
from pathlib import Path
from weakref import WeakValueDictionary

from eviscene.errors import ReleaseError


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
        """A file read once as it is, unchecked: for the tools used on their own."""
        data = Path(path).read_bytes()
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
