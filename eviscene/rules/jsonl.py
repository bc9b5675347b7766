"""The one strict JSONL reader (cases, gold, corpus pages, imported run files).

Lines are split on ``\\n`` only: a JSON string may legally hold a raw U+2028 or U+0085,
which ``str.splitlines`` would cut in two. Blank lines are skipped (line numbers still count
them); a byte-order mark (which Python's json, the seed's reader, refuses), NaN/Infinity (a
number past a double's range, `1e999`, too: Python reads it as Infinity), repeated keys and
lone surrogates are refused.
A line is read by orjson where that provably gives Python's reading (`read_fast`), else by
Python's json with a hook per object (three times slower).
Every problem is a `JsonlError` naming ``<file>:<line>``; callers turn it into their own
error type and, where their users rely on a wording, their own message.
The views that parse stored JSONL files read them as this reader does: the text through the SQL
macro jsonl_text, split on \n, a line skipped where py_blank (`python_text`) is true.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Iterator, Literal

import orjson

Problem = Literal["unreadable", "not_utf8", "malformed", "not_object", "not_a_list"]


# name -> the macro's parameters and body, created on a connection whose views name it.
SQL_MACROS = {
    # a stored file's text as the reader reads it: decoded (the views split it on \n only and
    # number the lines from 1); without the byte-order mark that earlier versions let a file
    # open with, which logs they wrote may hold
    "jsonl_text": "(content) AS CASE WHEN starts_with(decode(content), chr(65279)) "
                  "THEN substr(decode(content), 2) ELSE decode(content) END",
}


class JsonlError(ValueError):
    """`<file>:<line>: <detail>` (`<file>: <detail>` for the whole file).

    `problem` says what kind of fault it is; `cause` is the parser's exception, if any."""

    def __init__(self, path: str | Path, line: int | None, problem: Problem, detail: str,
                 cause: ValueError | None = None) -> None:
        self.path, self.line, self.problem, self.detail, self.cause = path, line, problem, detail, cause
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {detail}")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    """`json.loads`'s parse_float: a number past a double's range (`1e999`) would read as Infinity, no more JSON than NaN."""
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"{text} is past a double's range: {'-' if number < 0 else ''}Infinity is not valid JSON")
    return number


class RepeatedKeyError(ValueError):
    """An object holding one key twice: Python's json keeps its last value, DuckDB's JSON (the
    views reading the stored file) its first, so the code and the views would read two files."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(f"duplicate key {key!r}")


def refuse_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """`json.loads`'s object_pairs_hook: an object, or `RepeatedKeyError`."""
    row: dict[str, Any] = {}
    for key, value in pairs:
        if key in row:
            raise RepeatedKeyError(key)
        row[key] = value
    return row


def repeated_key_message(path: str | Path, exc: RepeatedKeyError) -> str:
    """How a file whose object repeats a key is refused: its readers would disagree on it."""
    return (f"{path}: the key {exc.key!r} appears twice in one object (Python's json reads the last, the SQL views "
            "the first): keep one")


def load_json_document(content: bytes) -> Any:
    """A whole JSON file as the seed's `json.load` reads it (UTF-8; NaN and Infinity included),
    by orjson where that provably reads the same (`read_fast`), refusing a repeated key
    (`RepeatedKeyError`), which the seed and the views would read differently."""
    fast = read_fast(content)
    if fast is not None:
        return fast
    text = content.decode("utf-8")
    value = json.loads(text, object_pairs_hook=refuse_repeated_keys)
    refuse_lone_surrogates(text)
    return value


def parse_json(text: str | bytes) -> Any:
    """Parse strict JSON: no NaN/Infinity (nor a number past a double's range), no repeated keys in an object."""
    try:
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float, object_pairs_hook=refuse_repeated_keys)
    except RecursionError:  # `[[[…` a few thousand deep: a malformed input, not a crash
        raise ValueError("nested too deeply") from None
    refuse_lone_surrogates(text if isinstance(text, str) else text.decode("utf-8"))
    return value


# Every escape in order (`\\` consumed whole, so `\\ud800` is a backslash and text), a \u's
# four digits captured.
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)


_LONE_HALF = re.compile("[\ud800-\udfff]")  # in decoded text, only a lone half remains one: a pair is one character


def replace_lone_surrogates(text: str) -> str:
    """`text` decoded from JSON a server sent, each half a character (`"\\ud800"`, which no UTF-8
    holds: the log's writer would fail on it) replaced by U+FFFD, as a UTF-8 decoder replaces
    what it cannot read. For text that is quoted, not refused (`refuse_lone_surrogates`)."""
    return _LONE_HALF.sub("\ufffd", text)


def refuse_lone_surrogates(text: str) -> None:
    """json.JSONDecodeError at the first `\\uD800`-`\\uDFFF` escape that is not half of a pair:
    Python's json reads it as a string no UTF-8 holds (the seed's writer then fails), DuckDB's
    JSON refuses it (a view over the stored file would fail on every later read). orjson
    refuses it too, so only text Python's reader read comes here."""
    if "\\ud" not in text and "\\uD" not in text:
        return
    high = None  # a first half, waiting for its second right after it
    for escape in _ESCAPE.finditer(text):
        code = int(escape.group(1), 16) if escape.group(1) else None
        second_half = code is not None and 0xDC00 <= code <= 0xDFFF
        if high is not None:
            if not (second_half and escape.start() == high.end()):
                break
            high = None
        elif code is not None and 0xD800 <= code <= 0xDBFF:
            high = escape
        elif second_half:
            high = escape
            break
    else:
        if high is None:
            return
    raise json.JSONDecodeError(f"{high.group(0)} is half of a character (a lone surrogate), which no UTF-8 text holds", text, high.start())


