"""`EventStore`: a log on disk to read, query and append, without the SQL views (the store
imports nothing above it; `eviscene.log.EventLog` adds the views)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar

import duckdb

from eviscene.errors import EvisceneError, LogNotFoundError, QueryRefusedError
from eviscene.rules.blocking import run_blocking
from eviscene.rules.paths import PathEscapeError, resolve_inside
from eviscene.rules.sizes import byte_size
from eviscene.store.faults import checkpoint
from eviscene.store.layout import check_run_id, live_root, resolve_log_path
from eviscene.store.snapshot import (
    SNAPSHOT_RETRIES, Sandbox, check_log_file, check_query, explain_error, open_snapshot, read_a_snapshot, segment_moved,
)

if TYPE_CHECKING:
    # Loaded by the methods that need them: a read loads neither pyarrow (unless it asks for
    # Arrow) nor the writer, merge and verify (pydantic event models).
    import pyarrow as pa
    from duckdb.sqltypes import DuckDBPyType

    from eviscene.store.heads import Heads
    from eviscene.store.merge import MergeReport
    from eviscene.store.rows import EventRow  # sqlmodel: loaded only by `events()`, not by every query
    from eviscene.store.verify import VerifyReport
    from eviscene.store.writer import EventDraft, RunWriter

# DuckDB's share of a materializing process (the rest is Python's): at 2GB a 100k-episode
# export peaked at 2.7 GiB; beyond this, temporary tables spill to disk.
T = TypeVar("T")
MATERIALIZE_MEMORY_LIMIT = os.environ.get("EVISCENE_MATERIALIZE_MEMORY", "1GB")
BATCH_ROWS = 65_536


@dataclass
class QueryResult:
    """A query's rows, streamed: as Arrow record batches (`batches`), or with
    `query(as_rows=True)` as tuples of Python values (`rows`: no pyarrow, for text output)
    when every column's type allows (else `batches`); and which columns hold JSON."""

    columns: list[str]
    json_columns: frozenset[str]
    batches: pa.RecordBatchReader | None = None
    rows: Iterator[tuple[Any, ...]] | None = None

    @property
    def schema(self) -> pa.Schema:
        return self.batches.schema


