"""Output folders appear whole or not at all: an export writes into a temporary sibling
folder and renames it into place at the end. A fault on the way (disk full, permission
denied, a read-only folder, an interrupted write) removes the temporary folder and is one
line naming the path and the cause, so a rerun finds the output path as it was."""

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
def staged_directory(out_dir: Path, what: str = "output directory") -> Iterator[Path]:
    """Yield a new temporary folder next to `out_dir`; on success it becomes `out_dir`
    (which must be new or empty), on any failure it is removed."""
    check_new_or_empty(out_dir, what)
    staging = out_dir.parent / f".{out_dir.name}.partial-{uuid.uuid4().hex[:12]}"
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        staging.mkdir()
    except OSError as exc:
        raise _fault(exc, staging, out_dir) from None
    try:
        yield staging
        checkpoint("staging.filled")
        if out_dir.is_dir():
            out_dir.rmdir()  # empty (checked above); a folder that filled meanwhile is refused here
        os.rename(staging, out_dir)
    except BaseException as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, OSError):
            raise _fault(exc, staging, out_dir) from None
        raise
    checkpoint("staging.renamed")


def _fault(exc: OSError, staging: Path, out_dir: Path) -> EvisceneError:
    """The fault named by the path the user asked for, not the temporary one."""
    path = str(exc.filename if exc.filename is not None else staging)
    return os_fault(exc, path=path.replace(str(staging), str(out_dir)), verb="write")
