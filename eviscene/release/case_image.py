"""A case image as an episode uses it: its bytes read once and checked against the sha256 the
case records. Preflight hashes every image before the first episode, but a file swapped after
that would otherwise be analysed under its old hash, and its perception report cached under
that hash for later runs. So every reader in an episode (perception, the tools, the copy sent
to the model) takes these checked bytes, never the file again."""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, field
from pathlib import Path

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


def read_case_image(path: str | Path, sha256: str) -> CaseImage:
    """The image's bytes, read once; CaseImageChanged when they no longer hash to `sha256`."""
    image = CaseImage.of_file(path)
    if image.sha256 != sha256:
        raise CaseImageChanged(f"image {path} changed since the run started: sha256 {image.sha256}, expected {sha256}")
    return image
