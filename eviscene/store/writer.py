"""The single writer of one run: producers hand events to a bounded anyio stream, one task
commits them in Arrow batches.

Each batch becomes one immutable Parquet segment in the run's live folder (written to a
temporary name, then renamed: the rename is the commit). The writer assigns the gapless
`seq`, extends the hash chain and drops re-appended events (same `event_id`). When the run
ends, its segments are sealed into the DuckDB archive (`seal.py`).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
import pyarrow.parquet as pq
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from pydantic import BaseModel

from eviscene.errors import DuplicateEventError
from eviscene.store.chain import GENESIS_HASH, canonical_json, derived_event_id, event_hash
from eviscene.store.layout import blob_segment_name, list_blob_files, list_segments, run_folder, segment_name
from eviscene.store.locks import RunLock
from eviscene.store.schema import BLOB_SCHEMA, EVENT_SCHEMA
from eviscene.store.snapshot import run_state

COMPACT_AFTER_SEGMENTS = 32


@dataclass
class EventDraft:
    """An event before the writer numbers and chains it."""

    payload: BaseModel
    episode_id: str | None = None
    attempt: int | None = None
    step: int | None = None
    event_id: str | None = None
    ts: datetime | None = None


@dataclass
class _Blob:
    sha256: str
    media_type: str
    content: bytes


@dataclass
class _Sync:
    done: anyio.Event = field(default_factory=anyio.Event)


class RunWriter:
    """Writes one run's events. Use as `async with RunWriter(log_path, run_id) as writer:`."""

    def __init__(
        self,
        log_path: Path,
        run_id: str,
        *,
        batch_rows: int = 4096,
        flush_seconds: float = 1.0,
        queue_size: int = 8192,
    ):
        self.log_path = log_path
        self.run_id = run_id
        self.folder = run_folder(log_path, run_id)
        self.batch_rows = batch_rows
        self.flush_seconds = flush_seconds
        self.queue_size = queue_size
        self._lock = RunLock(self.folder / "writer.lock", run_id)
        self._send: MemoryObjectSendStream[Any] | None = None
        self._receive: MemoryObjectReceiveStream[Any] | None = None
        self._task_group: Any = None
        self._seen_ids: dict[str, str] = {}
        self._known_blobs: set[str] = set()
        self._last_seq = 0
        self._last_hash = GENESIS_HASH
        self.committed_events = 0
        self._blob_files = 0

    @property
    def last_seq(self) -> int:
        return self._last_seq

    async def __aenter__(self) -> "RunWriter":
        self._lock.acquire()
        try:
            state = await anyio.to_thread.run_sync(run_state, self.log_path, self.run_id)
        except BaseException:
            self._lock.release()
            raise
        self._last_seq, self._last_hash = state.last_seq, state.last_hash
        self._seen_ids = dict(state.event_ids)
        self._known_blobs = set(state.blob_hashes)
        self._send, self._receive = anyio.create_memory_object_stream(self.queue_size)
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        self._task_group.start_soon(self._run)
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        assert self._send is not None
        await self._send.aclose()
        try:
            return await self._task_group.__aexit__(*exc_info)
        finally:
            self._lock.release()

    async def emit(self, draft: EventDraft) -> None:
        """Queue an event; waits while the queue is full (backpressure)."""
        assert self._send is not None, "use the writer inside `async with`"
        await self._send.send(draft)

    async def put_blob(self, content: bytes, media_type: str) -> str:
        """Store content once, keyed by its sha256; committed with the next batch."""
        digest = hashlib.sha256(content).hexdigest()
        assert self._send is not None
        await self._send.send(_Blob(digest, media_type, content))
        return digest

    async def sync(self) -> None:
        """Return once everything queued before this call is committed."""
        marker = _Sync()
        assert self._send is not None
        await self._send.send(marker)
        await marker.done.wait()

    async def _run(self) -> None:
        assert self._receive is not None
        receive = self._receive
        pending: list[Any] = []
        async with receive:
            while True:
                try:
                    first = await receive.receive()
                except anyio.EndOfStream:
                    break
                pending.append(first)
                closed = False
                with anyio.move_on_after(self.flush_seconds):
                    while len(pending) < self.batch_rows and not isinstance(pending[-1], _Sync):
                        try:
                            pending.append(await receive.receive())
                        except anyio.EndOfStream:
                            closed = True
                            break
                await anyio.to_thread.run_sync(self._commit, pending)
                for item in pending:
                    if isinstance(item, _Sync):
                        item.done.set()
                pending = []
                if closed:
                    break
        await anyio.to_thread.run_sync(self._compact)

    def _commit(self, items: list[Any]) -> None:
        columns: dict[str, list[Any]] = {name: [] for name in EVENT_SCHEMA.names}
        blobs: dict[str, _Blob] = {}
        seq, prev_hash = self._last_seq, self._last_hash
        for item in items:
            if isinstance(item, _Blob):
                if item.sha256 not in self._known_blobs:
                    blobs.setdefault(item.sha256, item)
                continue
            if not isinstance(item, EventDraft):
                continue
            type_tag = item.payload.type  # type: ignore[attr-defined]
            payload = canonical_json(item.payload.model_dump(mode="json"))
            event_id = item.event_id or derived_event_id(
                self.run_id, item.episode_id, item.attempt, type_tag, item.step, payload
            )
            digest = hashlib.sha256(payload.encode("utf-8")).hexdigest()
            known = self._seen_ids.get(event_id)
            if known is not None:
                if known != digest:
                    raise DuplicateEventError(f"event_id {event_id} was appended again with a different payload")
                continue
            self._seen_ids[event_id] = digest
            seq += 1
            ts = item.ts or datetime.now(timezone.utc)
            row_prev, prev_hash = prev_hash, event_hash(
                prev_hash, seq=seq, event_id=event_id, ts=ts, run_id=self.run_id,
                episode_id=item.episode_id, attempt=item.attempt, type=type_tag, step=item.step, payload=payload,
            )
            for name, value in (
                ("seq", seq), ("event_id", event_id), ("ts", ts), ("run_id", self.run_id),
                ("episode_id", item.episode_id), ("attempt", item.attempt), ("type", type_tag),
                ("step", item.step), ("payload", payload), ("prev_hash", row_prev), ("hash", prev_hash),
            ):
                columns[name].append(value)
        if seq == self._last_seq and not blobs:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        # Blobs land before the events that cite them.
        if blobs:
            rows = list(blobs.values())
            table = pa.Table.from_pydict(
                {
                    "sha256": [b.sha256 for b in rows],
                    "media_type": [b.media_type for b in rows],
                    "size": [len(b.content) for b in rows],
                    "content": [b.content for b in rows],
                },
                schema=BLOB_SCHEMA,
            )
            self._blob_files += 1
            self._write_atomically(table, blob_segment_name(self._blob_files, os.getpid()))
            self._known_blobs.update(blobs)
        if seq > self._last_seq:
            table = pa.Table.from_pydict(columns, schema=EVENT_SCHEMA)
            self._write_atomically(table, segment_name(self._last_seq + 1, seq))
            self.committed_events += seq - self._last_seq
            self._last_seq, self._last_hash = seq, prev_hash

    def _write_atomically(self, table: pa.Table, name: str) -> None:
        final = self.folder / name
        pending = self.folder / f".{name}.tmp"
        pq.write_table(table, pending, compression="zstd")
        os.replace(pending, final)

    def _compact(self) -> None:
        """Merge many small segments into one so readers open few files. A compacted events
        segment covers the small ones' seq range, so a reader never counts both; blobs are
        read distinct by sha256."""
        events = list_segments(self.folder)
        if len(events) >= COMPACT_AFTER_SEGMENTS:
            table = pa.concat_tables([pq.read_table(s.path, schema=EVENT_SCHEMA) for s in events])
            self._write_atomically(table, segment_name(events[0].first_seq, events[-1].last_seq))
            for segment in events:
                segment.path.unlink(missing_ok=True)
        blobs = list_blob_files(self.folder)
        if len(blobs) >= COMPACT_AFTER_SEGMENTS:
            table = pa.concat_tables([pq.read_table(path, schema=BLOB_SCHEMA) for path in blobs])
            self._blob_files += 1
            self._write_atomically(table, blob_segment_name(self._blob_files, os.getpid()))
            for path in blobs:
                path.unlink(missing_ok=True)