class EventStore:
    """A log on disk: the DuckDB archive plus its live runs, read through `events` and `blobs`.
    Made from a path whether or not a log is there (a writer's first run creates it), so a
    read of a mistyped path answers as an empty log: `open_log` refuses a path holding none.

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
        read: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] = (),
        memory_limit: str | int | None = None,
        spill_limit: str | int | None = None,
    ) -> duckdb.DuckDBPyConnection:
        """A read-only snapshot connection with `events`, `blobs` and (on an `EventLog`) every
        view (computed once into temporary tables with `materialize`, for exports; only those
        `for_query` reads, when given). It reads the log's files and the files or folders in
        `read`, nothing else, and writes no file (large intermediate results spill to a
        temporary folder). `memory_limit` and `spill_limit` bound DuckDB's memory and that
        folder (`"4GB"`, `"2GiB"`, or bytes: `rules.sizes.byte_size`)."""
        if isinstance(read, (str, os.PathLike)):  # one path, not its characters
            read = [read]
        readable = tuple(_readable(path) for path in read)
        # Temporary tables of a large log spill to disk rather than grow the process.
        if memory_limit is None and materialize:
            memory = _bytes("EVISCENE_MATERIALIZE_MEMORY", MATERIALIZE_MEMORY_LIMIT)
        else:
            memory = _bytes("memory_limit", memory_limit)
        sandbox = Sandbox(readable=readable, memory_limit=memory, spill_limit=_bytes("spill_limit", spill_limit))
        con = open_snapshot(self.path, sandbox=sandbox)
        if views:
            self.add_views(con, materialize=materialize, for_query=for_query)
        return con

    def read(
        self,
        reader: Callable[[duckdb.DuckDBPyConnection], T],
        *,
        for_query: str | None = None,
        materialize: bool = False,
        views: bool = True,
    ) -> T:
        """Run `reader` over one fresh snapshot with the views `for_query` names (with
        `materialize`, each computed once into a temporary table: many questions of one
        snapshot bind and compute the views once), again over a newer snapshot if a live
        segment moved under it."""
        return read_a_snapshot(lambda: self.connect(views=views, materialize=materialize, for_query=for_query), reader)

    def relation_names(self) -> tuple[str, ...]:
        """What a query may read by name: `events` and `blobs` (an `EventLog` adds its views)."""
        return ("events", "blobs")

    def add_views(self, con: duckdb.DuckDBPyConnection, *, materialize: bool, for_query: str | None) -> None:
        """The views over `events` and `blobs`: none in the store itself (`EventLog` adds the SQL views)."""

    def inline_views(self, con: duckdb.DuckDBPyConnection, query: str) -> str:
        """`query` reading the views it names inline, on a connection without them: the
        store has none (`EventLog` inlines the SQL views)."""
        return query

    @contextmanager
    def query(
        self,
        query: str,
        params: list[Any] | dict[str, Any] | None = None,
        *,
        read: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] = (),
        batch_rows: int = BATCH_ROWS,
        as_rows: bool = False,
        inline_views: bool = False,
        memory_limit: str | int | None = None,
        spill_limit: str | int | None = None,
    ) -> Iterator[QueryResult]:
        """Run one SELECT over a fresh sandboxed snapshot and stream its rows in Arrow
        batches, or with `as_rows` in tuples (memory stays bounded whatever the result's size);
        with `inline_views`, the views it reads are expanded into it rather than created
        (one binding instead of two: for a query of ours that does not start with WITH);
        `memory_limit` and `spill_limit` as `connect` takes them:

        >>> with log.query("SELECT * FROM events") as result:
        ...     for batch in result.batches: ...
        """
        if not isinstance(batch_rows, int) or batch_rows < 1:
            raise ValueError(f"batch_rows must be a positive number of rows, got {batch_rows!r}")
        for attempt in range(SNAPSHOT_RETRIES):
            con = None
            try:
                con = self.connect(for_query=query, read=read, views=not inline_views, memory_limit=memory_limit, spill_limit=spill_limit)
                checkpoint("query.connected")
                check_query(con, query)
                sql = self.inline_views(con, query) if inline_views else query
                if as_rows:
                    # DB-API rows stream from the connection; no relation, so the query binds once.
                    con.execute(sql, params)
                    described = [(column[0], column[1]) for column in con.description]
                if as_rows and all(_same_python_values(kind) for _, kind in described):
                    names = _unique_names([name for name, _ in described])
                    result = QueryResult(names, _json_columns(zip(names, (kind for _, kind in described))),
                                         rows=_fetched(con, batch_rows))
                else:
                    if as_rows:
                        con.abort()  # the rows are read as Arrow instead
                    relation = con.sql(sql, params=params)
                    names = _unique_names(relation.columns)
                    if as_rows:
                        relation = _with_text_for_arrow(relation)
                    batches = relation.to_arrow_reader(batch_rows)
                    if names != relation.columns:
                        batches = _renamed(batches, names)
                    result = QueryResult(names, _json_columns(zip(names, relation.types)), batches=batches)
            except BaseException as exc:
                if con is not None:
                    con.close()
                if isinstance(exc, duckdb.Error):
                    if segment_moved(exc) and attempt < SNAPSHOT_RETRIES - 1:
                        continue
                    explained = explain_error(exc, self.relation_names())
                    if explained is not None:
                        raise explained from None
                raise
            try:
                yield result
            finally:
                con.close()
            return

    def sql(
        self,
        query: str,
        params: list[Any] | dict[str, Any] | None = None,
        *,
        read: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] = (),
        memory_limit: str | int | None = None,
        spill_limit: str | int | None = None,
    ) -> pa.Table:
        """Run one SELECT over a fresh sandboxed snapshot and return an Arrow table (`?`
        parameters from a list, `$name` parameters from a dict; `read` names files or
        folders of your own the query may read; `memory_limit` and `spill_limit` bound
        DuckDB's memory and spill folder: `"4GB"`)."""
        with self.query(query, params, read=read, memory_limit=memory_limit, spill_limit=spill_limit) as result:
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
        from eviscene.store.writer import RunWriter

        self.require_writable()
        return RunWriter(self.path, run_id, **options)

    def append(self, run_id: str, drafts: Iterable[EventDraft]) -> int:
        """Append events to a run from synchronous code (a notebook cell too); returns how many
        were new. A run that has finished (`eval run`'s, an import's) takes no more: its
        chain would no longer end at its run.finished, and `log verify` would call it unfinished."""
        if self.exists() and self.sql(
            "SELECT count(*) AS n FROM events WHERE run_id = ? AND type = 'run.finished'", [check_run_id(run_id)]
        )["n"][0].as_py():
            raise EvisceneError(f"run {run_id!r} has finished, so it takes no more events; append to a run of your own "
                                "(`log verify` lists a run without run.finished as unfinished)")

        async def _append() -> int:
            async with self.writer(run_id) as writer:
                for draft in drafts:
                    await writer.emit(draft)
            return writer.committed_events

        return run_blocking(_append)

    def verify(self, heads: Heads | None = None) -> VerifyReport:
        """Verify every run (`verify_log`), and that each run holds its recorded head, given
        `heads` (`eviscene.store.heads.read_heads` of an earlier report's `heads`)."""
        from eviscene.store.verify import verify_log

        return verify_log(self.path, heads)

    def merge(self, source: str | os.PathLike[str]) -> MergeReport:
        """Fold another log (a shard, another machine's runs) into this one's archive."""
        return self.merge_all([source])[0]

    def merge_all(self, sources: Sequence[str | os.PathLike[str]]) -> list[MergeReport]:
        """Fold other logs in turn, every one checked before any is taken in (`merge_logs`)."""
        from eviscene.store.merge import merge_logs

        self.require_writable()
        return merge_logs(self.path, [resolve_log_path(source) for source in sources])

    def seal(self, run_ids: list[str] | None = None) -> list[str]:
        """Move finished runs' live segments into the DuckDB archive."""
        from eviscene.store.seal import seal_runs

        self.require_writable()
        return seal_runs(self.path, run_ids)

    def require_writable(self) -> None:
        """A log that can take events: not a read-only `log export-parquet` folder, nor a file
        other than a log's archive (a run checks this before it plans or claims anything)."""
        if self.path.is_dir():
            raise EvisceneError(f"{self.path} is a folder (a `log export-parquet` export is read only); name a .duckdb log")
        self.check_file()

    def check_file(self) -> None:
        """`NotALogError` when a file is at the log's path and it is not a log's archive."""
        check_log_file(self.path)


def _bytes(name: str, value: str | int | None) -> int | None:
    """A memory or disk size given as `name`, in bytes; one that is no size is refused by name."""
    if value is None:
        return None
    try:
        return byte_size(value)
    except ValueError as exc:
        raise EvisceneError(f"{name}: {exc}") from None


def _unique_names(names: list[str]) -> list[str]:
    """`names` with a repeated one renamed as DuckDB names a subquery's columns (`a, a, A` ->
    `a, a_1, A_2`: case-blind, in order): a result's rows are read by column name (JSON keys,
    Parquet fields), where two columns of one name would show one's value twice."""
    taken: set[str] = set()
    unique = []
    for name in names:
        renamed, number = name, 0
        while renamed.lower() in taken:
            number += 1
            renamed = f"{name}_{number}"
        taken.add(renamed.lower())
        unique.append(renamed)
    return unique


def _renamed(batches: pa.RecordBatchReader, names: list[str]) -> pa.RecordBatchReader:
    import pyarrow as pa

    schema = pa.schema([field.with_name(name) for field, name in zip(batches.schema, names)])
    return pa.RecordBatchReader.from_batches(schema, (pa.RecordBatch.from_arrays(b.columns, schema=schema) for b in batches))


def _json_columns(described: Iterable[tuple[str, Any]]) -> frozenset[str]:
    return frozenset(name for name, kind in described if str(kind) == "JSON")


# Types whose values DuckDB hands to Python as Arrow's `to_pylist()` does (UUIDs as UUID, not
# text), or as text read as Arrow (`_with_text_for_arrow`): rows of these print the same either
# way. Maps (dicts, not key-value pairs), intervals, nanosecond timestamps, UNION and the rest
# differ: such results come as Arrow.
_PLAIN_TYPES = frozenset({
    "boolean", "tinyint", "smallint", "integer", "bigint", "utinyint", "usmallint", "uinteger", "ubigint", "hugeint",
    "uhugeint", "float", "double", "decimal", "varchar", "blob", "date", "time", "timestamp", "timestamp_ms",
    "timestamp_s", "timestamp with time zone", "uuid", "enum", "null", "bit", "time with time zone",
})
# Types Arrow holds wrong for text output: a BIT as its stored bytes, a TIMETZ without its offset.
_TEXT_FOR_ARROW = frozenset({"bit", "time with time zone"})


def _with_text_for_arrow(relation: duckdb.DuckDBPyRelation) -> duckdb.DuckDBPyRelation:
    """`relation` with its BIT and TIMETZ columns as DuckDB's text (`101`, `12:00:00+05`), as
    DuckDB's rows hand them to Python (`cli.output` writes a TIMETZ so); nested in a list or a
    struct they stay Arrow's."""
    kinds = [kind.id for kind in relation.types]
    if not _TEXT_FOR_ARROW.intersection(kinds):
        return relation
    return relation.project(", ".join(f"CAST(#{n} AS VARCHAR)" if kind in _TEXT_FOR_ARROW else f"#{n}" for n, kind in enumerate(kinds, 1)))


def _same_python_values(kind: DuckDBPyType) -> bool:
    if kind.id in ("list", "array"):
        return _same_python_values(dict(kind.children)["child"])
    if kind.id == "struct":
        return all(_same_python_values(child) for _, child in kind.children)
    return kind.id in _PLAIN_TYPES


def _fetched(con: duckdb.DuckDBPyConnection, batch_rows: int) -> Iterator[tuple[Any, ...]]:
    while batch := con.fetchmany(batch_rows):
        yield from batch


def _readable(path: str | os.PathLike[str]) -> Path:
    resolved = Path(path).expanduser().resolve()
    if not resolved.exists():
        raise QueryRefusedError(f"nothing to read at {path}: no such file or folder")
    if resolved.is_dir():
        _refuse_links_out(path, resolved)
    return resolved


def _refuse_links_out(named: str | os.PathLike[str], folder: Path) -> None:
    """A folder given to read is read with nothing outside it: DuckDB refuses a read through a
    link that leads out, but a glob (`glob('DIR/*/*')`) still listed the names behind one."""
    for parent, folders, files in os.walk(folder):
        folders.sort()
        for name in sorted(folders + files):
            link = Path(parent, name)
            if link.is_symlink():
                try:
                    resolve_inside(folder, str(link.relative_to(folder)), root_name="folder")
                except PathEscapeError as exc:
                    raise QueryRefusedError(
                        f"cannot read {named}: {exc} (a link leading out); give what it points to its own --read "
                        "(read= in Python), or move the link out"
                    ) from None
