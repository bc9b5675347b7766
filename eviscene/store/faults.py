"""Named fault points for the crash tests, in the style of SQLite's: a real process run with
`EVISCENE_FAULT=<point>` (or `<point>@<n>`: at its n-th pass) kills itself with SIGKILL there,
and `EVISCENE_PAUSE=<point>:<folder>` makes it write `<folder>/reached` and wait until
`<folder>/go` exists, so a test can act in the gap between two steps. Unset (always, outside
tests), a checkpoint is one dictionary lookup.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

_KILL = os.environ.get("EVISCENE_FAULT", "")
_PAUSE = os.environ.get("EVISCENE_PAUSE", "")
_PAUSE_TIMEOUT_SECONDS = 60.0
_passes: dict[str, int] = {}


def checkpoint(point: str) -> None:
    if not (_KILL or _PAUSE):
        return
    _passes[point] = _passes.get(point, 0) + 1
    if _KILL:
        name, _, nth = _KILL.partition("@")
        if name == point and _passes[point] == int(nth or 1):
            os.kill(os.getpid(), signal.SIGKILL)
    if _PAUSE:
        name, _, folder = _PAUSE.partition(":")
        if name == point:
            (Path(folder) / "reached").write_text(str(os.getpid()))
            deadline = time.monotonic() + _PAUSE_TIMEOUT_SECONDS
            while not (Path(folder) / "go").exists() and time.monotonic() < deadline:
                time.sleep(0.01)
