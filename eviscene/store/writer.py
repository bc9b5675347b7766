"""The single writer of one run: producers hand events to a bounded anyio stream, one task
commits them in Arrow batches.

Each batch becomes one immutable Parquet segment in the run's live folder, committed by its
line in the folder's segment manifest (`manifest.py`: file and folder fsynced first). The
writer assigns the gapless `seq`, extends the hash chain, drops re-appended events (same
`event_id`) and stamps `run.finished` with the chain head it closes. When the run ends, its
segments are sealed into the DuckDB archive (`seal.py`).
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from pydantic import BaseModel

from eviscene.errors import DuplicateEventError, EvisceneError
from eviscene.events import RunFinished
from eviscene.redaction import KnownSecrets
from eviscene.rules.timestamps import now_micros
from eviscene.store.chain import GENESIS_HASH, content_digest, derived_event_id, event_hash, unchainable
from eviscene.store.columns import binary_column, int_column, string_column
from eviscene.store.faults import checkpoint
from eviscene.store.layout import blob_segment_name, run_folder, segment_name
from eviscene.store.locks import RunLock
from eviscene.store.manifest import ManifestEntry, append_lines, fsync_folder, recover_folder, write_segment
from eviscene.store.schema import BLOB_SCHEMA, EVENT_SCHEMA
from eviscene.store.snapshot import held_by_other_runs, run_state

COMPACT_AFTER_SEGMENTS = 32
_BATCH_POLL_SECONDS = 0.02


def _drain(receive: MemoryObjectReceiveStream[Any], pending: list[Any], limit: int) -> bool:
    """Move queued items into `pending` without waiting; True once the stream has ended."""
    while len(pending) < limit and type(pending[-1]) is not _Sync:
        try:
            pending.append(receive.receive_nowait())
        except anyio.WouldBlock:
            return False
        except anyio.EndOfStream:
            return True
    return False


@dataclass(slots=True)
class EventDraft:
    """An event before the writer numbers and chains it."""

    payload: BaseModel
    episode_id: str | None = None
    attempt: int | None = None
    step: int | None = None
    event_id: str | None = None
    ts: int | None = None  # UTC epoch microseconds; set when emitted if not given

    def __post_init__(self) -> None:
        if unchainable(self.episode_id):
            raise EvisceneError(f"episode id {self.episode_id!r} holds U+001E or U+001F, which the log's hash chain keeps to itself")


@dataclass
class _Blob:
    sha256: str
    media_type: str
    content: bytes


@dataclass
class _Sync:
    done: anyio.Event = field(default_factory=anyio.Event)


class RunWriter:
    """Writes one run's events. Use as `async with RunWriter(log_path, run_id) as writer:`.
    `lock`: the run's lock, held already (a new run's claim on its name); the writer releases
    it as it ends."""

    def __init__(
        self,
        log_path: str | os.PathLike[str],
        run_id: str,
        *,
        batch_rows: int = 10_000,
        flush_seconds: float = 1.0,
        queue_size: int = 32_768,
        lock: RunLock | None = None,
    ):
        self.log_path = Path(log_path)
        self.run_id = run_id
        self.folder = run_folder(self.log_path, run_id)
        self.batch_rows = batch_rows
        self.flush_seconds = flush_seconds
        self.queue_size = queue_size
        self._lock = lock or RunLock(self.folder / "writer.lock", run_id)
        self._send: MemoryObjectSendStream[Any] | None = None
        self._receive: MemoryObjectReceiveStream[Any] | None = None
        self._task_group: Any = None
        self._seen_ids: dict[str, str] = {}
        self._known_blobs: set[str] = set()
        self._last_seq = 0
        self._last_hash = GENESIS_HASH
        self.committed_events = 0
        self.commit_seconds = 0.0  # time spent numbering and hashing batches, and writing them (in a thread)
        self._blob_files = 0
        self._committed: list[ManifestEntry] = []  # this session's segments, for compaction
        self._writer_id = uuid.uuid4().hex[:16]
        # Its own worker thread: opening and committing never wait for a token of anyio's
        # shared pool (40 threads), which hundreds of episodes' tool calls can hold.
        self._write_thread: anyio.CapacityLimiter | None = None

    async def __aenter__(self) -> "RunWriter":
        self._write_thread = anyio.CapacityLimiter(1)
        self._lock.acquire()
        self._send, self._receive = anyio.create_memory_object_stream(self.queue_size)
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        # One prepared batch may wait while the one before it is written, no more: memory stays bounded.
        prepared_send, prepared_receive = anyio.create_memory_object_stream[tuple[list[Any], list[_Sync]]](1)
        self._task_group.start_soon(self._run, prepared_send)
        self._task_group.start_soon(self._commit, prepared_receive)
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        assert self._send is not None
        await self._send.aclose()
        # An error in the block (not a cancellation) must not cancel the commit task: what was
        # queued before it, e.g. the events of episodes that finished, is committed first.
        failed = exc_info[1]
        drain = failed is None or isinstance(failed, Exception)
        try:
            return await self._task_group.__aexit__(*((None, None, None) if drain else exc_info))
        except BaseExceptionGroup as group:
            # Surface the writer's own error (e.g. a conflicting event_id) rather than the group.
            errors = group.exceptions
            if len(errors) == 1 and isinstance(errors[0], (EvisceneError, OSError)):
                raise errors[0] from None
            raise
        finally:
            self._lock.release()

    async def emit(self, draft: EventDraft) -> None:
        """Queue an event; waits only while the queue is full (backpressure)."""
        assert self._send is not None, "use the writer inside `async with`"
        if draft.ts is None:
            draft.ts = now_micros()
        try:
            self._send.send_nowait(draft)
        except anyio.WouldBlock:
            await self._send.send(draft)

    async def put_blob(self, content: bytes, media_type: str) -> str:
        """Store content once, keyed by its sha256; committed with the next batch."""
        digest = hashlib.sha256(content).hexdigest()
        assert self._send is not None
        try:
            self._send.send_nowait(_Blob(digest, media_type, content))  # no trip through the event loop per blob
        except anyio.WouldBlock:
            await self._send.send(_Blob(digest, media_type, content))
        return digest

    async def sync(self) -> None:
        """Return once everything queued before this call is committed."""
        marker = _Sync()
        assert self._send is not None
        await self._send.send(marker)
        await marker.done.wait()

    async def _run(self, prepared: MemoryObjectSendStream[tuple[list[Any], list[_Sync]]]) -> None:
        """Take what is queued, prepare it as one batch; wait a moment for a fuller batch
        unless one is full, a sync() asks for it, or the stream closed. Prepared batches go
        to `_commit` in order, so the next batch is numbered and hashed while the last one's
        files are written."""
        assert self._receive is not None
        receive = self._receive
        async with receive, prepared:
            await self._read_state()
            while True:
                try:
                    pending = [await receive.receive()]
                except anyio.EndOfStream:
                    break
                batch_started = anyio.current_time()
                closed = False
                while True:
                    closed = _drain(receive, pending, self.batch_rows)
                    if (
                        closed
                        or len(pending) >= self.batch_rows
                        or type(pending[-1]) is _Sync
                        or anyio.current_time() - batch_started >= self.flush_seconds
                    ):
                        break
                    await anyio.sleep(_BATCH_POLL_SECONDS)
                await self._refuse_ids_of_other_runs(pending)
                # Serializing and hashing stay on this thread (a worker thread would only fight
                # the producers for the GIL); the file write releases it, in `_commit`.
                clock = time.perf_counter()
                files = self._prepare(pending)
                self.commit_seconds += time.perf_counter() - clock
                await prepared.send((files, pending[-1:] if type(pending[-1]) is _Sync else []))  # a sync ends its batch
                if closed:
                    break

    async def _read_state(self) -> None:
        """Where the run's chain ends and what is stored, read while the first events queue:
        a fresh DuckDB connection costs ~20 ms, which the run's first model calls need not
        wait for. Nothing is numbered or written before it; an error here (a broken log)
        cancels the block and leaves the writer with it."""
        await anyio.to_thread.run_sync(recover_folder, self.folder, limiter=self._write_thread)
        state = await anyio.to_thread.run_sync(run_state, self.log_path, self.run_id, limiter=self._write_thread)
        self._last_seq, self._last_hash = state.last_seq, state.last_hash
        self._seen_ids = dict(state.event_ids)
        self._known_blobs = set(state.blob_hashes)

    async def _refuse_ids_of_other_runs(self, items: list[Any]) -> None:
        """A producer-named event id another run holds is refused: the archive keys events by
        id across runs, so the run could never be sealed (and `log verify` would name the other
        run). Derived ids hash the run id in; only named ones are looked up."""
        named = sorted({d.event_id for d in items if type(d) is EventDraft and d.event_id and d.event_id not in self._seen_ids})
        if not named:
            return
        held = await anyio.to_thread.run_sync(held_by_other_runs, self.log_path, self.run_id, named, limiter=self._write_thread)
        if held:
            event_id, other_run, seq = held[0]
            raise DuplicateEventError(
                f"event_id {event_id} is run {other_run}'s (seq {seq}); an event id names one event of the whole log, "
                f"not appended to run {self.run_id}"
            )

    async def _commit(self, prepared: MemoryObjectReceiveStream[tuple[list[Any], list[_Sync]]]) -> None:
        """Write each prepared batch in a worker thread, in order; a sync() returns once its batch is durable."""
        async with prepared:
            async for files, syncs in prepared:
                clock = time.perf_counter()
                await anyio.to_thread.run_sync(self._write_files, files, limiter=self._write_thread)
                self.commit_seconds += time.perf_counter() - clock
                for marker in syncs:
                    marker.done.set()
        await anyio.to_thread.run_sync(self._compact, limiter=self._write_thread)

    def _prepare(self, items: list[Any]) -> list[tuple[pa.Table, ManifestEntry]]:
        """The batch's segment files, blobs first so they land before the events citing them."""
        files = []
        blobs = {b.sha256: b for b in items if type(b) is _Blob and b.sha256 not in self._known_blobs}
        if blobs:
            rows = list(blobs.values())
            table = pa.Table.from_arrays(
                [
                    string_column([b.sha256 for b in rows]),
                    string_column([b.media_type for b in rows]),
                    int_column([len(b.content) for b in rows], pa.int64()),
                    binary_column([b.content for b in rows]),
                ],
                schema=BLOB_SCHEMA,
            )
            self._blob_files += 1
            files.append((table, ManifestEntry(blob_segment_name(self._writer_id, self._blob_files), len(rows), "")))
            self._known_blobs.update(blobs)
        drafts = [item for item in items if type(item) is EventDraft]
        if drafts:
            events = self._event_segment(drafts)
            if events is not None:
                files.append(events)
        return files

    def _write_files(self, files: list[tuple[pa.Table, ManifestEntry]]) -> None:
        """Commit one batch: its files durable under their names, then their manifest lines."""
        if not files:
            return
        entries = [replace(entry, sha256=write_segment(self.folder, entry.file, table)) for table, entry in files]
        fsync_folder(self.folder)
        checkpoint("writer.before_manifest")
        append_lines(self.folder, entries)
        self._committed += entries
        checkpoint("writer.committed")

    def _event_segment(self, drafts: list[EventDraft]) -> tuple[pa.Table, ManifestEntry] | None:
        """Number, identify and chain the drafts; the new ones become one segment."""
        event_ids, stamps, episode_ids, attempts, types, steps, payloads, prev_hashes, hashes = ([] for _ in range(9))
        seq, prev_hash, run_id, seen = self._last_seq, self._last_hash, self.run_id, self._seen_ids
        secrets = KnownSecrets()  # once a batch: a provider made after the writer opened is known too
        for draft in drafts:
            model = draft.payload
            type_tag = model.type  # type: ignore[attr-defined]
            if isinstance(model, RunFinished) and model.last_seq is None:
                # The run's end names the chain head it closes, so a cut-off tail shows.
                model = model.model_copy(update={"last_seq": seq, "last_hash": prev_hash})
            # pydantic's serializer is deterministic (field order) and far faster than json.dumps;
            # called directly it gives the UTF-8 bytes `model_dump_json()` would decode, which
            # the digest and the Arrow column take as they are. A known secret the provider
            # boundary could not catch (a tool's result quoting one, say) is masked before hashing.
            payload = secrets.mask_json(model.__pydantic_serializer__.to_json(model))
            content = content_digest(run_id, draft.episode_id, draft.attempt, type_tag, draft.step, payload)
            event_id = draft.event_id or derived_event_id(content)
            known = seen.get(event_id)
            if known is not None:
                if known != content:
                    raise DuplicateEventError(f"event_id {event_id} was appended again with different content")
                continue  # the same event again: stored once
            seen[event_id] = content
            seq += 1
            prev_hashes.append(prev_hash)
            prev_hash = event_hash(prev_hash, seq, event_id, draft.ts, content)  # type: ignore[arg-type]
            event_ids.append(event_id)
            stamps.append(draft.ts)
            episode_ids.append(draft.episode_id)
            attempts.append(draft.attempt)
            types.append(type_tag)
            steps.append(draft.step)
            payloads.append(payload)
            hashes.append(prev_hash)
        if not event_ids:
            return None
        first_seq = self._last_seq + 1
        table = pa.Table.from_arrays(
            [
                pa.Array.from_buffers(pa.int64(), len(event_ids), [None, pa.py_buffer(np.arange(first_seq, seq + 1, dtype=np.int64))]),
                string_column(event_ids),
                int_column(stamps, EVENT_SCHEMA.field("ts").type),
                string_column([run_id] * len(event_ids)),
                string_column(episode_ids),
                int_column(attempts, pa.int32()),
                string_column(types),
                int_column(steps, pa.int32()),
                string_column(payloads),
                string_column(prev_hashes),
                string_column(hashes),
            ],
            schema=EVENT_SCHEMA,
        )
        entry = ManifestEntry(
            segment_name(first_seq, seq), len(event_ids), "", first_seq=first_seq, last_seq=seq,
            first_prev_hash=prev_hashes[0], last_hash=prev_hash,
        )
        self.committed_events += seq - self._last_seq
        self._last_seq, self._last_hash = seq, prev_hash
        return table, entry

    def _compact(self) -> None:
        """Merge this session's many small segments into one so readers open few files. The
        compacted file's manifest line names the files it replaces: from that line on,
        readers read it instead of them, which are then deleted. Only this session's files:
        older ones may already be sealed (a seal killed before removing them)."""
        events = [e for e in self._committed if e.is_events]
        if len(events) >= COMPACT_AFTER_SEGMENTS:
            table = pa.concat_tables([pq.read_table(self.folder / e.file, schema=EVENT_SCHEMA) for e in events])
            first, last = events[0], events[-1]
            self._replace_with(table, ManifestEntry(
                segment_name(first.first_seq, last.last_seq), table.num_rows, "", first_seq=first.first_seq,  # type: ignore[arg-type]
                last_seq=last.last_seq, first_prev_hash=first.first_prev_hash, last_hash=last.last_hash,
                replaces=tuple(e.file for e in events),
            ))
        blobs = [e for e in self._committed if not e.is_events and not e.replaces]
        if len(blobs) >= COMPACT_AFTER_SEGMENTS:
            table = pa.concat_tables([pq.read_table(self.folder / e.file, schema=BLOB_SCHEMA) for e in blobs])
            self._blob_files += 1
            name = blob_segment_name(self._writer_id, self._blob_files)
            self._replace_with(table, ManifestEntry(name, table.num_rows, "", replaces=tuple(e.file for e in blobs)))

    def _replace_with(self, table: pa.Table, entry: ManifestEntry) -> None:
        self._write_files([(table, entry)])
        checkpoint("writer.compacted")
        for name in entry.replaces:
            (self.folder / name).unlink(missing_ok=True)
