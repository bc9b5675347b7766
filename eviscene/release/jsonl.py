"""The release's JSONL inputs (cases, gold, corpus pages) through the one strict reader,
`eviscene.rules.jsonl`, with its faults raised as `ReleaseError` ``<file>:<line>: ...``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eviscene.errors import ReleaseError
from eviscene.rules import jsonl


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Read a JSONL file of objects; blank lines are skipped.

    Raises ReleaseError ``<file>:<line>: <what is wrong>`` for a missing file, a line that
    is not UTF-8, malformed JSON, or a row that is not a JSON object.
    """
    return [row for _, row in read_jsonl_numbered(path)]


def read_jsonl_numbered(path: str | Path, data: bytes | None = None) -> list[tuple[int, dict[str, Any]]]:
    """Like read_jsonl, but each row comes with its 1-based line number, for callers whose
    own checks (missing fields, duplicates) must point at a line too; a file not named
    `*.jsonl` is one JSON list of rows (see `eviscene.rules.jsonl.read_jsonl_numbered`).
    `data` is the file's content where the caller has read it already."""
    try:
        return jsonl.read_jsonl_numbered(path, data)
    except jsonl.JsonlError as exc:
        raise ReleaseError(str(exc)) from None
