"""Output folders appear whole or not at all: an export writes into a temporary sibling
folder and renames it into place at the end. A fault on the way (disk full, permission
denied, a read-only folder, an interrupted write) removes the temporary folder and is one
line naming the path and the cause, so a rerun finds the output path as it was. A folder
being replaced stays where it is until the new one is whole: only then is it renamed aside,
the new one renamed in, and the old one removed."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from eviscene.errors import EvisceneError, os_fault
from eviscene.store.faults import checkpoint


def check_new_or_empty(out_dir: Path, what: str = "output directory") -> None:
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise EvisceneError(f"{what} must be new or empty: {out_dir}")


@contextmanager
def staged_directory(out_dir: Path, what: str = "output directory", *, replace: bool = False) -> Iterator[Path]:
    """Yield a new temporary folder next to `out_dir`; on success it becomes `out_dir`
    (which must be new or empty, unless `replace`: then a folder there is swapped for it),
    on any failure it is removed and `out_dir` is left as it was."""
    if not replace:
        check_new_or_empty(out_dir, what)
    staging = _sibling(out_dir, "partial")
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        staging.mkdir()
    except OSError as exc:
        raise _fault(exc, staging, out_dir) from None
    try:
        yield staging
        checkpoint("staging.filled")
        if replace and out_dir.exists():
            _swap_in(staging, out_dir)
        else:
            if out_dir.is_dir():
                out_dir.rmdir()  # empty (checked above); a folder that filled meanwhile is refused here
            os.rename(staging, out_dir)
    except BaseException as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, OSError):
            raise _fault(exc, staging, out_dir) from None
        raise
    checkpoint("staging.renamed")


def _sibling(out_dir: Path, role: str) -> Path:
    """A hidden folder name next to `out_dir`, unique to this write."""
    return out_dir.parent / f".{out_dir.name}.{role}-{uuid.uuid4().hex[:12]}"


def _swap_in(staging: Path, out_dir: Path) -> None:
    """Put the whole `staging` folder at `out_dir` in place of the folder there. Two renames,
    not remove-then-rename: if the second fails (or is interrupted) the first is undone, so
    the old folder is never lost; only a kill in the instant between them leaves it aside,
    as `.NAME.replaced-…`."""
    aside = _sibling(out_dir, "replaced")
    os.rename(out_dir, aside)
    try:
        checkpoint("staging.set_aside")
        os.rename(staging, out_dir)
    except BaseException:
        os.rename(aside, out_dir)
        raise
    shutil.rmtree(aside, ignore_errors=True)  # the new folder is in place: what is left of the old one is only clutter


def _fault(exc: OSError, staging: Path, out_dir: Path) -> EvisceneError:
    """The fault named by the path the user asked for, not the temporary one."""
    path = str(exc.filename if exc.filename is not None else staging)
    return os_fault(exc, path=path.replace(str(staging), str(out_dir)), verb="write")
