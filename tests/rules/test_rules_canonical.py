from datetime import datetime, timedelta, timezone

from eviscene.rules.canonical import (
    canonical_json,
    canonical_json_bytes,
    canonical_json_indented,
    canonical_json_line,
    readable_json,
    seed_canonical_json,
)
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
