"""Regression: blob files were once named `blobs-<pid>-<counter>.parquet` with a counter
restarting for every writer, so a second writer session on the same run in the same process
(`eval run` then `eval resume` driven from Python, two `EventLog.append` calls carrying
blobs) replaced the first session's blob file and its blobs (model requests, gold) vanished.
"""

import hashlib

import anyio

from eviscene.events import ArtifactImported
from eviscene.log import EventLog
from eviscene.store import EventDraft


async def _session(log: EventLog, content: bytes, kind: str) -> str:
    async with log.writer("blob-run") as writer:
        digest = await writer.put_blob(content, "application/json")
        await writer.emit(EventDraft(ArtifactImported(kind=kind, path=f"/x/{kind}.json", sha256=digest, blob_sha256=digest, rows=1)))
    return digest


def test_views_second_writer_session_keeps_first_sessions_blobs(tmp_path):
    log = EventLog(tmp_path / "blobs.duckdb")
    first = anyio.run(_session, log, b'{"first": 1}', "first")
    second = anyio.run(_session, log, b'{"second": 2}', "second")
    assert first == hashlib.sha256(b'{"first": 1}').hexdigest()
    con = log.connect(views=False)
    try:
        stored = {sha256 for (sha256,) in con.sql("SELECT sha256 FROM blobs").fetchall()}
    finally:
        con.close()
    assert {first, second} <= stored
