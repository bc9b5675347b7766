"""Output folders appear whole or not at all: an export writes into a temporary sibling
folder and renames it into place at the end. A fault on the way (disk full, permission
denied, a read-only folder, an interrupted write) removes the temporary folder and is one
line naming the path and the cause, so a rerun finds the output path as it was. A folder
being replaced stays where it is until the new one is whole: only then is it renamed aside,
the new one renamed in, and the old one removed. A temporary folder left by a killed export
(which had no chance to remove it) goes at the next write to the same path: its name holds
the host and process that wrote it, and that process is gone."""

from __future__ import annotations

import errno
import hashlib
import os
import re
import shutil
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from eviscene.errors import EvisceneError, OutputFolderTakenError, os_fault
from eviscene.store.faults import checkpoint


def check_new_or_empty(out_dir: Path, what: str = "output directory") -> None:
    check_output_folder(out_dir, what)
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise OutputFolderTakenError(f"{what} must be new or empty: {out_dir}")


def check_output_folder(out_dir: Path, what: str = "output directory") -> None:
    """`out_dir` names, as it stands, the one folder the write puts in place: the checks made
    before the work hold for the folder written at its end."""
    for depth, part in enumerate(out_dir.parts):
        # `new/..` names no folder while `new` is not one (the system finds nothing there), and
        # the write, making `new` for its temporary sibling, would turn it into the folder above
        above = Path(*out_dir.parts[:depth])
        if part == ".." and depth and not above.is_dir():
            raise EvisceneError(
                f"{what} {out_dir}: its '..' steps out of {above}, which {'is not a folder' if above.exists() else 'does not exist'}, "
                "so the path names no folder; write it without the '..'"
            )
    if out_dir.is_symlink():  # renamed onto, the link would be replaced, not the folder it leads to
        raise EvisceneError(
            f"{what} {out_dir} is a link (to {os.readlink(out_dir)}); an output folder is put in place whole, never through a link: "
            "name the folder itself"
        )
    _check_not_the_working_folder(out_dir, what)


def _check_not_the_working_folder(out_dir: Path, what: str) -> None:
    """An output folder is put in place whole, replacing what is there: the (empty) folder a
    command runs in would leave its shell in a deleted folder, and `.` cannot be renamed to."""
    try:
        here = Path.cwd()
    except OSError:  # the working folder is gone already: nothing to keep it from
        return
    target, here = out_dir.resolve(), here.resolve()
    if target == here or target in here.parents:
        raise EvisceneError(
            f"{what} {out_dir} is the folder this command runs in{'' if target == here else ' or holds it'}, which would be "
            f"replaced whole (your shell left in a deleted folder): name a new folder, e.g. {out_dir / 'out'}"
        )


@contextmanager
def staged_directory(out_dir: Path, what: str = "output directory", *, replace: bool = False) -> Iterator[Path]:
    """Yield a new temporary folder next to `out_dir`; on success it becomes `out_dir`
    (which must be new or empty, unless `replace`: then a folder there is swapped for it),
    on any failure it is removed and `out_dir` is left as it was."""
    if not replace:
        check_new_or_empty(out_dir, what)
    else:
        check_output_folder(out_dir, what)
    staging = _sibling(out_dir, "partial")
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        _remove_abandoned(out_dir)
        staging.mkdir()
    except OSError as exc:
        raise _fault(exc, staging, out_dir) from None
    try:
        yield staging
        checkpoint("staging.filled")
        if replace and out_dir.exists():
            _swap_in(staging, out_dir)
        else:
            _put_in_place(staging, out_dir, what)
    except BaseException as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, OSError):
            raise _fault(exc, staging, out_dir) from None
        raise
    checkpoint("staging.renamed")


def _put_in_place(staging: Path, out_dir: Path, what: str) -> None:
    """Rename the whole `staging` folder to `out_dir`, new or empty when the write began; one
    filled meanwhile (another write to the same path, finished first) is kept, this one not."""
    try:
        if out_dir.is_dir():
            out_dir.rmdir()
        os.rename(staging, out_dir)
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
        raise OutputFolderTakenError(
            f"{what} {out_dir} was filled while this write ran (another write to it, finished first?); "
            "it is kept as it is and this write's output removed"
        ) from None


def _sibling(out_dir: Path, role: str) -> Path:
    """A hidden folder name next to `out_dir`, unique to this write, naming who writes it."""
    return out_dir.parent / f".{out_dir.name}.{role}-{_writer()}-{uuid.uuid4().hex[:12]}"


def _writer() -> str:
    """This host and process, as they appear in a temporary folder's name."""
    return f"{_host()}-{os.getpid()}"


def _host() -> str:
    """A short fixed-length token for this host (a name's length must not cost the path's)."""
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _remove_abandoned(out_dir: Path) -> None:
    """Remove the partial folders of earlier writes to `out_dir` by a process of this host that
    no longer runs (killed mid-write: up to a whole export's size). Another host's, or a live
    process's (a concurrent write), are left alone; a folder set aside by a swap is never
    touched: it may be the only copy of the earlier output."""
    leftover = re.compile(re.escape(f".{out_dir.name}.partial-{_host()}-") + r"(\d+)-[0-9a-f]{12}")
    for entry in out_dir.parent.iterdir():
        found = leftover.fullmatch(entry.name)
        if found and not _running(int(found.group(1))):
            shutil.rmtree(entry, ignore_errors=True)


def pending_file_prefix(target: Path) -> str:
    """The start of a temporary file's name beside `target` (`tempfile.mkstemp(prefix=…)`): it
    names who writes it, so `remove_abandoned_files` can tell a killed write's from a live one's."""
    return f".{target.name}.{_writer()}-"


def remove_abandoned_files(target: Path) -> None:
    """Remove the temporary files of earlier writes to `target` by a process of this host that
    no longer runs (a killed `sql --output`: up to the whole result's size)."""
    leftover = re.compile(re.escape(f".{target.name}.{_host()}-") + r"(\d+)-\w{8}\.tmp")
    try:
        entries = list(target.parent.iterdir())
    except OSError:  # a folder one may write into but not list (a drop box): nothing to sweep from here
        return
    for entry in entries:
        found = leftover.fullmatch(entry.name)
        if found and not _running(int(found.group(1))):
            entry.unlink(missing_ok=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # another user's process, or no pid at all: not ours to judge
        return True
    return True


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
