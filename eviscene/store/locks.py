"""The run lock: one writer per run, held with flock so a killed writer frees it at once.

Sealing removes the run folder, lock file included, while it still holds the lock (so no
writer can slip in between the archive commit and the removal). A writer that was waiting
on that file then holds a lock on a removed file, which guards nothing: after each flock the
lock checks that the file it locked is still the one at the path, and tries again if not.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import socket
import stat
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from eviscene.errors import LogIntegrityError, LogLockedError
from eviscene.rules.processes import command_name
from eviscene.store.faults import checkpoint
from eviscene.store.layout import refuse_linked_run_folder

# `lock_holder` takes the lock for an instant to see whether it is free; a writer starting
# in that instant tries again for this long before reporting the run busy.
_BUSY_RETRY_SECONDS = 0.25


class RunLock:
    def __init__(self, path: Path, run_id: str):
        self.path = path
        self.run_id = run_id
        self._fd: int | None = None

    def acquire(self) -> "RunLock":
        holder = self.try_acquire()
        if holder is not None:
            raise LogLockedError(f"run {self.run_id} is being written by {holder}; wait for it or stop it first")
        return self

    def try_acquire(self) -> str | None:
        """Take the lock and return None, or take nothing and return who holds it ("pid N
        (…)"). A lock this object holds already is kept: a new run's claim, which its writer
        goes on holding."""
        if self._fd is not None:
            return None
        deadline = time.monotonic() + _BUSY_RETRY_SECONDS
        while True:
            refuse_linked_run_folder(self.path.parent)  # before mkdir, which a dangling link fails
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                fd = _open_lock_file(self.path, os.O_RDWR | os.O_CREAT)
            except FileNotFoundError:
                continue  # a seal removed the folder between the two calls: make it again
            checkpoint("lock.opened")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _recorded_holder(fd)
                os.close(fd)
                if time.monotonic() < deadline:
                    time.sleep(0.01)
                    continue
                return holder
            if _same_file(fd, self.path):
                break
            os.close(fd)  # locked a file a seal has just removed: take the new one
        other = _holder_through_another_name(self.path)
        if other is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            return other
        os.ftruncate(fd, 0)
        os.write(fd, _holder_record())
        self._fd = fd
        return None

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


@contextmanager
def folder_lock(path: Path, what: str) -> Iterator[None]:
    """Hold the lock file `path` (made if missing) for the block: one process at a time writes
    `what`; another is refused, the holder named. Released when the process ends, however."""
    fd = _open_lock_file(path, os.O_RDWR | os.O_CREAT)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LogLockedError(f"{what} is being written by {_recorded_holder(fd)}; wait for it or stop it first") from None
        os.ftruncate(fd, 0)
        os.write(fd, _holder_record())
        try:
            yield
        finally:
            os.ftruncate(fd, 0)  # empty again: the folder's bytes do not depend on who wrote it last
    finally:
        os.close(fd)


def _holder_record() -> bytes:
    """What a lock file says of its holder, read back by `_recorded_holder`."""
    return f"pid {os.getpid()} ({command_name(sys.argv)} on {socket.gethostname()})".encode()


def _holder_through_another_name(lock: Path) -> str | None:
    """Who holds this run's lock through another name of the same log file in its folder (a
    hard link: `<name>.live/RUN/writer.lock`, its own lock file), else None. Two writers of one
    run through two names each wrote segments the other's seal took for its own."""
    live = lock.parent.parent
    log = live.with_name(live.name.removesuffix(".live"))
    try:
        names = [entry.name for entry in os.scandir(log.parent) if entry.name.endswith(".live") and entry.name != live.name]
    except OSError:
        return None
    for name in names:
        other = log.with_name(name.removesuffix(".live"))
        try:
            if not os.path.samefile(other, log):
                continue
            holder = lock_holder(log.with_name(name) / lock.parent.name / lock.name)
        except (OSError, LogIntegrityError):
            continue
        if holder is not None:
            return f"{holder} through {other}, another name of this log"
    return None


def _same_file(fd: int, path: Path) -> bool:
    try:
        on_disk = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (on_disk.st_dev, on_disk.st_ino)


def _open_lock_file(path: Path, flags: int) -> int:
    """The lock file opened neither through a link (the writer's pid would overwrite the file
    it leads to) nor when it is no plain file (a FIFO would block the opener for good)."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise LogIntegrityError(f"lock file {path} is a link; a lock file is a plain file: remove the link") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise LogIntegrityError(f"lock file {path} is not a plain file; remove it")
    return fd


def lock_holder(path: Path) -> str | None:
    """Who holds a run lock ("pid N (…)"), or None when nobody does; creates nothing. The run
    folder holding it is one `live_run_ids` listed, which refuses a linked one."""
    try:
        fd = _open_lock_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _recorded_holder(fd)
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _recorded_holder(fd: int) -> str:
    """The holder as the lock file names it ("pid N (… on HOST)"). The text outlives its
    writer: a killed writer's pid stays there while whatever holds the lock now (a `flock` from
    a shell, say) wrote nothing, so a pid not running here is not named. A pid on another host
    (a log on a shared filesystem, shards on a cluster) cannot be looked up from here: named."""
    text = os.read(fd, 512).decode("utf-8", "replace").strip()
    match = re.match(r"pid (\d+)(?: \(.* on ([^ ()]+)\))?$", text)
    if match is None:
        return "an unknown process"
    if match.group(2) not in (None, socket.gethostname()) or _running(int(match.group(1))):
        return text
    return "an unknown process"


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True
