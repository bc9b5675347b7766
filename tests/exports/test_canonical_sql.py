"""canonical_json's bytes written by DuckDB (eviscene.exports.canonical_sql): every string,
double and nested value the run directory's files and trace files hold is written as
canonical_json (orjson) writes it, checked value by value against canonical_json itself and
against lines written out by hand."""

from __future__ import annotations

import math
import random
import struct

import duckdb
import pyarrow as pa
import pytest

from eviscene.exports.canonical_sql import double_sql, integer_sql, json_sql, register_functions, row_sql, text_sql, value_sql
from eviscene.rules.canonical import canonical_json


def _connection() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    register_functions(con)
    return con


def test_every_code_point_written_as_canonical_json():
    characters = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    con = _connection()
    con.register("characters", pa.table({"s": characters}))
    written = con.sql(f"SELECT s, {text_sql('s')} AS text FROM characters").fetchall()
    assert len(written) == 0x110000 - 0x800
    assert [(s, text) for s, text in written if text != canonical_json(s)] == []
    # and inside lists, which to_json writes whole unless a string needs canonical_json
    lists = [characters[i:i + 500] for i in range(0, len(characters), 500)] + [["a", None, "\x1f"], [], None]
    con.register("lists", pa.table({"l": pa.array(lists, pa.list_(pa.string()))}))
    written = con.sql(f"SELECT l, {value_sql('l', duckdb.sqltype('VARCHAR[]'))} FROM lists").fetchall()
    assert len(written) == len(lists)
    assert [(items, text) for items, text in written if text != canonical_json(items)] == []


def _doubles() -> list[float]:
    rng = random.Random(13)
    values = [struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0] for _ in range(100_000)]
    for exponent in range(-323, 308):  # every decade: where the two writers' notations change
        for _ in range(30):
            value = rng.random() * float(f"1e{exponent}")
            values += [value, -value, round(value, 3)]
    edges = [0.0, -0.0, 1e-5, 1e16, 5e-324, 1.7976931348623157e308, 0.1, 1 / 3, 123456789.0, 1e-7, 2.5e-6]
    values += edges + [math.nextafter(x, 0.0) for x in edges] + [math.nextafter(x, math.inf) for x in edges]
    return values + [math.nan, math.inf, -math.inf]


def test_every_double_written_as_canonical_json():
    values = _doubles()
    con = _connection()
    con.register("doubles", pa.table({"x": values}))
    written = con.sql(f"SELECT x, {double_sql('x')} FROM doubles").fetchall()
    assert len(written) == len(values)
    assert [(x, text) for x, text in written if text != canonical_json(x)] == []
    # a FLOAT as the double Python reads from it
    floats = con.sql(f"SELECT x::FLOAT AS f, {double_sql('x::FLOAT')} FROM (SELECT unnest([0.1, 1e-6, 3.4e38, 1e-45]) AS x)").fetchall()
    assert [text for _, text in floats] == [canonical_json(f) for f, _ in floats]
    assert floats[0][1] == "0.10000000149011612"


def test_strings_and_numbers_as_canonical_json():
    con = _connection()
    rows = con.sql(
        f"SELECT {text_sql('s')}, {integer_sql('n')}, {integer_sql('b')}, {double_sql('x')} "
        "FROM (VALUES ('a\x1fb\"\\c\x0b\n', 3, true, 0.5), ('\\u001F é', NULL, false, 1e-7), (NULL, -2, NULL, NULL)) t(s, n, b, x)"
    ).fetchall()
    assert rows == [
        ('"a\\u001fb\\"\\\\c\\u000b\\n"', "3", "true", "0.5"),
        ('"\\\\u001F é"', "null", "false", "1e-7"),
        ("null", "-2", "null", "null"),
    ]


def test_a_row_with_its_keys_sorted_and_json_columns_as_stored():
    con = _connection()
    con.execute("""
        CREATE TABLE t AS SELECT * FROM (VALUES
            ('e1', {'z': 1.5::DOUBLE, 'a': 'nan'::DOUBLE}, [{'code': 'x', 'n': 2}], ['b', NULL], '{"b": 1, "a": [1.0]}'::JSON,
             9223372036854775807, true, 1e16),
            ('e2', NULL, [], NULL, NULL, NULL, NULL, '-0.0'::DOUBLE)
        ) v(episode_id, metrics, failures, codes, basis, big, ok, score)
    """)
    relation = con.sql("SELECT * FROM t")
    columns = dict(zip(relation.columns, relation.types))
    lines = [text for (text,) in con.sql(f"SELECT {row_sql(columns, 't')} FROM t ORDER BY episode_id").fetchall()]
    assert lines == [
        '{"basis":{"b": 1, "a": [1.0]},"big":9223372036854775807,"codes":["b",null],"episode_id":"e1",'
        '"failures":[{"code":"x","n":2}],"metrics":{"a":null,"z":1.5},"ok":true,"score":1e+16}',
        '{"basis":null,"big":null,"codes":null,"episode_id":"e2","failures":[],"metrics":null,"ok":null,"score":-0.0}',
    ]


def test_json_values_as_canonical_json_writes_what_orjson_reads():
    con = _connection()
    stored = [None, "null", "true", " false ", '"a\\u001Fb é"', '"\\u00e9"', '{"b": 1, "a": {"d": 1.0, "c": [1e5, -0]}}', "2.50", "[3, true]"]
    written = [text for (text,) in con.sql(f"SELECT {json_sql('j')} FROM (SELECT unnest(?::JSON[]) AS j)", params=[stored]).fetchall()]
    assert written == [
        "null", "null", "true", "false", '"a\\u001fb é"', '"é"', '{"a":{"c":[100000.0,0],"d":1.0},"b":1}', "2.5", "[3,true]",
    ]


@pytest.mark.parametrize("kind", ["TIMESTAMP", "MAP(VARCHAR, INTEGER)", "HUGEINT", "DECIMAL(4,2)"])
def test_a_type_without_an_exact_text_is_refused(kind):
    with pytest.raises(TypeError, match="no canonical JSON text"):
        value_sql("x", duckdb.sqltype(kind))
