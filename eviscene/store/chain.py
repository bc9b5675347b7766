"""The canonical serializer and the per-run sha256 hash chain.

One serializer for everything the log stores and every export writes: sorted keys,
compact separators, UTF-8 (ensure_ascii=False), Python's float repr. DuckDB's own JSON
writer formats floats and timestamps differently, so exports never rely on it.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from typing import Any

GENESIS_HASH = "0" * 64


def canonical_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)


def format_ts(ts: datetime) -> str:
    return ts.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def event_hash(
    prev_hash: str,
    *,
    seq: int,
    event_id: str,
    ts: datetime,
    run_id: str,
    episode_id: str | None,
    attempt: int | None,
    type: str,
    step: int | None,
    payload: str,
) -> str:
    """sha256 over the previous hash and every stored column of the event."""
    header = canonical_json([seq, event_id, format_ts(ts), run_id, episode_id, attempt, type, step])
    return hashlib.sha256(f"{prev_hash}\n{header}\n{payload}".encode("utf-8")).hexdigest()


def derived_event_id(run_id: str, episode_id: str | None, attempt: int | None, type: str, step: int | None, payload: str) -> str:
    """A content-derived id: re-appending the same event yields the same id, so it is stored once."""
    material = canonical_json([run_id, episode_id, attempt, type, step, payload])
    return "ev-" + hashlib.sha256(material.encode("utf-8")).hexdigest()[:32]
