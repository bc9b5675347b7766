"""One backend's consecutive connection failures, shared by all its calls: a model endpoint's
(`eviscene.providers.http`) and the search service's (`eviscene.tools.web.search`).

After `threshold` failures in a row the backend counts as down: each call waits and probes
again at growing intervals (1, 2, 4 … 30 s) until it answers or the outage has lasted
`outage_timeout` seconds, when the caller stops the run (`BackendOutage`) rather than record
episodes that never reached it. Any answer closes the breaker.

Time spent waiting for a down backend is not the episode's: `outage_waits_excluded` names the
episode's deadline (its cancel scope), and each wait between tries moves that deadline on by
its length, as does waiting for another episode's shared work (`acquire_off_the_clock`), so an
outage does not end an episode as a timeout; the outage timeout stops the run instead. (The
tries themselves, each within its connect timeout, stay on the clock.)"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import anyio

OutageListener = Callable[[str | None], None]

_EPISODE_DEADLINE: ContextVar[anyio.CancelScope | None] = ContextVar("episode_deadline", default=None)


@contextmanager
def outage_waits_excluded(deadline: anyio.CancelScope) -> Iterator[None]:
    """Within the block, waits for a down backend move `deadline` (the episode's) on by their
    length. Tasks started inside inherit it (a context variable)."""
    token = _EPISODE_DEADLINE.set(deadline)
    try:
        yield
    finally:
        _EPISODE_DEADLINE.reset(token)


class CircuitBreaker:
    """`endpoint` is the backend as messages may show it (its credentials masked). `listener`
    hears "waiting for …" while open and None when the backend answers again."""

    PROBE_CEILING_SECONDS = 30.0

    def __init__(self, endpoint: str, *, threshold: int = 3, outage_timeout: float = 600.0):
        self.endpoint, self.threshold, self.outage_timeout = endpoint, max(1, threshold), outage_timeout
        self.failures = 0
        self.down_since: float | None = None
        self.listener: OutageListener | None = None

    @property
    def open(self) -> bool:
        return self.failures >= self.threshold

    def answered(self) -> None:
        was_open = self.open
        self.failures, self.down_since = 0, None
        if was_open and self.listener is not None:
            self.listener(None)

    def failed(self) -> None:
        self.failures += 1
        if self.down_since is None:
            self.down_since = time.monotonic()

    def outage_seconds(self) -> float:
        return 0.0 if self.down_since is None else time.monotonic() - self.down_since

    def probe_wait(self) -> float:
        """Seconds until the next try while open: 1, 2, 4 … up to 30, never past the timeout.
        (Every episode's failure counts: hundreds of them in a long outage.)"""
        doubling = min(self.PROBE_CEILING_SECONDS, 2.0 ** min(8, max(0, self.failures - self.threshold)))
        return max(0.0, min(doubling, self.outage_timeout - self.outage_seconds()))

    async def after_failure(self, why: str, backoff: Callable[[int], float],
                            outage: Callable[[], BaseException], at_least: float = 0.0) -> float:
        """One connection failure (`why`, fit to show): a short `backoff(failures)` until the
        breaker opens, then a probe interval, told to the listener; past the outage timeout,
        `outage()` is raised instead. Either wait is `at_least` the pause the backend asked for
        (its Retry-After), never past the outage timeout. Returns the seconds waited, off the
        episode's clock."""
        self.failed()
        if self.open:
            wait = self.probe_wait()
            if wait <= 0:
                raise outage()
            wait = max(wait, min(at_least, self.outage_timeout - self.outage_seconds()))
            if self.listener is not None:
                self.listener(f"waiting for {self.endpoint}: {why}, retrying in {math.ceil(wait)}s")
        else:
            wait = max(backoff(self.failures), at_least)
        await _off_the_clock(anyio.sleep(wait), wait)
        return wait


async def _off_the_clock(waiting: Awaitable[Any], seconds: float) -> Any:
    """Await `waiting`, known to take `seconds` at most, with the episode's deadline moved on
    by them first (a deadline due during the wait would cancel it)."""
    deadline = _EPISODE_DEADLINE.get()
    if deadline is not None and not deadline.cancel_called:
        deadline.deadline += seconds
    return await waiting


async def acquire_off_the_clock(lock: anyio.Lock) -> None:
    """Acquire `lock` with the time spent waiting for it off the episode's clock: its holder is
    another episode doing work they share (one VLM description of a case's image), perhaps
    waiting for a down backend."""
    while True:
        with anyio.move_on_after(1.0):
            await _off_the_clock(lock.acquire(), 1.0)
            return
