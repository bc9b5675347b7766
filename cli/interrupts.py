"""Ctrl-C and SIGTERM end every command alike: one line on stderr saying what was cut short and
what finishes it, exit 130, no traceback (`main.py` reports; commands say what is at stake with
`on_interrupt_say`). Whatever was committed stays; `eval run`'s episodes stop more gently, on
their own signal receiver (`eviscene.eval.providers.until_stopped`)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from eviscene.errors import is_interruption
from eviscene.store.snapshot import interrupt_queries

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
EXIT_INTERRUPTED = 130  # the shell's code for Ctrl-C; SIGTERM exits with it too, as the README says
_STOP_WATCHING = 0  # down the wakeup pipe: no signal has this number


class Interrupted(KeyboardInterrupt):
    """An interrupt, with the line that reports it."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


# For commands whose every step commits whole or not at all, or is finished by the next run,
# which skips what the first did (an import, a seal, a merge).
RERUN_FINISHES = "interrupted; nothing half done is kept: the same command finishes the job"


def interruption_message(exc: BaseException) -> str:
    return exc.message if isinstance(exc, Interrupted) else "interrupted"


def interrupted_writing(path: Path, finish: str, replacing: os.stat_result | None = None) -> str:
    """The line for an interrupt while the folder or file `path` is written: each is written
    under a temporary name renamed into place whole (`exports/staging.py`, `report`, `sql
    --output`), so it is there whole or not at all. `replacing`: the stat of the earlier one
    there, which stays until the new one is in."""
    if replacing is not None and _same(path, replacing):
        return f"interrupted while writing {path} (the earlier one kept as it was); {finish} writes it"
    if path.is_file() or (path.is_dir() and any(path.iterdir())):
        return f"interrupted; {path} was written whole"
    return f"interrupted while writing {path} (nothing kept there); {finish} writes it"


def earlier_stat(path: Path) -> os.stat_result | None:
    """What is at `path` before it is written again, for `interrupted_writing`."""
    try:
        return path.stat()
    except OSError:
        return None


def _same(path: Path, earlier: os.stat_result) -> bool:
    try:
        return os.path.samestat(path.stat(), earlier)
    except OSError:
        return False


def ignore_stop_signals() -> None:
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def _interrupt_once(signum: int, frame: object) -> None:
    """A stop signal raises KeyboardInterrupt once: those after it (a second Ctrl-C, or
    `timeout` signalling the process group as well as the process) find the command already
    stopping, and would only break off its report or the interpreter's exit."""
    ignore_stop_signals()
    raise KeyboardInterrupt


@contextmanager
def stop_signals_interrupt() -> Iterator[None]:
    """Inside the block, SIGTERM interrupts as Ctrl-C does: both raise KeyboardInterrupt where
    the process is and stop the DuckDB queries running. Our own handler for both, not
    Python's default: asyncio.run replaces only the default, with one that merely cancels its
    task once the running query and sync code are done. The previous handlers come back after,
    unless a stop signal came: then the process ends ignoring them."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    wakeup_read, wakeup_write = os.pipe()
    os.set_blocking(wakeup_write, False)
    previous_wakeup = signal.set_wakeup_fd(wakeup_write, warn_on_full_buffer=False)
    watcher = threading.Thread(target=_interrupt_queries_on_stop_signals, args=(wakeup_read,), daemon=True)
    watcher.start()
    for signum in STOP_SIGNALS:
        signal.signal(signum, _interrupt_once)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            if signal.getsignal(signum) is _interrupt_once:
                signal.signal(signum, handler)
        signal.set_wakeup_fd(previous_wakeup)
        os.write(wakeup_write, bytes([_STOP_WATCHING]))
        watcher.join()
        os.close(wakeup_read)
        os.close(wakeup_write)


def _interrupt_queries_on_stop_signals(wakeup_read: int) -> None:
    """Python runs a signal's handler only between two steps of the main thread, so not while
    a DuckDB call blocks it; the signal's number comes down the wakeup pipe at once, here."""
    while (received := os.read(wakeup_read, 64)) and _STOP_WATCHING not in received:
        if any(signum in STOP_SIGNALS for signum in received):
            interrupt_queries()


@contextmanager
def on_interrupt_say(message: str | Callable[[], str]) -> Iterator[None]:
    """An interrupt inside the block is reported with `message` (a callable is asked when the
    interrupt comes, to describe what is on disk then); an inner block's message wins."""
    try:
        yield
    except Interrupted:
        raise
    except BaseException as exc:
        if not is_interruption(exc):
            raise
        raise Interrupted(message() if callable(message) else message) from None
