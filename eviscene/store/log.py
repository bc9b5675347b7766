"""`EventStore`: a log on disk to read, query and append, without the SQL views (the store
imports nothing above it; `eviscene.log.EventLog` adds the views)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import anyio
import duckdb
import pyarrow as pa

from eviscene.errors import EvisceneError, LogNotFoundError, QueryRefusedError
from eviscene.store.layout import live_root, resolve_log_path
from eviscene.store.merge import MergeReport, merge_log
from eviscene.store.seal import seal_runs
from eviscene.store.snapshot import Sandbox, check_query, open_snapshot
from eviscene.store.verify import VerifyReport, verify_log
from eviscene.store.writer import EventDraft, RunWriter

if TYPE_CHECKING:
    from eviscene.store.rows import EventRow  # sqlmodel: loaded only by `events()`, not by every query

_SNAPSHOT_RETRIES = 3
MATERIALIZE_MEMORY_LIMIT = os.environ.get("EVISCENE_MATERIALIZE_MEMORY", "2GB")
BATCH_ROWS = 65_536


@dataclass
class QueryResult:
    """A query's rows as a stream of Arrow record batches, and which columns hold JSON."""

    batches: pa.RecordBatchReader
    json_columns: frozenset[str]

    @property
    def schema(self) -> pa.Schema:
        return self.batches.schema


class EventStore:
    """A log on disk: the DuckDB archive plus its live runs, read through `events` and `blobs`.

    >>> store = EventStore("eviscene.duckdb")
    >>> store.sql("SELECT type, count(*) FROM events GROUP BY type").to_pandas()
    """

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = resolve_log_path(path)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"

    def exists(self) -> bool:
        """An archive file, a live folder (a log whose first run is still writing has only
        that), or a folder written by `log export-parquet`."""
        return self.path.exists() or live_root(self.path).is_dir()

    def require(self) -> Self:
        """This log, or `LogNotFoundError` when nothing is there: a read never answers from
        (or creates) an empty log because a path was mistyped."""
        if not self.exists():
            raise LogNotFoundError(f"no log at {self.path}")
        return self

    def connect(
        self,
        *,
        views: bool = True,
        materialize: bool = False,
        for_query: str | None = None,
        read: Sequence[str | os.PathLike[str]] = (),
    ) -> duckdb.DuckDBPyConnection:
        """A read-only snapshot connection with `events`, `blobs` and (on an `EventLog`) every
        view (computed once into temporary tables with `materialize`, for exports; only those
        `for_query` reads, when given). It reads the log's files and the files or folders in
        `read`, nothing else, and writes no file (large intermediate results spill to a
        temporary folder)."""
        readable = tuple(_readable(path) for path in read)
        # Temporary tables of a large log spill to disk rather than grow the process.
        sandbox = Sandbox(readable=readable, memory_limit=MATERIALIZE_MEMORY_LIMIT if materialize else None)
        con = open_snapshot(self.path, sandbox=sandbox)
        if views:
            self.add_views(con, materialize=materialize, for_query=for_query)
        return con

    def add_views(self, con: duckdb.DuckDBPyConnection, *, materialize: bool, for_query: str | None) -> None:
        """The views over `events` and `blobs`: none in the store itself (`EventLog` adds the SQL views)."""

    @contextmanager
    def query(
        self,
        query: str,
        params: list[Any] | dict[str, Any] | None = None,
        *,
        read: Sequence[str | os.PathLike[str]] = (),
        batch_rows: int = BATCH_ROWS,
    ) -> Iterator[QueryResult]:
        """Run one SELECT over a fresh sandboxed snapshot and stream its rows in Arrow
        batches (memory stays bounded whatever the result's size):

        >>> with log.query("SELECT * FROM events") as result:
        ...     for batch in result.batches: ...
        """
        for attempt in range(_SNAPSHOT_RETRIES):
            con = self.connect(for_query=query, read=read)
            try:
                check_query(con, query)
                relation = con.sql(query, params=params)
                json_columns = frozenset(
                    name for name, kind in zip(relation.columns, relation.types) if str(kind) == "JSON"
                )
                batches = relation.to_arrow_reader(batch_rows)
            except duckdb.IOException as exc:
                con.close()
                # A live segment was compacted or sealed between listing and reading it.
                if attempt == _SNAPSHOT_RETRIES - 1 or "No files found" not in str(exc) and "No such file" not in str(exc):
                    raise
                continue
            except BaseException:
                con.close()
                raise
            try:
                yield QueryResult(batches, json_columns)
            finally:
                con.close()
            return

    def sql(
        self,
        query: str,
        params: list[Any] | dict[str, Any] | None = None,
        *,
        read: Sequence[str | os.PathLike[str]] = (),
    ) -> pa.Table:
        """Run one SELECT over a fresh sandboxed snapshot and return an Arrow table (`?`
        parameters from a list, `$name` parameters from a dict; `read` names files or
        folders of your own the query may read)."""
        with self.query(query, params, read=read) as result:
            return result.batches.read_all()

    def view(self, name: str) -> pa.Table:
        return self.sql(f'SELECT * FROM "{name}"')

    def events(self, run_id: str, episode_id: str | None = None) -> list[EventRow]:
        """One run's events (optionally one episode's) in order, as typed rows."""
        from eviscene.store.rows import EventRow

        table = self.sql(
            "SELECT seq, event_id, ts, run_id, episode_id, attempt, type, step, payload::VARCHAR AS payload, prev_hash, hash "
            "FROM events WHERE run_id = ? AND (? IS NULL OR episode_id = ?) ORDER BY seq",
            [run_id, episode_id, episode_id],
        )
        return [EventRow.model_validate({**row, "payload": json.loads(row["payload"])}) for row in table.to_pylist()]

    def writer(self, run_id: str, **options: Any) -> RunWriter:
        """The single writer of one run: `async with log.writer(run_id) as w: await w.emit(...)`."""
        self._writable()
        return RunWriter(self.path, run_id, **options)

    def append(self, run_id: str, drafts: Iterable[EventDraft]) -> int:
        """Append events to a run from synchronous code; returns how many were new."""

        async def _append() -> int:
            async with self.writer(run_id) as writer:
                for draft in drafts:
                    await writer.emit(draft)
            return writer.committed_events

        return anyio.run(_append)

    def verify(self) -> VerifyReport:
        return verify_log(self.path)

    def merge(self, source: str | os.PathLike[str]) -> MergeReport:
        """Fold another log (a shard, another machine's runs) into this one's archive."""
        self._writable()
        return merge_log(self.path, resolve_log_path(source))

    def seal(self, run_ids: list[str] | None = None) -> list[str]:
        """Move finished runs' live segments into the DuckDB archive."""
        self._writable()
        return seal_runs(self.path, run_ids)

    def _writable(self) -> None:
        if self.path.is_dir():
            raise EvisceneError(f"{self.path} is a folder (a `log export-parquet` export is read only); name a .duckdb log")


def _readable(path: str | os.PathLike[str]) -> Path:
    resolved = Path(path).expanduser().resolve()
    if not resolved.exists():
        raise QueryRefusedError(f"nothing to read at {path}: no such file or folder")
    return resolved
