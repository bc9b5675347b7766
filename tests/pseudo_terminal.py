"""A command run with one of its outputs on a pseudo-terminal, as a user's shell gives it:
what it draws or writes out only for a terminal (a progress bar, control characters shown)."""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path


def written_to_a_terminal(command: list[str], *, cwd: Path, stream: str = "stdout", status: int = 0) -> bytes:
    """What `command`, ending with exit `status`, writes to a pseudo-terminal as its `stream`
    (stdout or stderr); the other output is dropped."""
    controller, terminal = pty.openpty()
    outputs = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, stream: terminal}
    try:
        ended = subprocess.run(command, cwd=cwd, timeout=300, **outputs)
        assert ended.returncode == status, f"{command} ended with exit {ended.returncode}, not {status}"
        os.close(terminal)
        terminal = -1
        written = b""
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the terminal's other end is closed: all is read
                break
            if not chunk:
                break
            written += chunk
        return written
    finally:
        os.close(controller)
        if terminal >= 0:
            os.close(terminal)
