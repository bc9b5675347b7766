"""Reading the files users import: every malformed row is named by file and line."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterator

from eviscene.imports.errors import ArtifactError
from eviscene.rules.jsonl import JsonlError, RepeatedKeyError, iter_jsonl_bytes, load_json_document, repeated_key_message
from eviscene.rules.jsonl_parts import iter_jsonl_field
from eviscene.rules.paths import PathEscapeError, resolve_inside, special_file_kind, undecodable_name


def sha256_bytes(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def inside_import(root: Path, relative: str, *, what: str = "", refuse_only_escapes: bool = False) -> Path:
    """The file or folder `relative` of the imported directory `root`, resolved; one that
    leads out of `root` (a link pointing out, `..`, an absolute path) is refused by name,
    after `what` when given (`resolve_inside`, which says what `refuse_only_escapes` takes),
    and never read."""
    try:
        return resolve_inside(root, relative, root_name="imported directory", refuse_only_escapes=refuse_only_escapes)
    except PathEscapeError as exc:
        raise ArtifactError(f"{what}: {exc}" if what else str(exc)) from None


def refuse_undecodable_name(path: Path | str) -> None:
    """Refuse a file or folder of an import whose name is no text the log can hold (one named
    on a Latin-1 system, copied over): the log records every file's path, and the import
    would otherwise fail halfway with a traceback naming no file."""
    problem = undecodable_name(os.fspath(path), way_out="rename it (nothing was imported)")
    if problem:
        raise ArtifactError(problem)


def refuse_special_files(path: Path) -> None:
    """Refuse an import that is, or holds, a named pipe, a socket or a device, naming it (the
    first by path when there are several), before any file is read: reading one could wait
    forever. Only real folders are entered: a link leads to something walked here too, or
    out of the import, which is refused before it is read (`inside_import`)."""
    kind = special_file_kind(path)
    if kind:
        raise ArtifactError(f"{path} is {kind}: only regular files can be imported")
    found = []
    folders = [path] if path.is_dir() else []
    while folders:
        try:
            entries = list(os.scandir(folders.pop()))
        except OSError:  # an unreadable folder is the readers' to report, as they do now
            continue
        for entry in entries:  # the listing tells files, folders and links apart: no stat each
            if entry.is_dir(follow_symlinks=False):
                folders.append(entry.path)
            elif not entry.is_file(follow_symlinks=False) and not entry.is_symlink():
                kind = special_file_kind(entry.path)
                if kind:
                    found.append((Path(entry.path).relative_to(path).as_posix(), kind))
    if found:
        relative, kind = min(found)
        raise ArtifactError(f"path {relative!r} in the imported directory {path} is {kind}: only regular files can be imported")


def parse_json_object(path: Path | str, content: bytes) -> dict[str, Any]:
    """A whole file that must hold one JSON object, read as the seed's `json.load` reads it; a
    key repeated in an object is refused: the seed reads its last value, the views its first
    (a second `benchmark` in a run manifest passed the training prohibition)."""
    try:
        value = load_json_document(content)
    except RepeatedKeyError as exc:
        raise ArtifactError(repeated_key_message(path, exc)) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtifactError(f"{path}: not valid JSON ({exc})") from None
    except RecursionError:  # `[[[…` a few thousand deep
        raise ArtifactError(f"{path}: not valid JSON (nested too deeply)") from None
    if not isinstance(value, dict):
        raise ArtifactError(f"{path}: expected a JSON object")
    return value


def iter_jsonl_objects(path: Path, content: bytes) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, row) for every non-blank line, through the one strict reader; the seed
    splits on newlines and skips blank lines, so line numbers count every line. Rows read one
    by one are freed one by one: a list of 100k rows kept alive makes every garbage
    collection walk them."""
    try:
        yield from iter_jsonl_bytes(content, path)
    except JsonlError as exc:
        raise ArtifactError(_import_message(exc)) from None


def jsonl_field(path: Path, content: bytes, key: str | None) -> Iterator[tuple[int, Any]]:
    """(line number, row.get(key)) for every row iter_jsonl_objects reads, each checked as it
    checks it, with its error; a large file is read on every CPU. None for each row when
    `key` is None."""
    try:
        yield from iter_jsonl_field(content, path, key)
    except JsonlError as exc:
        raise ArtifactError(_import_message(exc)) from None


def count_jsonl_objects(path: Path, content: bytes) -> int:
    """How many rows a JSONL file holds, each checked."""
    return sum(1 for _ in jsonl_field(path, content, None))


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
