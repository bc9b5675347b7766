"""The circuit breaker shared by model endpoints and the search service: its probe intervals,
and time spent waiting for a down backend kept off an episode's clock."""

from __future__ import annotations

import anyio
import pytest

from eviscene.rules.circuit_breaker import CircuitBreaker, acquire_off_the_clock, outage_waits_excluded

pytestmark = pytest.mark.anyio


class Outage(Exception):
    pass


def test_probe_intervals_double_to_their_ceiling_whatever_the_failures_count():
    """Every episode's failure counts: a long outage at high concurrency reached 2.0 ** 1024,
    an OverflowError in place of the wait."""
    breaker = CircuitBreaker("http://search.example/", threshold=3, outage_timeout=600)
    waits = []
    for failures in (3, 4, 5, 8, 9, 5000):
        breaker.failures = failures
        breaker.down_since = None
        waits.append(breaker.probe_wait())
    assert waits == [1, 2, 4, 30, 30, 30]


async def test_past_the_outage_timeout_the_callers_outage_is_raised_and_the_listener_heard_each_wait():
    breaker = CircuitBreaker("http://search.example/", threshold=1, outage_timeout=1.5)
    heard = []
    breaker.listener = heard.append
    with pytest.raises(Outage):
        while True:
            await breaker.after_failure("no connection", lambda failures: 0.0, Outage)
    assert heard == ["waiting for http://search.example/: no connection, retrying in 1s"] * 2


async def test_waits_for_a_down_backend_and_for_the_episode_that_waits_are_off_each_episodes_clock():
    """Two episodes with 1 s deadlines: the first waits 2 s for a down backend holding the work
    both need (a case image's VLM description, behind a lock); the second waits for the lock.
    Neither wait is the episode's own time, so neither ends as a timeout."""
    breaker = CircuitBreaker("http://vlm.example/", threshold=10, outage_timeout=600)
    lock = anyio.Lock()
    ended = {}

    async def episode(name: str, started: anyio.Event | None) -> None:
        with anyio.fail_after(1.0) as deadline, outage_waits_excluded(deadline):
            await acquire_off_the_clock(lock)
            try:
                if started is not None:
                    started.set()
                    await breaker.after_failure("no connection", lambda failures: 2.0, Outage)
            finally:
                lock.release()
        ended[name] = "done"

    started = anyio.Event()
    async with anyio.create_task_group() as group:
        group.start_soon(episode, "describes", started)
        await started.wait()
        group.start_soon(episode, "waits", None)
    assert ended == {"describes": "done", "waits": "done"}


async def test_without_an_episode_a_wait_is_a_plain_sleep():
    breaker = CircuitBreaker("http://vlm.example/", threshold=10)
    with anyio.fail_after(5):
        assert await breaker.after_failure("no connection", lambda failures: 0.2, Outage) == 0.2
