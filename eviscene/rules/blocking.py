"""How synchronous code runs the project's async work to completion (`EventLog.append`, the
record an import or a dataset export appends): `anyio.run`, or, where this thread already
runs an event loop (a notebook cell), `anyio.run` in a thread of its own, since a second loop
cannot start in a thread that runs one ("Already running asyncio in this thread")."""

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
