"""How synchronous code runs the project's async work to completion (`EventLog.append`, the
record an import or a dataset export appends): `anyio.run`, or, where this thread already
runs an event loop (a notebook cell), `anyio.run` in a thread of its own, since a second loop
cannot start in a thread that runs one ("Already running asyncio in this thread"). And how
synchronous work in a worker thread sees that its async caller has left it behind
(`unless_abandoned`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


def run_blocking(func: Callable[..., Awaitable[T]], *args: Any) -> T:
    """`func(*args)` run to its end from synchronous code, whatever loop this thread runs."""
    # Imported here: the reading commands import this module and never run async work, and
    # asyncio with its ssl and futures is ~20 ms of their start-up.
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    import anyio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return anyio.run(func, *args)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="eviscene-blocking") as pool:
        return pool.submit(anyio.run, func, *args).result()


def unless_abandoned() -> None:
    """In a worker thread whose caller has gone (`anyio.to_thread.run_sync(..., abandon_on_cancel=True)`
    under an episode past its timeout), raise its cancellation: called before a costly step (an
    OCR read, an image comparison) whose result would go unused, so the thread left behind stops
    there instead of holding the CPU (or a lock other reads queue for)."""
    import anyio.from_thread  # here, as above: this module is imported by commands that never run async work

    try:
        anyio.from_thread.check_cancelled()
    except RuntimeError:  # not an anyio worker thread: its caller waits for the answer
        pass
