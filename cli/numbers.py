"""The CLI's number types: each number a flag takes fits where it goes, or is refused when
typed, naming the flag. The log keeps flags as JSON (no inf or nan; orjson writes integers of
64 bits at most) and its views read counts as INTEGER (32 bits): a value past those ran a whole
run before failing as it was written, and left a run no view could read."""

from __future__ import annotations

import math
from typing import Any

import click

from eviscene.rules.sizes import byte_size

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


class ByteSize(click.ParamType):
    """An amount of memory or disk as DuckDB writes one (`rules.sizes.byte_size`), at least
    `minimum` bytes, given on as bytes."""

    name = "size"

    def __init__(self, minimum: int = 0, why: str = ""):
        self.minimum, self.why = minimum, why

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        try:
            size = byte_size(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
        if size < self.minimum:
            self.fail(f"{value!r} is less than {self.minimum // 10**6}MB{self.why}", param, ctx)
        return size


# Below a few MB DuckDB takes the setting, then fails every query, `SELECT 1` included.
MEMORY_SIZE = ByteSize(64 * 10**6, ", too little for DuckDB to answer any query")
