"""The kinds of stream a log holds, and how messages count them. A stream is a run (`eval
run`, merged shards: it owes a `run.finished`) or a record stream, which opens with the
record of an `eviscene import` or a `dataset export` and has no end event."""

from __future__ import annotations

from collections.abc import Mapping

# A record stream's first event type -> its kind.
RECORD_OPENERS = {"artifact.imported": "import", "dataset.exported": "export"}


def stream_kind(opener: str) -> str:
    """`run`, `import` or `export`, from the type of a stream's first event."""
    return RECORD_OPENERS.get(opener, "run")


def count_streams(counts: Mapping[str, int]) -> str:
    """`2 run(s), 1 import stream(s)` from streams counted by kind: runs always, a record kind
    only where there is one."""
    return ", ".join([f"{counts.get('run', 0)} run(s)"] + [
        f"{counts[kind]} {kind} stream(s)" for kind in RECORD_OPENERS.values() if counts.get(kind)])
