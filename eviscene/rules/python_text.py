"""Python's text forms of JSON values, for the dataset views that must reproduce the seed's
comparisons and hashes (registered in SQL as `py_value_text` and `json_ascii`; the SQL macros
py_text and py_json_string handle plain strings themselves and call these for the rest), so
SQL never re-implements them."""

from __future__ import annotations

import json


def py_value_text(json_text: str) -> str:
    """`str(value)` of the JSON value `json_text` holds, as the seed's `str(row.get(key))`
    reads it: `"a b"` -> `a b`, `null` -> `None`, `true` -> `True`, `1.0` -> `1.0`,
    `["a", 1]` -> `['a', 1]`."""
    return str(json.loads(json_text))


def json_ascii(text: str | None) -> str:
    """`json.dumps(text)` with Python's default `ensure_ascii=True`: `é` -> `"\\u00e9"`."""
    return json.dumps(text)
