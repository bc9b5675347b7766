from datetime import datetime, timedelta, timezone

from hypothesis import given
from hypothesis.strategies import booleans, dictionaries, floats, integers, lists, none, recursive, text

from eviscene.rules.canonical import (
    _canonical_by_python,
    canonical_json,
    canonical_json_bytes,
    canonical_json_exact,
    canonical_json_indented,
    canonical_json_line,
    readable_json,
    seed_canonical_json,
)
from eviscene.rules.jsonl import loads_exactly
from eviscene.rules.timestamps import format_ts

VALUE = {"b": 1, "a": [0.1, 1e-7, "é"], "c": None}


def test_canonical_json_sorts_keys_compact_utf8_shortest_floats():
    assert canonical_json(VALUE) == '{"a":[0.1,1e-7,"é"],"b":1,"c":null}'
    assert canonical_json_bytes(VALUE) == '{"a":[0.1,1e-7,"é"],"b":1,"c":null}'.encode()
    assert canonical_json_line(VALUE) == '{"a":[0.1,1e-7,"é"],"b":1,"c":null}\n'.encode()


def test_canonical_json_indented():
    assert canonical_json_indented({"b": 1, "a": [2]}) == '{\n  "a": [\n    2\n  ],\n  "b": 1\n}'


def test_seed_canonical_json_is_pythons_json_dumps():
    # Python's float repr (1e-07), not orjson's; ASCII escapes only when asked.
    assert seed_canonical_json(VALUE, ensure_ascii=False) == '{"a":[0.1,1e-07,"é"],"b":1,"c":null}'
    assert seed_canonical_json(VALUE, ensure_ascii=True) == '{"a":[0.1,1e-07,"\\u00e9"],"b":1,"c":null}'


def test_readable_json_keeps_pythons_separators():
    assert readable_json({"b": 1, "a": "é"}) == '{"a": "é", "b": 1}'


def test_format_ts_is_utc_with_microseconds():
    ts = datetime(2026, 11, 30, 14, 39, 14, 120017, tzinfo=timezone(timedelta(hours=1)))
    assert format_ts(ts) == "2026-11-30T13:39:14.120017Z"


JSON_VALUES = recursive(
    none() | booleans() | integers(-(2**63), 2**64 - 1) | floats(allow_nan=False) | text(),
    lambda inner: lists(inner, max_size=4) | dictionaries(text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


@given(JSON_VALUES)
def test_pythons_writer_gives_orjsons_bytes_for_what_orjson_writes(value):
    """The fallback for what orjson refuses must not change a byte of anything else beside it."""
    assert _canonical_by_python(value) == canonical_json_bytes(value)


def test_an_integer_past_64_bits_and_deep_nesting_are_written_exactly_beside_orjsons_floats():
    """orjson refuses both; seed 002's json.dumps writes both, and an imported row may hold them."""
    deep: list = [0.00001]
    for _ in range(300):
        deep = [deep]
    value = {"b": 2**70, "a": [1e-5, 1e16, -(2**63) - 1, float("nan")], "d": deep}
    line = canonical_json_line(value)
    assert line == (b'{"a":[0.00001,1e+16,-9223372036854775809,null],"b":1180591620717411303424,"d":'
                    + b"[" * 301 + b"0.00001" + b"]" * 301 + b"}\n")
    assert canonical_json_exact(value).encode() + b"\n" == line
    assert loads_exactly(line)["b"] == 2**70 and loads_exactly(line[:-1].decode())["a"][2] == -(2**63) - 1
