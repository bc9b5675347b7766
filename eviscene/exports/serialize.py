"""From query results to export files, byte for byte the same on every run.

DuckDB hands JSON columns over as text, MAPs as key/value pairs and DECIMALs as Decimal;
`plain` turns each into what `json` writes, and `canonical_json` (one serializer for every
export) writes it.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterable

import pyarrow as pa

from eviscene.store.chain import canonical_json, format_ts


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


def rows(table: pa.Table, json_columns: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Arrow rows as plain dicts, JSON-typed columns parsed."""
    parse = set(json_columns)
    out = []
    for row in table.to_pylist():
        out.append({k: (json.loads(v) if k in parse and v is not None else plain(v)) for k, v in row.items()})
    return out


def write_text(path: Path, text: str) -> None:
    """Write through a temporary name, so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pending = path.with_name(f".{path.name}.tmp")
    pending.write_text(text, encoding="utf-8")
    os.replace(pending, path)


def write_jsonl(path: Path, records: Iterable[dict[str, Any]]) -> int:
    lines = [canonical_json(record) for record in records]
    write_text(path, "\n".join(lines) + ("\n" if lines else ""))
    return len(lines)


def write_json(path: Path, record: dict[str, Any]) -> None:
    write_text(path, json.dumps(record, ensure_ascii=False, sort_keys=True, indent=2, allow_nan=False) + "\n")
