"""Trace files put together in SQL (eviscene.exports.trajectories) write strings and numbers
as canonical_json does: DuckDB's to_json escapes every code point as orjson does but nine
control characters, which go through canonical_json itself."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from eviscene.exports.trajectories import _json_number, _json_text, _register_json_functions
from eviscene.rules.canonical import canonical_json


def _connection() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    _register_json_functions(con)
    return con


def test_every_code_point_written_as_canonical_json():
    characters = pa.table({"s": [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]})
    con = _connection()
    con.register("characters", characters)
    written = con.sql(f"SELECT s, {_json_text('s')} AS text FROM characters").fetchall()
    assert len(written) == 0x110000 - 0x800
    assert [(s, text) for s, text in written if text != canonical_json(s)] == []


def test_strings_and_numbers_as_canonical_json():
    con = _connection()
    rows = con.sql(
        f"SELECT {_json_text('s')}, {_json_number('n')}, {_json_number('b')}, coalesce(canonical_json_number(x), 'null') "
        "FROM (VALUES ('a\x1fb\"\\c\x0b\n', 3, true, 0.5), ('\\u001F é', NULL, false, 1e-7), (NULL, -2, NULL, NULL)) t(s, n, b, x)"
    ).fetchall()
    assert rows == [
        ('"a\\u001fb\\"\\\\c\\u000b\\n"', "3", "true", "0.5"),
        ('"\\\\u001F é"', "null", "false", "1e-7"),
        ("null", "-2", "null", "null"),
    ]
