"""Chain heads kept outside the log: what makes a rewritten log show.

The chain proves a run's events are the ones hashed in; it cannot prove they are the ones
first written, since whoever can write the log can rewrite an event and hash every later
one again. A head (run, seq, hash), kept where the log's writers cannot reach (a commit, a
paper, a message), pins each run's events up to that seq: a log that still holds them holds
that hash at that seq, however it has grown since.

A heads file is JSON lines, one stream each, by run id: {"run_id": …, "seq": …, "hash": …}.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import orjson

from eviscene.errors import EvisceneError

Heads = Mapping[str, tuple[int, str]]  # run id -> (seq, hash) of an event of its chain

_HASH = re.compile(r"[0-9a-f]{64}")


def heads_text(heads: Heads) -> str:
    return "".join(
        orjson.dumps({"run_id": run_id, "seq": seq, "hash": hash_}).decode() + "\n"
        for run_id, (seq, hash_) in sorted(heads.items())
    )


def read_heads(path: Path) -> dict[str, tuple[int, str]]:
    """The heads a file records: EvisceneError naming the file and line of one that is not a head,
    or the file where it records none."""
    try:
        lines = path.read_bytes().splitlines()
    except OSError as exc:
        raise EvisceneError(f"heads file {path}: {exc.strerror or exc}") from None
    heads: dict[str, tuple[int, str]] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            head = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise EvisceneError(f"{where}: not a JSON line") from None
        if not (
            isinstance(head, dict) and set(head) == {"run_id", "seq", "hash"} and isinstance(head["run_id"], str)
            and type(head["seq"]) is int and head["seq"] >= 1
            and isinstance(head["hash"], str) and _HASH.fullmatch(head["hash"])
        ):
            raise EvisceneError(f'{where}: not a head: {{"run_id": …, "seq": N ≥ 1, "hash": 64 hex digits}}, as `log verify --save-heads` writes')
        if head["run_id"] in heads:
            raise EvisceneError(f"{where}: run {head['run_id']!r} has a head already")
        heads[head["run_id"]] = (head["seq"], head["hash"])
    if not heads:  # checking no head would say ok of anything: a truncated copy or the wrong file, most likely
        raise EvisceneError(f"heads file {path} records no head: nothing to check the log against")
    return heads
