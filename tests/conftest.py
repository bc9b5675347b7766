import contextlib
import signal

import pytest


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def deadline():
    """`with deadline(seconds):` fails the test when its body runs longer instead of letting
    it hang (opening a named pipe nobody writes to waits forever); SIGALRM interrupts even a
    blocked open(). For the main thread, where tests run."""

    @contextlib.contextmanager
    def within(seconds: int):
        def expire(signum, frame):
            pytest.fail(f"still running after {seconds} s", pytrace=False)

        previous = signal.signal(signal.SIGALRM, expire)
        signal.alarm(seconds)
        try:
            yield
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)

    return within
