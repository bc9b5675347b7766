"""Trace file names: the seed's run layout (`traces/<name>`) and the materialized run
directory name each episode's trace file the same way, and SQL does too
(registered as `safe_trace_filename`). The runtime ids a trace mentions, for the dataset
views (registered as `trace_runtime_id_list`)."""

from __future__ import annotations

import json
from typing import Any

import orjson


def safe_trace_filename(identifier: str) -> str:
    """``<identifier>.json`` with every character that is not alphanumeric (Unicode-aware
    ``str.isalnum``) or one of ``-_.`` replaced by ``_`` (seed). Distinct identifiers can
    map to the same name (``a/b`` and ``a_b``); callers that need uniqueness check it."""
    safe_id = "".join(
        character if character.isalnum() or character in "-_." else "_"
        for character in str(identifier)
    )
    return f"{safe_id}.json"


def runtime_ids(trace_json: str) -> list[str]:
    """Seed `_collect_runtime_ids`: every string under a key ending in `_id` and every item
    of a list under a key ending in `_ids`, whatever its type, as `str(item).strip()` (an
    object as `{'k': 1}`, null as `None`), non-blank, distinct, sorted; objects and lists
    are searched at any depth, those inside an `_ids` list too.
    `{"a": {"case_id": " c "}, "tool_ids": [2, {"x_id": "x"}], "n_id": 3}` ->
    `["2", "c", "x", "{'x_id': 'x'}"]`. (In Python, not SQL: DuckDB's json_tree over every
    trace was the largest cost of a dataset export.)"""
    found: set[str] = set()
    try:
        _collect(orjson.loads(trace_json), found)
    except (orjson.JSONDecodeError, _NeedsPythonParse):
        # Python's parser, as the seed's: orjson refuses NaN and lone surrogates and reads
        # integers beyond 64 bits as floats, so an `_ids` list holding a float, or an object
        # or list whose str() shows its numbers, is read again
        found.clear()
        _collect(json.loads(trace_json), found, python_parsed=True)
    found.discard("")
    return sorted(found)


class _NeedsPythonParse(Exception):
    pass


def _collect(value: Any, found: set[str], python_parsed: bool = False) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str):
                if key.endswith("_id"):
                    found.add(item.strip())
            elif isinstance(item, (dict, list)):
                if isinstance(item, list) and key.endswith("_ids"):
                    if not python_parsed and any(isinstance(element, (float, dict, list)) for element in item):
                        raise _NeedsPythonParse
                    found.update(str(element).strip() for element in item)
                _collect(item, found, python_parsed)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)):
                _collect(item, found, python_parsed)
