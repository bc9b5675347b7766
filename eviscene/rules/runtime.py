"""Where EviScene keeps its machine-local files (provider locks, the reverse-image index and
its stored answers, the view catalog's cache): `EVISCENE_RUNTIME_DIR`, else
`$XDG_RUNTIME_DIR/eviscene`, else `<tmp>/eviscene-<uid>`; and how a cache file there is
written (whole or not at all)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import IO, Callable


def runtime_dir() -> Path:
    configured = os.environ.get("EVISCENE_RUNTIME_DIR")
    if configured:
        return Path(configured)
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and Path(xdg).is_dir():
        return Path(xdg) / "eviscene"
    return Path(tempfile.gettempdir()) / f"eviscene-{os.getuid()}"


def write_replacing(path: Path, write: Callable[[IO[bytes]], object]) -> None:
    """Write a runtime-directory file under a temporary name, then rename it: a reader never
    sees half a file. One that cannot be written (no writable runtime directory, a full
    disk) costs only its recomputation."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle, pending = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError:
        return
    try:
        with os.fdopen(handle, "wb") as out:
            write(out)
        os.replace(pending, path)
    except OSError:
        Path(pending).unlink(missing_ok=True)
