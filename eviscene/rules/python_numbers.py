"""Python's arithmetic where a seed's numbers depend on it (registered in SQL, so the views
never approximate it)."""

from __future__ import annotations

import math
import statistics


def mean_rounded(values: list[float] | None, places: int) -> float:
    """`round(statistics.mean(values), places)`, 0.0 for no values: seed 000's summary.json
    means. statistics.mean is exact (fractions, so the order of the values does not matter)
    and round() rounds that exact binary value half to even: a mean of 0.0025, stored a hair
    above it, is 0.003, where DuckDB's round_even of the double or of a DECIMAL gives 0.002."""
    return float(round(statistics.mean(values), places)) if values else 0.0


def float_text(text: str | None) -> float | None:
    """`float(text)` as seed 002 reads a score given as a string (`float(score["total"] or
    0.0)`): Python also takes Unicode digits, Unicode white space and `_` between digits
    (`"\u0663"` -> 3.0, `"\u00a02\u00a0"` -> 2.0, `"1_000"` -> 1000.0); a text it cannot read
    -> None (the seed stops there, and so does a dataset export: see py_float_refuses), as is NULL."""
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def float_is_nan(text: str | None) -> bool:
    """Whether `float(text)` reads NaN (" -NaN ", "\u00a0nan"): DuckDB holds the NaN a Python
    function returns as NULL, so `float_text` cannot tell it from a refusal."""
    value = float_text(text)
    return value is not None and math.isnan(value)
