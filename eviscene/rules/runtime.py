"""Where EviScene keeps its machine-local files (provider locks, the reverse-image index
cache): `EVISCENE_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/eviscene`, else `<tmp>/eviscene-<uid>`."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def runtime_dir() -> Path:
    configured = os.environ.get("EVISCENE_RUNTIME_DIR")
    if configured:
        return Path(configured)
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and Path(xdg).is_dir():
        return Path(xdg) / "eviscene"
    return Path(tempfile.gettempdir()) / f"eviscene-{os.getuid()}"
