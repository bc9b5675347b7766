"""Amounts of memory or disk as DuckDB writes them (`4GB`, `500MB`, `2GiB`, `1.5T`: a G is
1000³ bytes, a GiB 1024³), read into a whole number of bytes: one reading for the CLI's flags
and the library's arguments, so that only a number ever reaches DuckDB's `SET`."""

from __future__ import annotations

import re

_SIZE = re.compile(r"(\d+(?:\.\d+)?) *(?:([KMGT])(I?))?B?", re.IGNORECASE)
_MOST = 2**63 - 1  # DuckDB's own bound for a memory or disk setting


def byte_size(value: str | int) -> int:
    """`value` in bytes (an int is bytes already); ValueError for what is no size."""
    if isinstance(value, int) and not isinstance(value, bool):
        size = value
    else:
        found = _SIZE.fullmatch(str(value).strip())
        if found is None:
            raise ValueError(f"{value!r} is not a size (e.g. 4GB, 500MB, 2GiB)")
        number, prefix, binary = found.groups()
        size = int(float(number) * (1024 if binary else 1000) ** " KMGT".index((prefix or " ").upper()))
    if not 0 <= size <= _MOST:
        raise ValueError(f"{value!r} is outside what DuckDB takes (0 to {_MOST:,} bytes)")
    return size
