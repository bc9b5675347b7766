"""Every JSON serialization more than one layer relies on, side by side, so none is
re-written by hand. They differ on purpose; each says who depends on its exact bytes.

`canonical_json` is the one serializer every export uses: orjson with sorted keys, compact,
UTF-8, shortest round-trip floats (`1e-7`, `0.1`). DuckDB's JSON writer formats floats and
timestamps differently, so exports never rely on it.
"""

from __future__ import annotations

import json
import math
import re
import uuid
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
    no copy of the row), for any value an imported row holds (`canonical_json_exact`)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError as refused:
        return _canonical_by_python(value, refused) + b"\n"


def canonical_json_exact(value: Any) -> str:
    """`canonical_json`, and for what orjson cannot write but an imported row may hold, an
    integer past 64 bits or nesting past 254 levels (seed 002 writes both), the same text by
    Python's writer: an export's values. (Elsewhere orjson's refusal is the point: what the
    log cannot read back exactly is kept as text, `providers.wire.tool_arguments`.)"""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode("utf-8")
    except orjson.JSONEncodeError as refused:
        return _canonical_by_python(value, refused).decode("utf-8")


def _canonical_by_python(value: Any, refused: orjson.JSONEncodeError | None = None) -> bytes:
    """`canonical_json_bytes` by Python's `json`, which writes any integer and nests as deep as
    its reader reads. Its floats (`1e-05`, orjson `0.00001`) and NaN differ, so each float and
    each integer orjson would refuse goes in as a marked string holding its text, and comes
    out as that text; the mark carries a nonce no string of the value holds. What neither
    writes (half a character, a type JSON has not) raises orjson's error, `refused`."""
    nonce = uuid.uuid4().hex
    texts: list[str] = []

    def marked(text: str) -> str:
        texts.append(text)
        return f"{nonce}{len(texts) - 1}"

    root = [value]
    todo: list[tuple[Any, Any]] = [(root, 0)]  # (holder, key): a loop, as nesting may pass the recursion limit
    while todo:
        holder, key = todo.pop()
        item = holder[key]
        if isinstance(item, float):
            holder[key] = marked(orjson.dumps(item).decode())
        elif isinstance(item, int) and not isinstance(item, bool) and not -(2**63) <= item < 2**64:
            holder[key] = marked(str(item))
        elif isinstance(item, dict):
            holder[key] = copy = dict(item)
            todo.extend((copy, k) for k in copy)
        elif isinstance(item, (list, tuple)):
            holder[key] = copy = list(item)
            todo.extend((copy, i) for i in range(len(copy)))
    try:
        text = json.dumps(root[0], ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        return re.sub(f'"{nonce}(\\d+)"', lambda found: texts[int(found.group(1))], text).encode("utf-8")
    except (TypeError, ValueError, RecursionError):
        if refused is None:
            raise
        raise refused from None


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


def finite_or_null(number: float) -> float | None:
    """A float as JSON holds it: JSON has no NaN or Infinity (jq and JSON.parse refuse them),
    so null there, as pandas and polars write them (`sql --format json`, the viewer's data)."""
    return number if math.isfinite(number) else None


def _non_finite_as_null(value: Any) -> Any:
    if isinstance(value, float):
        return finite_or_null(value)
    if isinstance(value, dict):
        return {k: _non_finite_as_null(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_non_finite_as_null(v) for v in value]
    return value


def finite_json(value: Any, **options: Any) -> str:
    """`json.dumps(value, **options)` that writes NaN and ±Infinity as null (`finite_or_null`),
    never as the `NaN`/`Infinity` no JSON reader takes; a value without them is not copied."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError:  # "Out of range float values are not JSON compliant": a rare run's numbers
        return json.dumps(_non_finite_as_null(value), allow_nan=False, **options)
