"""From query results to export files, byte for byte the same on every run.

DuckDB hands JSON columns over as text, MAPs as key/value pairs, DECIMALs as Decimal and
timestamps as datetimes; `rows` converts only the columns whose Arrow type needs it (parsing
JSON with orjson), and `eviscene.rules.canonical`, the one serializer of every export, writes them.
"""

from __future__ import annotations

import os
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterable

import orjson
import pyarrow as pa

from eviscene.rules.canonical import canonical_json_indented, canonical_json_line
from eviscene.rules.timestamps import format_ts


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


def rows(table: pa.Table, json_columns: Iterable[str] = (), *, embed_json: bool = False) -> list[dict[str, Any]]:
    """Arrow rows as plain dicts, converted column by column. JSON-typed columns are parsed,
    or with `embed_json` kept as their stored text (orjson Fragments: written verbatim,
    never parsed, for exports)."""
    columns: dict[str, list[Any]] = {}
    parse = set(json_columns)
    for name, column in zip(table.column_names, table.columns):
        values = column.to_pylist()
        if name in parse:
            load = orjson.Fragment if embed_json else orjson.loads
            values = [load(v) if v is not None else None for v in values]
        elif _needs_plain(column.type):
            values = [plain(v) for v in values]
        columns[name] = values
    names = list(columns)
    return [dict(zip(names, values)) for values in zip(*columns.values())] if names else []


def write_text(path: Path, text: str) -> None:
    """Write through a temporary name, so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pending = path.with_name(f".{path.name}.tmp")
    pending.write_text(text, encoding="utf-8")
    os.replace(pending, path)


def write_jsonl(path: Path, records: Iterable[dict[str, Any]]) -> int:
    """Stream records to a file, one canonical line each (through a temporary name)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pending = path.with_name(f".{path.name}.tmp")
    count = 0
    with pending.open("wb") as handle:
        for record in records:
            handle.write(canonical_json_line(record))
            count += 1
    os.replace(pending, path)
    return count


class JsonlFiles:
    """Several JSONL files written at once (a context manager), one canonical line per record,
    each through a temporary name: a streamed export fills them row by row, so no file sits
    in memory whole. With `keep_records`, each file's records are also kept (for a Parquet
    copy of the file)."""

    def __init__(self, out_dir: Path, names: Iterable[str], *, keep_records: bool = False) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        self.out_dir = out_dir
        self.handles = {name: (out_dir / f".{name}.tmp").open("wb") for name in names}
        self.counts = dict.fromkeys(self.handles, 0)
        self.records: dict[str, list[dict[str, Any]]] | None = {name: [] for name in self.handles} if keep_records else None

    def add(self, name: str, record: dict[str, Any]) -> None:
        self.handles[name].write(canonical_json_line(record))
        self.counts[name] += 1
        if self.records is not None:
            self.records[name].append(record)

    def add_json(self, name: str, text: str | bytes) -> None:
        """`add` for a record given as JSON text (read by orjson)."""
        self.add(name, orjson.loads(text))

    def __enter__(self) -> "JsonlFiles":
        return self

    def __exit__(self, error_type, error, traceback) -> None:
        """Close every file; only a complete export takes the files' names."""
        for name, handle in self.handles.items():
            handle.close()
            if error_type is None:
                os.replace(handle.name, self.out_dir / name)


def batch_rows(relation, json_columns: Iterable[str] = (), *, embed_json: bool = False, batch_size: int = 10_000):
    """A query's rows as plain dicts, read in Arrow batches so a large result never sits in
    memory whole."""
    columns = tuple(json_columns)
    for batch in relation.to_arrow_reader(batch_size):
        yield from rows(pa.Table.from_batches([batch]), columns, embed_json=embed_json)


def write_json(path: Path, record: dict[str, Any]) -> None:
    """A small human-read JSON document (manifests, summaries), indented."""
    write_text(path, canonical_json_indented(record) + "\n")

