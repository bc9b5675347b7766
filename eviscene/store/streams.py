"""The kinds of stream a log holds, and how messages count them. A stream is a run (`eval
run`, merged shards: it owes a `run.finished`) or a record stream, which opens with the
record of an `eviscene import` or a `dataset export` and has no end event."""

from __future__ import annotations

from collections.abc import Mapping

# A record stream's first event type -> its kind.
RECORD_OPENERS = {"artifact.imported": "import", "dataset.exported": "export"}


def announced_after(opener: str, payload: dict, run_id: str) -> int | None:
    """How many events a record stream holds after its opener, as the opener (inside the
    chain) announces them; None when it does not say. An `eviscene import` opens with its
    source's record, `rows` its files, one event each (`imports/record.py`); a dataset export
    is its one event. Other streams opening with `artifact.imported` (written by hand or by
    older code: no `import_id` naming the stream) announce nothing."""
    if opener == "dataset.exported":
        return 0
    if opener == "artifact.imported" and (payload.get("metadata") or {}).get("import_id") == run_id:
        return payload.get("rows", 0)
    return None


def stream_kind(opener: str) -> str:
    """`run`, `import` or `export`, from the type of a stream's first event."""
    return RECORD_OPENERS.get(opener, "run")


def count_streams(counts: Mapping[str, int]) -> str:
    """`2 run(s), 1 import stream(s)` from streams counted by kind: runs always, a record kind
    only where there is one."""
    return ", ".join([f"{counts.get('run', 0)} run(s)"] + [
        f"{counts[kind]} {kind} stream(s)" for kind in RECORD_OPENERS.values() if counts.get(kind)])
