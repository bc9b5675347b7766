"""Reading the files users import: every malformed row is named by file and line."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from eviscene.imports.errors import ArtifactError


def sha256_bytes(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def parse_json_object(path: Path, content: bytes) -> dict[str, Any]:
    """A whole file that must hold one JSON object."""
    try:
        value = json.loads(content.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtifactError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ArtifactError(f"{path}: expected a JSON object")
    return value


def parse_jsonl_objects(path: Path, content: bytes) -> list[tuple[int, dict[str, Any]]]:
    """(line number, row) for every non-blank line; the seed splits on newlines and skips
    blank lines, so line numbers count every line."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ArtifactError(f"{path}: not UTF-8 ({exc})") from None
    found = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ArtifactError(f"{path}:{number}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(value, dict):
            raise ArtifactError(f"{path}:{number}: must be a JSON object")
        found.append((number, value))
    return found


def text(value: Any) -> str:
    """Python's `str(value).strip()` for a JSON field, '' when missing or null (the seed's
    `str(row.get(key, "")).strip()` idiom, with null read as missing)."""
    return "" if value is None else str(value).strip()
