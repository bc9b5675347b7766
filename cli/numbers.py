"""The CLI's number types: each number a flag takes fits where it goes, or is refused when
typed, naming the flag. The log keeps flags as JSON (no inf or nan; orjson writes integers of
64 bits at most) and its views read counts as INTEGER (32 bits): a value past those ran a whole
run before failing as it was written, and left a run no view could read."""

from __future__ import annotations

import math
import re
from typing import Any

import click

INT32_MAX = 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class Finite(click.FloatRange):
    """A number in a range, neither nan (every comparison calls it false, so it passes any
    range) nor infinite (JSON holds neither)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):  # said so before any range, which `inf` is outside of too
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(number, param, ctx)

    def _describe_range(self) -> str:
        """The range `--help` shows, none when unbounded (click's own read `x<=None`)."""
        return "" if self.min is None and self.max is None else super()._describe_range()


def count(minimum: int | None = None) -> click.IntRange:
    """A count the views read as INTEGER."""
    return click.IntRange(min=minimum, max=INT32_MAX)


class _Int64(click.IntRange):
    def _describe_range(self) -> str:
        """No range in `--help` where the bound is only the 64 bits (`-9223372036854775808<=x<=…` says nothing)."""
        if (self.min, self.max) == (INT64_MIN, INT64_MAX):
            return ""
        return f"x>={self.min}" if self.max == INT64_MAX else super()._describe_range()


def int64(minimum: int = INT64_MIN) -> click.IntRange:
    """A number the views compare as BIGINT (a token limit), from `minimum`."""
    return _Int64(minimum, INT64_MAX)


INT64 = int64()  # a seed

_SIZE = re.compile(r"(\d+(?:\.\d+)?) *([KMGT]?)(I?)B?", re.IGNORECASE)


class ByteSize(click.ParamType):
    """An amount of memory or disk as DuckDB writes one (`4GB`, `500MB`, `2GiB`: a G is 1000³
    bytes, a GiB 1024³), at least `minimum` bytes; passed on as DuckDB's bytes (`4000000000B`).
    Below a few MB DuckDB set such a limit and then failed every query, even `SELECT 1`."""

    name = "size"

    def __init__(self, minimum: int = 64 * 10**6):
        self.minimum = minimum

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        found = _SIZE.fullmatch(str(value).strip())
        if found is None:
            self.fail(f"{value!r} is not a size (e.g. 4GB, 500MB, 2GiB)", param, ctx)
        number, prefix, binary = found.groups()
        size = int(float(number) * (1024 if binary else 1000) ** " KMGT".index(prefix.upper() or " "))
        if size < self.minimum:
            self.fail(f"{value!r} is less than {self.minimum // 10**6}MB, too little for DuckDB to answer any query", param, ctx)
        return f"{size}B"
