"""From query results to export files, byte for byte the same on every run.

DuckDB hands JSON columns over as text, MAPs as key/value pairs, DECIMALs as Decimal and
timestamps as datetimes; `rows` converts only the columns whose Arrow type needs it (parsing
JSON with orjson), and `eviscene.rules.canonical`, the one serializer of every export, writes them.
Where DuckDB can write those very bytes itself (`eviscene.exports.canonical_sql`), a file is
its query's text column, copied out a batch at a time (`write_text_column`).
"""

from __future__ import annotations

import os
import queue
import threading
from contextlib import contextmanager
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator, TypeVar

import orjson
import pyarrow as pa

from eviscene.rules.canonical import canonical_json_indented, canonical_json_line
from eviscene.rules.jsonl import loads_exactly
from eviscene.rules.timestamps import format_epoch_micros, format_ts

# A JSONL file's lines go out a MiB at a time: with the default 8 KiB buffer, every line longer
# than that (an SFT row is ~13 kB) is its own write call, ~3x the time of the same bytes in MiB chunks.
WRITE_BUFFER = 1 << 20
# A JsonlFiles' writer thread holds at most this many of those MiB chunks not yet written.
PENDING_CHUNKS = 8
# Buffers per writev call (the kernel's IOV_MAX).
IOV_MAX = os.sysconf("SC_IOV_MAX")

Item = TypeVar("Item")


def plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, datetime):
        return format_ts(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(item, tuple) and len(item) == 2 for item in value):
            return {str(k): plain(v) for k, v in value}  # a DuckDB MAP
        return [plain(v) for v in value]
    if isinstance(value, tuple):
        return [plain(v) for v in value]
    return value


def _needs_plain(kind: pa.DataType) -> bool:
    if pa.types.is_decimal(kind) or pa.types.is_map(kind) or pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        return True
    if pa.types.is_struct(kind):
        return any(_needs_plain(kind.field(i).type) for i in range(kind.num_fields))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _needs_plain(kind.value_type)
    return False


