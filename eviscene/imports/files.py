"""Reading the files users import: every malformed row is named by file and line."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from eviscene.imports.errors import ArtifactError
from eviscene.rules.jsonl import JsonlError, iter_jsonl_bytes


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
    """(line number, row) for every non-blank line, through the one strict reader; the seed
    splits on newlines and skips blank lines, so line numbers count every line."""
    try:
        return list(iter_jsonl_bytes(content, path))
    except JsonlError as exc:
        raise ArtifactError(_import_message(exc)) from None


def _import_message(exc: JsonlError) -> str:
    """This command's wording of a JSONL fault (`not valid JSON (... at column N)`)."""
    cause = exc.cause
    if exc.problem == "not_object":
        return f"{exc.path}:{exc.line}: must be a JSON object"
    if exc.problem != "malformed":
        return str(exc)
    if isinstance(cause, json.JSONDecodeError):
        return f"{exc.path}:{exc.line}: not valid JSON ({cause.msg} at column {cause.colno})"
    return f"{exc.path}:{exc.line}: not valid JSON ({cause})"


def text(value: Any) -> str:
    """Python's `str(value).strip()` for a JSON field, '' when missing or null (the seed's
    `str(row.get(key, "")).strip()` idiom, with null read as missing)."""
    return "" if value is None else str(value).strip()
