"""Where EviScene keeps its machine-local files (provider locks, the reverse-image index and
its stored answers, the view catalog's cache, the viewer's results): `EVISCENE_RUNTIME_DIR`,
else `$XDG_RUNTIME_DIR/eviscene`, else `<tmp>/eviscene-<uid>`; how a cache file there is
written (whole or not at all); and how a cache folder stays bounded: an entry nobody has
written or read for `UNUSED_DAYS` is removed (`$XDG_RUNTIME_DIR` is often a small tmpfs, and
every new corpus, code version or log leaves entries no later run reads)."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import IO, Callable

UNUSED_DAYS = 14
_pruned: set[Path] = set()  # cache folders already pruned by this process


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


def mark_used(path: Path) -> None:
    """Note that a cache entry (a file, or a folder of them) was read, so pruning keeps it."""
    try:
        os.utime(path)
    except OSError:
        pass  # gone meanwhile, or not ours to touch: at worst it is computed again


def prune_unused(folder: Path, now: float | None = None) -> None:
    """Remove the entries of the cache folder `folder` (its files and subfolders, a crashed
    writer's leftovers included) not written or read (`mark_used`) for `UNUSED_DAYS`; once
    per folder and process. A reader that loses an entry meanwhile computes it again."""
    if folder in _pruned:
        return
    _pruned.add(folder)
    cutoff = (time.time() if now is None else now) - UNUSED_DAYS * 86_400
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.stat(follow_symlinks=False).st_mtime >= cutoff:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
        except OSError:
            pass  # removed by another process, or not ours: leave it
