"""Every JSON serialization more than one layer relies on, side by side, so none is
re-written by hand. They differ on purpose; each says who depends on its exact bytes.

`canonical_json` is the one serializer every export uses: orjson with sorted keys, compact,
UTF-8, shortest round-trip floats (`1e-7`, `0.1`). DuckDB's JSON writer formats floats and
timestamps differently, so exports never rely on it.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


def canonical_json(value: Any) -> str:
    """`{"b":1,"a":[1.5,"é"]}` -> `{"a":[1.5,"é"],"b":1}`: exports, cache keys, argument hashes."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode("utf-8")


def canonical_json_bytes(value: Any) -> bytes:
    """`canonical_json` as UTF-8 bytes (one JSONL row of an export, without its newline)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def canonical_json_line(value: Any) -> bytes:
    """`canonical_json_bytes` and a newline: one JSONL row of an export (orjson appends it,
    no copy of the row)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE)


def canonical_json_indented(value: Any) -> str:
    """`canonical_json` indented by two spaces, for the JSON documents of an export."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2).decode("utf-8")


def seed_canonical_json(value: Any, *, ensure_ascii: bool) -> str:
    """The seed's hashed form, `json.dumps(value, sort_keys=True, separators=(",", ":"))`:
    identifiers derived from it (prompt group ids, runtime-store listings) must match the
    seed's Python byte for byte, floats and escapes included, so it is not `canonical_json`."""
    return json.dumps(value, ensure_ascii=ensure_ascii, sort_keys=True, separators=(",", ":"))


def readable_json(value: Any) -> str:
    """Sorted keys with Python's default `, ` and `: ` separators, non-ASCII kept: the JSON
    shown inside prompt text and the viewer, where a reader (human or model) reads it."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
