"""Trace file names: the seed's run layout (`traces/<name>`) and the materialized run
directory name each episode's trace file the same way, and SQL does too
(registered as `safe_trace_filename`)."""

from __future__ import annotations


def safe_trace_filename(identifier: str) -> str:
    """``<identifier>.json`` with every character that is not alphanumeric (Unicode-aware
    ``str.isalnum``) or one of ``-_.`` replaced by ``_`` (seed). Distinct identifiers can
    map to the same name (``a/b`` and ``a_b``); callers that need uniqueness check it."""
    safe_id = "".join(
        character if character.isalnum() or character in "-_." else "_"
        for character in str(identifier)
    )
    return f"{safe_id}.json"
