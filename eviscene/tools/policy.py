"""Reading a source-access policy file; the matcher itself is `eviscene.rules.source_policy`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eviscene.errors import ReleaseError
from eviscene.rules.jsonl import RepeatedKeyError, load_json_document, repeated_key_message
from eviscene.rules.paths import special_file_kind
from eviscene.rules.source_policy import SourceAccessPolicy, checked_policy_from_fields


def source_policy_from_dict(data: dict[str, Any]) -> SourceAccessPolicy:
    """The policy of a policy file's JSON object; ReleaseError when a field is malformed or
    unknown, or a domain is not a bare domain (`checked_policy_from_fields`)."""
    try:
        return checked_policy_from_fields(data)
    except ValueError as exc:
        raise ReleaseError(str(exc)) from None


def load_source_policy(path: str | Path, content: bytes | None = None) -> SourceAccessPolicy:
    """The policy in the JSON file at `path` (its bytes as `content` where a run read them
    already); ReleaseError naming the file (and line)."""
    path = Path(path)
    if content is None:  # a run's bytes were checked as they were read (eval.gold_import.read_scoring_files)
        kind = special_file_kind(path)
        if kind:  # reading a named pipe would wait for a writer forever
            raise ReleaseError(f"{path}: the source access policy is {kind}, not a regular file")
    try:
        data = load_json_document(path.read_bytes() if content is None else content)
    except RepeatedKeyError as exc:
        raise ReleaseError(repeated_key_message(path, exc)) from None
    except FileNotFoundError:
        raise ReleaseError(f"{path}: source access policy not found") from None
    except UnicodeDecodeError as exc:
        raise ReleaseError(f"{path}: source access policy is not UTF-8 ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise ReleaseError(f"{path}:{exc.lineno}: source access policy is not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise ReleaseError(f"{path}: source access policy is not valid JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise ReleaseError(f"{path}: source access policy must be a JSON object")
    try:
        return checked_policy_from_fields(data)
    except ValueError as exc:
        raise ReleaseError(f"{path}: {exc}") from None
