"""Python's text forms of JSON values, for the dataset views that must reproduce the seed's
comparisons and hashes (registered in SQL as `py_value_text` and `json_ascii`; the SQL macros
py_text and py_json_string handle plain strings themselves and call these for the rest), so
SQL never re-implements them; and Python's white space, as the SQL macros py_strip
(`str.strip()`) and py_blank (`not s.strip()`)."""

from __future__ import annotations

import json


def py_value_text(json_text: str | None) -> str:
    """`str(value)` of the JSON value `json_text` holds, as the seed's `str(row.get(key))`
    reads it: `"a b"` -> `a b`, `null` -> `None`, `true` -> `True`, `1.0` -> `1.0`,
    `["a", 1]` -> `['a', 1]`; no value at all (SQL NULL: the key is missing) -> `None`, as
    `row.get(key)` gives."""
    return "None" if json_text is None else str(json.loads(json_text))


def json_ascii(text: str | None) -> str:
    """`json.dumps(text)` with Python's default `ensure_ascii=True`: `é` -> `"\\u00e9"`."""
    return json.dumps(text)


# The characters for which `str.isspace()` is true, as an RE2 class (a test checks every code
# point). RE2's \s is only tab, newline, form feed, carriage return and space, and DuckDB's
# trim() only the space.
PY_SPACE = r"[\t\n\x{0b}\f\r\x{1c}-\x{1f} \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]"

# name -> the macro's parameters and body, created on a connection whose views name it.
SQL_MACROS = {
    # `s.strip()`
    "py_strip": f"(s) AS regexp_replace(s, '^{PY_SPACE}+|{PY_SPACE}+$', '', 'g')",
    # `not s.strip()`, as the strict JSONL reader skips a blank line (RE2 stops at the first
    # other character: on long lines this costs less than ltrim, which copies the line)
    "py_blank": f"(s) AS regexp_full_match(s, '{PY_SPACE}*')",
}
