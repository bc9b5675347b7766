"""The clocks and the timestamp forms more than one layer writes."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone


# UTC, microseconds, `Z`: Python's strftime and DuckDB's read this format alike, so an
# export that formats timestamps in SQL passes this string rather than writing its own.
UTC_TS_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def now_micros() -> int:
    """The event clock: UTC epoch microseconds."""
    return time.time_ns() // 1000


def format_ts(ts: datetime) -> str:
    """ISO-8601 in UTC with microseconds, e.g. 2026-11-30T13:39:14.120017Z (exports)."""
    return ts.astimezone(timezone.utc).strftime(UTC_TS_FORMAT)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def format_epoch_micros(micros: int) -> str:
    """`format_ts` of a UTC instant given as epoch microseconds."""
    return (_EPOCH + timedelta(microseconds=micros)).strftime(UTC_TS_FORMAT)


def utc_now_millis_iso() -> str:
    """Now in UTC to the millisecond, e.g. 2026-11-30T13:39:14.120+00:00 (the agent's trace)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def local_now_seconds_iso() -> str:
    """Now in the local zone to the second, e.g. 2026-11-30T14:39:14+01:00 (what a person reads)."""
    return datetime.now().astimezone().isoformat(timespec="seconds")
