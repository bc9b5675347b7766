"""Strict JSONL reading for every JSONL input (cases, gold, corpus pages).

Lines are split on ``\\n`` only: a JSON string may legally hold a raw U+2028 or U+0085,
which ``str.splitlines`` (the seed's way) would cut in two. Errors name ``file:line``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eviscene.errors import ReleaseError


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _object_without_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for key, value in pairs:
        if key in row:
            raise ValueError(f"duplicate key {key!r}")
        row[key] = value
    return row


def parse_json(text: str) -> Any:
    """Parse strict JSON: no NaN/Infinity, no repeated keys in an object."""
    return json.loads(
        text,
        parse_constant=_reject_constant,
        object_pairs_hook=_object_without_duplicate_keys,
    )


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Read a JSONL file of objects; blank lines are skipped.

    Raises ReleaseError ``<file>:<line>: <what is wrong>`` for a missing file, a line that
    is not UTF-8, malformed JSON, or a row that is not a JSON object.
    """
    return [row for _, row in read_jsonl_numbered(path)]


def read_jsonl_numbered(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """Like read_jsonl, but each row comes with its 1-based line number, for callers whose
    own checks (missing fields, duplicates) must point at a line too. As the seed's
    `_load_benchmark`, a file not named `*.jsonl` is one JSON document holding a list of
    rows; each row is then numbered by its 1-based position in the list."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ReleaseError(f"{path}: file not found") from None
    except OSError as exc:
        raise ReleaseError(f"{path}: cannot read: {exc.strerror or exc}") from None
    data = data.removeprefix(b"\xef\xbb\xbf")
    if path.suffix.lower() != ".jsonl":
        return _json_list_numbered(path, data)
    rows: list[tuple[int, dict[str, Any]]] = []
    for line_number, raw_line in enumerate(data.split(b"\n"), start=1):
        try:
            line = raw_line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ReleaseError(f"{path}:{line_number}: not UTF-8 ({exc.reason})") from None
        if not line.strip():
            continue
        try:
            row = parse_json(line)
        except ValueError as exc:
            raise ReleaseError(f"{path}:{line_number}: malformed JSON: {exc}") from None
        if not isinstance(row, dict):
            raise ReleaseError(
                f"{path}:{line_number}: expected a JSON object, got {_json_type(row)}"
            )
        rows.append((line_number, row))
    return rows


def _json_list_numbered(path: Path, data: bytes) -> list[tuple[int, dict[str, Any]]]:
    try:
        document = parse_json(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ReleaseError(f"{path}: not UTF-8 ({exc.reason})") from None
    except ValueError as exc:
        raise ReleaseError(f"{path}: malformed JSON: {exc}") from None
    if not isinstance(document, list):
        raise ReleaseError(f"{path}: must be a JSON list of rows or a .jsonl file, got {_json_type(document)}")
    for position, row in enumerate(document, start=1):
        if not isinstance(row, dict):
            raise ReleaseError(f"{path}:{position}: expected a JSON object, got {_json_type(row)}")
    return list(enumerate(document, start=1))


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "an object"
    return "an array"
