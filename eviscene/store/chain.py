"""Event identity and the per-run sha256 hash chain, defined in this one place.

    content  = sha256(run_id ␟ episode_id ␟ attempt ␟ type ␟ step ␟ payload)
    event_id = 'ev-' + content[:32]                 unless the producer names the event itself
    hash     = sha256(prev_hash ␟ seq ␟ event_id ␟ ts ␟ content)     ts in UTC epoch microseconds
    prev_hash of a run's first event = 64 zeros

(␟ is the unit separator U+001F; NULL enters as U+001E.) A derived event_id depends only on
content, so appending the same event twice stores it once; the hash covers every stored
column, so editing, deleting or reordering an event breaks the chain at that event.
(The event clock, `now_micros`, is `eviscene.rules.timestamps`.)
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

GENESIS_HASH = "0" * 64
_NULL = "\x1e"


def content_digest(
    run_id: str, episode_id: str | None, attempt: int | None, type: str, step: int | None, payload: str | bytes
) -> str:
    """`payload` as text, or as its UTF-8 bytes (the writer serializes straight to bytes)."""
    # One f-string: this runs once per event on the writer's hot path.
    head = (
        f"{run_id}\x1f{_NULL if episode_id is None else episode_id}\x1f{_NULL if attempt is None else attempt}"
        f"\x1f{type}\x1f{_NULL if step is None else step}\x1f"
    )
    return hashlib.sha256(head.encode() + (payload.encode() if isinstance(payload, str) else payload)).hexdigest()


def unchainable(value: str | None) -> bool:
    """A text field the chain cannot tell apart from another spelling of the event: one holding
    its separator, or its NULL mark (an episode_id of exactly U+001E hashes as NULL does).
    No writer stores one (a case id holding either is refused with its release); in a stored
    event it is an edit the hash cannot show."""
    return value is not None and ("\x1f" in value or "\x1e" in value)


def derived_event_id(content: str) -> str:
    return "ev-" + content[:32]


def event_hash(prev_hash: str, seq: int, event_id: str, ts_micros: int, content: str) -> str:
    return hashlib.sha256(f"{prev_hash}\x1f{seq}\x1f{event_id}\x1f{ts_micros}\x1f{content}".encode()).hexdigest()


def batch_hashes(batch: pa.RecordBatch) -> list[str] | None:
    """Each event's `event_hash(prev_hash, seq, event_id, ts, content_digest(…))`, for a batch of
    events (the columns `log verify` walks, `ts` in epoch microseconds), the fields joined by
    Arrow, not one f-string an event: what a long run's walk spends most of its time on. None
    where a field that has no NULL mark is NULL (the row-by-row walk names it)."""
    import pyarrow as pa  # here: the reading commands import this module and load no Arrow
    import pyarrow.compute as pc

    if any(batch.column(name).null_count for name in ("run_id", "seq", "event_id", "ts", "type", "payload", "prev_hash")):
        return None
    separator = pa.scalar("\x1f", pa.large_string())

    def text(name: str, null: str | None = None) -> pa.Array:
        values = pc.cast(batch.column(name), pa.large_string())
        return values if null is None else pc.fill_null(values, null)

    contents = pc.binary_join_element_wise(
        text("run_id"), text("episode_id", _NULL), text("attempt", _NULL), text("type"), text("step", _NULL), text("payload"), separator
    )
    digests = pa.array([hashlib.sha256(value).hexdigest() for value in pc.cast(contents, pa.large_binary()).to_pylist()],
                       pa.large_string())
    chained = pc.binary_join_element_wise(text("prev_hash"), text("seq"), text("event_id"), text("ts"), digests, separator)
    return [hashlib.sha256(value).hexdigest() for value in pc.cast(chained, pa.large_binary()).to_pylist()]
