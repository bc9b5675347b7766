"""One run per provider quota (the seed's `GeminiRunGuard`, for every wire provider).

Two runs driving the same endpoint with the same key would each size their in-flight limit
as if they had the quota alone, and both would drown in 429s. A run therefore holds an flock
on a lock file per (provider, base URL, key variable) in the runtime directory
(`EVISCENE_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/eviscene`, else `<tmp>/eviscene-<uid>`); the
file names the holder's pid. The kernel drops the lock when the holder exits, however it
ends, so a lock left by a dead process is never in the way. `EVISCENE_SHARED_QUOTA=1` lets
runs share on purpose.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sys
from pathlib import Path

from eviscene.errors import EvisceneError
from eviscene.redaction import redact
from eviscene.rules.processes import command_name
from eviscene.rules.runtime import runtime_dir
from eviscene.rules.timestamps import local_now_seconds_iso

SHARE_ENV = "EVISCENE_SHARED_QUOTA"


class ProviderBusyError(EvisceneError):
    """Another live run already drives this provider quota."""


class RunGuard:
    def __init__(self, path: Path, fd: int | None):
        self.path, self._fd = path, fd

    @classmethod
    def acquire(cls, *, provider: str, base_url: str, api_key_env: str | None) -> "RunGuard":
        quota = f"{provider} at {redact(base_url)}" + (f" with the key in {api_key_env}" if api_key_env else "")
        digest = hashlib.sha256(f"{provider}\x1f{base_url.rstrip('/')}\x1f{api_key_env or ''}".encode()).hexdigest()[:20]
        folder = runtime_dir()
        path = folder / f"provider-{digest}.lock"
        if os.environ.get(SHARE_ENV, "").strip().lower() in {"1", "true", "yes"}:
            return cls(path, None)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise ProviderBusyError(
                f"another run (pid {holder.get('pid', '?')}, since {holder.get('since', '?')}) is using {quota}; "
                f"two runs would share one quota. Wait for it, or set {SHARE_ENV}=1 to share on purpose "
                f"(lock: {path})"
            ) from None
        os.ftruncate(fd, 0)
        note = {
            "pid": os.getpid(),
            "since": local_now_seconds_iso(),
            "quota": quota,
            "command": command_name(sys.argv),
        }
        os.write(fd, json.dumps(note).encode("utf-8"))
        return cls(path, fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def _holder(fd: int) -> dict:
    try:
        return json.loads(os.pread(fd, 4096, 0).decode("utf-8") or "{}")
    except (OSError, ValueError):
        return {}
