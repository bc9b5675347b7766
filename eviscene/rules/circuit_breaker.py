"""One backend's consecutive connection failures, shared by all its calls: a model endpoint's
(`eviscene.providers.http`) and the search service's (`eviscene.tools.web.search`).

After `threshold` failures in a row the backend counts as down: each call waits and probes
again at growing intervals (1, 2, 4 … 30 s) until it answers or the outage has lasted
`outage_timeout` seconds, when the caller stops the run (`BackendOutage`) rather than record
episodes that never reached it. Any answer closes the breaker."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

OutageListener = Callable[[str | None], None]


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
        """Seconds until the next try while open: 1, 2, 4 … up to 30, never past the timeout."""
        doubling = min(self.PROBE_CEILING_SECONDS, 2.0 ** max(0, self.failures - self.threshold))
        return max(0.0, min(doubling, self.outage_timeout - self.outage_seconds()))

    def waiting(self, why: str, wait: float) -> None:
        """Tell the listener; `why` must already be fit to show (redacted)."""
        if self.listener is not None:
            self.listener(f"waiting for {self.endpoint}: {why}, retrying in {math.ceil(wait)}s")