def rows(table: pa.Table, json_columns: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Arrow rows as plain dicts, converted column by column; JSON-typed columns parsed."""
    parse = set(json_columns)
    columns = {name: _values(column, name in parse) for name, column in zip(table.column_names, table.columns)}
    names = list(columns)
    return [dict(zip(names, values)) for values in zip(*columns.values())] if names else []


def _values(column: pa.ChunkedArray, parse_json: bool) -> list[Any]:
    if pa.types.is_timestamp(column.type) and column.type.tz is not None:
        return _utc_strings(column)
    values = column.to_pylist()
    if parse_json:
        return [loads_exactly(v) if v is not None else None for v in values]
    if _needs_plain(column.type):
        return [plain(v) for v in values]
    return values


def _utc_strings(column: pa.ChunkedArray) -> list[str | None]:
    """A zoned timestamp column (DuckDB's TIMESTAMPTZ) as `format_ts` strings, by way of its
    epoch microseconds: pyarrow's own datetimes of a zoned column import pandas where it is
    installed, most of a second of a CLI command that reads one."""
    micros = column.cast(pa.timestamp("us", tz=column.type.tz)).cast(pa.int64()).to_pylist()
    return [format_epoch_micros(v) if v is not None else None for v in micros]


@contextmanager
def _replacing(path: Path, buffering: int = -1) -> Iterator[BinaryIO]:
    """A file opened for writing under a temporary name beside `path`, given `path`'s name once
    written whole: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pending = path.with_name(f".{path.name}.tmp")
    try:
        with pending.open("wb", buffering=buffering) as handle:
            yield handle
        os.replace(pending, path)
    except BaseException:  # a failed or interrupted write leaves no half file beside `path`
        pending.unlink(missing_ok=True)
        raise


def write_text(path: Path, text: str) -> None:
    """Write `text` (UTF-8) through a temporary name."""
    with _replacing(path) as handle:
        handle.write(text.encode("utf-8"))


def write_jsonl(path: Path, records: Iterable[dict[str, Any]]) -> int:
    """Stream records to a file, one canonical line each (through a temporary name)."""
    count = 0
    with _replacing(path, WRITE_BUFFER) as handle:
        for record in records:
            handle.write(canonical_json_line(record))
            count += 1
    return count


def write_text_column(path: Path, relation, batch_size: int = 10_000) -> int:
    """Write a query's one text column, each value a whole line with its newline, as a file's
    bytes (through a temporary name): each Arrow batch's text buffer in one write, no Python
    string per row. Returns the rows written."""
    count = 0
    with _replacing(path) as handle:
        for batch in relation.to_arrow_reader(batch_size):
            offsets, data = string_buffers(batch.column(0))
            handle.write(data[offsets[0]:offsets[len(batch)]])
            count += len(batch)
    return count


def string_buffers(text: pa.Array) -> tuple[memoryview, memoryview]:
    """A string array's value offsets (from its first value) and its data, as memoryviews:
    value i's bytes are data[offsets[i]:offsets[i + 1]], read in place."""
    width = "q" if pa.types.is_large_string(text.type) else "i"
    data = text.buffers()[2]
    return memoryview(text.buffers()[1]).cast(width)[text.offset:], memoryview(data if data is not None else b"")


def utf8_values(text: pa.Array) -> list[memoryview]:
    """Each value of a string array as its UTF-8 bytes, read in place (a null's are empty).
    orjson reads these ~25% faster than the same values as Python strings, which it would
    encode back to UTF-8 first."""
    offsets, data = string_buffers(text)
    return [data[offsets[i]:offsets[i + 1]] for i in range(len(text))]


def _write_all(fd: int, chunks: list[bytes | memoryview]) -> None:
    """Write `chunks` to `fd` in order, with as few calls as the kernel takes (no joined copy);
    a regular file may take fewer bytes than asked, so the rest is asked again."""
    views = [memoryview(chunk).cast("B") for chunk in chunks]
    first = 0
    while first < len(views):
        written = os.writev(fd, views[first:first + IOV_MAX])
        while first < len(views) and written >= len(views[first]):
            written -= len(views[first])
            first += 1
        if written:
            views[first] = views[first][written:]


class _WriterThread:
    """Writes chunks to open files in a thread of its own, in the order they are handed over:
    the kernel's copy of an export's ~2 GB (~4 s here) runs beside the serialization of what
    follows instead of stopping it every MiB. The first error is raised on the next handover
    or by `close`."""

    def __init__(self) -> None:
        self._chunks: queue.Queue[tuple[int, list[bytes | memoryview]] | None] = queue.Queue(PENDING_CHUNKS)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="eviscene-jsonl-writer", daemon=True)
        self._thread.start()

    def write(self, fd: int, chunks: list[bytes | memoryview]) -> None:
        if self._error is not None:
            raise self._error
        self._chunks.put((fd, chunks))

    def _run(self) -> None:
        while (work := self._chunks.get()) is not None:
            if self._error is None:  # after an error, only drain: the caller learns of it and stops
                try:
                    _write_all(*work)
                except BaseException as error:
                    self._error = error

    def close(self) -> None:
        """Wait for every chunk handed over; raise the first error writing one."""
        self._chunks.put(None)
        self._thread.join()
        if self._error is not None:
            raise self._error


class JsonlFiles:
    """Several JSONL files written at once (a context manager), one canonical line per record,
    each through a temporary name: a streamed export fills them row by row, so no file sits
    in memory whole. A file's lines are handed to a writer thread a MiB at a time. With
    `keep_records`, each file's records are also kept (for a Parquet copy of the file)."""

    def __init__(self, out_dir: Path, names: Iterable[str], *, keep_records: bool = False) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        self.out_dir = out_dir
        self.handles = {name: (out_dir / f".{name}.tmp").open("wb", buffering=0) for name in names}
        self.counts = dict.fromkeys(self.handles, 0)
        self.records: dict[str, list[dict[str, Any]]] | None = {name: [] for name in self.handles} if keep_records else None
        self._pending: dict[str, list[bytes | memoryview]] = {name: [] for name in self.handles}
        self._pending_bytes = dict.fromkeys(self.handles, 0)
        self._writer = _WriterThread()

    def _append(self, name: str, chunk: bytes | memoryview) -> None:
        self._pending[name].append(chunk)
        self._pending_bytes[name] += len(chunk)
        if self._pending_bytes[name] >= WRITE_BUFFER:
            self._hand_over(name)

    def _hand_over(self, name: str) -> None:
        if self._pending[name]:
            self._writer.write(self.handles[name].fileno(), self._pending[name])
            self._pending[name], self._pending_bytes[name] = [], 0

    def add(self, name: str, record: dict[str, Any]) -> None:
        self._append(name, canonical_json_line(record))
        self.counts[name] += 1
        if self.records is not None:
            self.records[name].append(record)

    def add_json(self, name: str, text: str | bytes) -> None:
        """`add` for a record given as JSON text."""
        self.add(name, loads_exactly(text))

    def add_lines(self, name: str, lines: pa.Array, key_order: tuple[str, ...]) -> None:
        """`add` for records given as the very lines `add` writes (a string array, each value
        one line with its newline): handed over as they are (the view keeps the Arrow buffer),
        no Python object per line. A kept record takes its keys in `key_order`, as the lines'
        writer listed them (the lines' own are sorted)."""
        offsets, data = string_buffers(lines)
        self._append(name, data[offsets[0]:offsets[len(lines)]])
        self.counts[name] += len(lines)
        if self.records is not None:
            for line in lines.to_pylist():
                record = orjson.loads(line)
                self.records[name].append({key: record[key] for key in key_order if key in record})

    def __enter__(self) -> "JsonlFiles":
        return self

    def __exit__(self, error_type, error, traceback) -> None:
        """Write what is pending and close every file; only a complete export takes the files'
        names."""
        try:
            if error_type is None:
                for name in self.handles:
                    self._hand_over(name)
            self._writer.close()
        except BaseException:
            if error_type is None:
                raise
        finally:
            for handle in self.handles.values():
                handle.close()
        if error_type is None:
            for name, handle in self.handles.items():
                os.replace(handle.name, self.out_dir / name)


def read_ahead(items: Iterable[Item], depth: int = 2) -> Iterator[Item]:
    """`items`, the next `depth` read by a thread of its own while the caller works on the one
    before: a query's Arrow batches are computed by DuckDB (which releases the GIL) while
    Python serializes the last. The caller must not use the connection until this ends."""
    handoff: queue.Queue[tuple[bool, Any]] = queue.Queue(depth)
    stopped = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                if stopped.is_set():
                    return
                handoff.put((True, item))
            handoff.put((False, None))
        except BaseException as error:
            handoff.put((False, error))

    thread = threading.Thread(target=produce, name="eviscene-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            more, item = handoff.get()
            if not more:
                if item is not None:
                    raise item
                return
            yield item
    finally:
        stopped.set()
        while thread.is_alive():  # a producer waiting on a full handoff: take its item
            try:
                handoff.get(timeout=0.05)
            except queue.Empty:
                pass
        thread.join()


def batch_rows(relation, json_columns: Iterable[str] = (), *, batch_size: int = 10_000):
    """A query's rows as plain dicts, read in Arrow batches so a large result never sits in
    memory whole."""
    columns = tuple(json_columns)
    for batch in relation.to_arrow_reader(batch_size):
        yield from rows(pa.Table.from_batches([batch]), columns)


def write_json(path: Path, record: dict[str, Any]) -> None:
    """A small human-read JSON document (manifests, summaries), indented."""
    write_text(path, canonical_json_indented(record) + "\n")

