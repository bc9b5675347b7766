"""`eviscene log merge`: fold other logs (shards of one run, or separate runs) into this
log's archive. The source is verified in full first (chains, segments, records): a broken
one, or one with a run still being written, is refused before anything moves. Events
already present (same event_id) are skipped, so merging twice is a no-op; a run present in
both logs with different events is refused. The source's segment records come along, so
the target's `log verify` checks the merged runs' ranges too."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from eviscene.errors import EvisceneError, LogIntegrityError, LogLockedError
from eviscene.store.faults import checkpoint
from eviscene.store.layout import live_root, live_run_ids
from eviscene.store.migrate import apply_migrations
from eviscene.store.seal import seal_runs
from eviscene.store.schema import BLOB_COLUMNS, EVENT_COLUMNS
from eviscene.store.snapshot import attach_archive_as, open_snapshot
from eviscene.store.verify import RECORD_COLUMNS, segment_records, verify_log


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
    report = verify_log(source)
    if report.problems:
        raise LogIntegrityError(f"{source} not merged: {report.problems[0]}; nothing was taken in")
    if report.running:
        raise LogLockedError(f"{source} not merged: {report.running[0]}; merge it when it ends")
    checkpoint("merge.verified")
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
        records = segment_records(con, source)
        if records:
            con.executemany(
                f"INSERT OR IGNORE INTO merged.sealed_segments ({RECORD_COLUMNS}, sealed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, now())",
                [list(r) for r in records],
            )
        checkpoint("merge.before_commit")
        con.execute("COMMIT")
        checkpoint("merge.committed")
    except duckdb.ConstraintException as exc:
        raise EvisceneError(f"merging {source} would break the log's uniqueness: {exc}") from None
    finally:
        con.close()
    return MergeReport(source=source, events=events, blobs=blobs)
