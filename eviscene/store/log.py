"""`EventLog`: the one object the CLI and Python users hold to read, query and append."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio
import duckdb
import pyarrow as pa

from eviscene.errors import EvisceneError
from eviscene.store.layout import resolve_log_path
from eviscene.store.rows import EventRow
from eviscene.store.merge import MergeReport, merge_log
from eviscene.store.seal import seal_runs
from eviscene.store.snapshot import open_snapshot
from eviscene.store.verify import VerifyReport, verify_log
from eviscene.store.writer import EventDraft, RunWriter
from eviscene.views import apply_views, views_needed_by

_SNAPSHOT_RETRIES = 3
MATERIALIZE_MEMORY_LIMIT = os.environ.get("EVISCENE_MATERIALIZE_MEMORY", "2GB")


class EventLog:
    """A log on disk: the DuckDB archive plus its live runs.

    >>> log = EventLog("eviscene.duckdb")
    >>> log.sql("SELECT type, count(*) FROM events GROUP BY type").to_pandas()
    """

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = resolve_log_path(path)

    def __repr__(self) -> str:
        return f"EventLog({str(self.path)!r})"

    def connect(
        self, *, views: bool = True, materialize: bool = False, for_query: str | None = None
    ) -> duckdb.DuckDBPyConnection:
        """A read-only snapshot connection with `events`, `blobs` and every view (computed
        once into temporary tables with `materialize`, for exports; only those `for_query`
        reads, when given)."""
        con = open_snapshot(self.path)
        if materialize:
            # Temporary tables of a large log spill to disk rather than grow the process.
            con.execute(f"SET memory_limit = '{MATERIALIZE_MEMORY_LIMIT}'")
            con.execute(f"SET temp_directory = '{tempfile.gettempdir()}/eviscene-duckdb-spill'")
        if views:
            apply_views(con, materialize=materialize, only=views_needed_by(for_query) if for_query else None)
        return con

    def sql(self, query: str, params: list[Any] | dict[str, Any] | None = None) -> pa.Table:
        """Run one query over a fresh snapshot and return an Arrow table (`?` parameters
        from a list, `$name` parameters from a dict)."""
        for attempt in range(_SNAPSHOT_RETRIES):
            con = self.connect(for_query=query)
            try:
                return con.sql(query, params=params).to_arrow_table()
            except duckdb.IOException as exc:
                # A live segment was compacted or sealed between listing and reading it.
                if attempt == _SNAPSHOT_RETRIES - 1 or "No files found" not in str(exc) and "No such file" not in str(exc):
                    raise
            finally:
                con.close()
        raise AssertionError("unreachable")

    def view(self, name: str) -> pa.Table:
        return self.sql(f'SELECT * FROM "{name}"')

    def events(self, run_id: str, episode_id: str | None = None) -> list[EventRow]:
        """One run's events (optionally one episode's) in order, as typed rows."""
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


def open_log(path: str | os.PathLike[str] | None = None) -> EventLog:
    return EventLog(path)
