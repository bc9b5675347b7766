"""`eviscene log merge`: fold other logs (shards of one run, or separate runs) into this
log's archive. Events already present (same event_id) are skipped, so merging twice is a
no-op; a run present in both logs with different events is refused."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from eviscene.errors import EvisceneError
from eviscene.store.layout import live_root, live_run_ids
from eviscene.store.migrate import apply_migrations
from eviscene.store.seal import seal_runs
from eviscene.store.schema import BLOB_COLUMNS, EVENT_COLUMNS
from eviscene.store.snapshot import attach_archive_as, open_snapshot


@dataclass(frozen=True)
class MergeReport:
    source: Path
    events: int
    blobs: int


def merge_log(target: Path, source: Path) -> MergeReport:
    if source.resolve() == target.resolve():
        raise EvisceneError(f"cannot merge {source} into itself")
    if not source.exists() and not live_root(source).exists():
        raise EvisceneError(f"no log at {source}")
    seal_runs(target)  # this log's finished runs first, so the archive holds all of them
    con = open_snapshot(source)  # the source's events and blobs, sealed and live
    try:
        attach_archive_as(con, target, "merged")
        apply_migrations(con, "merged")
        writing = set(live_run_ids(target)) & {row[0] for row in con.execute("SELECT DISTINCT run_id FROM events").fetchall()}
        if writing:
            raise EvisceneError(f"run {sorted(writing)[0]} is still being written in {target}; merge it when it ends")
        clashes = con.execute(
            "SELECT s.run_id, s.seq FROM events s JOIN merged.events t USING (run_id, seq) "
            "WHERE s.event_id <> t.event_id ORDER BY 1, 2 LIMIT 1"
        ).fetchall()
        if clashes:
            run_id, seq = clashes[0]
            raise EvisceneError(f"run {run_id} exists in both logs with different events (seq {seq}); not merged")
        con.execute("BEGIN")
        blobs = con.execute(
            f"INSERT INTO merged.blobs SELECT DISTINCT ON (sha256) {BLOB_COLUMNS} FROM blobs "
            "WHERE sha256 NOT IN (SELECT sha256 FROM merged.blobs)"
        ).fetchall()[0][0]
        events = con.execute(
            f"INSERT INTO merged.events SELECT {EVENT_COLUMNS} FROM events "
            "WHERE event_id NOT IN (SELECT event_id FROM merged.events) ORDER BY run_id, seq"
        ).fetchall()[0][0]
        con.execute("COMMIT")
    except duckdb.ConstraintException as exc:
        raise EvisceneError(f"merging {source} would break the log's uniqueness: {exc}") from None
    finally:
        con.close()
    return MergeReport(source=source, events=events, blobs=blobs)
