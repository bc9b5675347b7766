"""Where EviScene keeps its machine-local files (provider locks, the reverse-image index and
its stored answers, the view catalog's cache, the viewer's results): `EVISCENE_RUNTIME_DIR`,
else `$XDG_RUNTIME_DIR/eviscene`, else `<tmp>/eviscene-<uid>`, and only if it is this user's
alone; how a cache file there is written (whole or not at all); and how a cache folder stays
bounded: an entry nobody has written or read for `UNUSED_DAYS` is removed (`$XDG_RUNTIME_DIR`
is often a small tmpfs, and every new corpus, code version or log leaves entries no later run
reads)."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import stat
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Callable

UNUSED_DAYS = 14
_pruned: set[Path] = set()  # cache folders already pruned by this process


def private_folder_problem(folder: Path, others_may: int = 0) -> tuple[Path, str] | None:
    """Where and why another user could plant, swap or (beyond `others_may`) use `folder`, None
    when nobody could: it must be a real folder (not a link) of this user's whose group and
    other permission bits are within `others_may`, and each folder above it this user's or
    root's and, if others may write to it, sticky (as /tmp is: there nobody renames what is
    not theirs)."""
    own = os.lstat(folder)
    if not stat.S_ISDIR(own.st_mode) or own.st_uid != os.geteuid() or stat.S_IMODE(own.st_mode) & 0o077 & ~others_may:
        return folder, "is not a private folder of this user's"
    for above in folder.parents:
        info = os.stat(above)
        if info.st_uid not in (0, os.geteuid()):
            return above, "belongs to another user"
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
            return above, "is writable by others and not sticky"
    return None


def runtime_dir() -> Path:
    """The runtime directory, made if missing. One that another user could have planted or may
    write (on a shared machine, `<tmp>/eviscene-<uid>` is a name anyone can take first) would
    let them feed this user's runs cached search answers and locks: then this process keeps
    its files in a private folder of its own instead, and says so once."""
    configured = os.environ.get("EVISCENE_RUNTIME_DIR")
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if configured:
        chosen = Path(configured).resolve()  # a link the user set up is theirs to follow
    elif xdg and Path(xdg).is_dir():
        chosen = Path(xdg) / "eviscene"
    else:
        chosen = Path(tempfile.gettempdir()) / f"eviscene-{os.getuid()}"
    try:
        chosen.mkdir(parents=True, exist_ok=True, mode=0o700)
        problem = private_folder_problem(chosen.absolute(), others_may=stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    except OSError:
        return chosen  # not makeable here (read-only, full): each cache write fails and costs only its recomputation
    return chosen if problem is None else _private_runtime_dir(chosen, *problem)


@functools.cache
def _private_runtime_dir(chosen: Path, where: Path, why: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="eviscene-runtime-"))
    atexit.register(shutil.rmtree, folder, True)
    print(f"eviscene: not using the runtime directory {chosen}: {where} {why}; this process keeps its caches in "
          f"{folder} (set EVISCENE_RUNTIME_DIR to a folder of your own)", file=sys.stderr)
    return folder


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