def read_fast(line: bytes) -> Any | None:
    """`parse_json(line)` by orjson, or None where only Python's reader can tell.

    orjson accepts nothing parse_json refuses (tests/rules/test_rules_jsonl.py) and reads every
    value as Python does but two. It reads an integer outside [-2**63, 2**64) as a float, whose
    magnitude (2**63 and more) it writes in exponent form: its re-serialization then holds
    "e+". And it keeps the last of repeated keys. A repeated key is found by counting colons:
    each key brings one colon outside strings, so the line holds as many colons as orjson's
    re-serialization of what it read exactly when no pair was dropped (a dropped pair takes its
    key's colon, and those in its strings, with it), unless an escaped colon, written back
    plain, makes up for one: such a line goes to Python."""
    if b"\\u003" in line and (b"\\u003a" in line or b"\\u003A" in line):
        return None
    try:
        value = orjson.loads(line)
        written = orjson.dumps(value)
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):  # refused, or nested too deep to write
        return None
    # perhaps an integer beyond 64 bits (or a float written so, or text); "+" alone first: memchr
    # finds it (or not) ~10x faster than the pair's search scans text full of "e"s
    if b"+" in written and b"e+" in written:
        return None
    return value if line.count(b":") == written.count(b":") else None


def loads_exactly(text: str | bytes | memoryview) -> Any:
    """JSON text the log holds (an imported row, as a view gives it back; read strictly when it
    came in) as Python's reader reads it: by orjson, or by `json` where orjson would not read
    it alike, an integer past 64 bits (orjson: a float, written back in exponent form, as a
    float of 1e16 or more is, which `json` reads as orjson does) or nesting past 254 levels
    (orjson refuses to write it back)."""
    try:
        value = orjson.loads(text)
        if b"e+" not in orjson.dumps(value):
            return value
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        pass
    return json.loads(bytes(text) if isinstance(text, memoryview) else text)


def json_type(value: Any) -> str:
    """How an error names a JSON value's type: `null`, `a boolean`, `a number`, ..."""
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


def parse_jsonl_line(raw_line: bytes | str, path: str | Path, line_number: int) -> dict[str, Any] | None:
    """One line as a JSON object; None for a blank line."""
    if isinstance(raw_line, bytes):
        row = read_fast(raw_line)
        if isinstance(row, dict):
            return row
        try:
            raw_line = raw_line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonlError(path, line_number, "not_utf8", f"not UTF-8 ({exc.reason})", exc) from None
    if not raw_line.strip():
        return None
    try:
        row = parse_json(raw_line)
    except ValueError as exc:
        raise JsonlError(path, line_number, "malformed", f"malformed JSON: {exc}", exc) from None
    if not isinstance(row, dict):
        raise JsonlError(path, line_number, "not_object", f"expected a JSON object, got {json_type(row)}")
    return row


def iter_jsonl_bytes(data: bytes, path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(1-based line number, row) for every non-blank line of `data`, the content of `path`."""
    for line_number, raw_line in enumerate(split_lines(data), start=1):
        row = parse_jsonl_line(raw_line, path, line_number)
        if row is not None:
            yield line_number, row


def split_lines(data: bytes, start: int = 0, end: int | None = None) -> Iterator[bytes]:
    """`data[start:end].split(b"\\n")`, one line at a time: a large file is not copied whole
    into a list (nor its range into a slice)."""
    end = len(data) if end is None else end
    while (cut := data.find(b"\n", start, end)) >= 0:
        yield data[start:cut]
        start = cut + 1
    yield data[start:end]


def read_file_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise JsonlError(path, None, "unreadable", "file not found") from None
    except OSError as exc:
        raise JsonlError(path, None, "unreadable", f"cannot read: {exc.strerror or exc}") from None


def read_jsonl_numbered(path: str | Path, data: bytes | None = None) -> list[tuple[int, dict[str, Any]]]:
    """Each row of a JSONL file of objects with its 1-based line number; `data` is the file's
    content where the caller has read it already. As the seed's `_load_benchmark`, a file not
    named `*.jsonl` is one JSON document holding a list of rows; each row is then numbered by
    its 1-based position in the list."""
    path = Path(path)
    if data is None:
        data = read_file_bytes(path)
    if path.suffix.lower() != ".jsonl":
        return _json_list_numbered(path, data)
    return list(iter_jsonl_bytes(data, path))


def _json_list_numbered(path: Path, data: bytes) -> list[tuple[int, dict[str, Any]]]:
    try:
        document = parse_json(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise JsonlError(path, None, "not_utf8", f"not UTF-8 ({exc.reason})", exc) from None
    except ValueError as exc:
        raise JsonlError(path, None, "malformed", f"malformed JSON: {exc}", exc) from None
    if not isinstance(document, list):
        raise JsonlError(path, None, "not_a_list",
                         f"must be a JSON list of rows or a .jsonl file, got {json_type(document)}")
    for position, row in enumerate(document, start=1):
        if not isinstance(row, dict):
            raise JsonlError(path, position, "not_object", f"expected a JSON object, got {json_type(row)}")
    return list(enumerate(document, start=1))
