"""The run lock: one writer per run, held with flock so a killed writer frees it at once."""

from __future__ import annotations

import fcntl
import os
import sys
from pathlib import Path

from eviscene.errors import LogLockedError


class RunLock:
    def __init__(self, path: Path, run_id: str):
        self.path = path
        self.run_id = run_id
        self._fd: int | None = None

    def acquire(self) -> "RunLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 512).decode("utf-8", "replace").strip() or "unknown pid"
            os.close(fd)
            raise LogLockedError(f"run {self.run_id} is being written by {holder}; wait for it or stop it first") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()} ({' '.join(os.path.basename(a) for a in sys.argv[:2])})".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
