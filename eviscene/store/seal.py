"""Sealing: copy a run's committed live segments into the DuckDB archive in one
transaction, then delete them. Readers see the same events before and after.

A seal checks before it moves anything: every segment against its manifest line (sha256,
rows), the chain across them (gapless seq, each event's hash and prev_hash, continuing
the archive's part of the run), each blob's content against its address, and that every blob
the run's events cite is in the log (`log verify`'s rule). A run that fails is refused with
the reason, the archive unchanged and its live folder kept. The run's folder is removed
while the seal still holds the run lock, so a resume waiting for the lock finds either the
live run or the sealed one, never a half-removed folder (`locks.py` explains how the
waiting writer sees through the removed lock file).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from eviscene.errors import EvisceneError, LogIntegrityError, LogLockedError, no_run_error
from eviscene.rules.commands import command_line
from eviscene.store.chain import GENESIS_HASH
from eviscene.store.faults import checkpoint
from eviscene.store.layout import live_run_ids, read_parquet, run_folder
from eviscene.store.locks import RunLock
from eviscene.store.manifest import (
    BLOBS_FILE, EVENTS_FILE, MANIFEST, ManifestEntry, committed, file_sha256, read_manifest, recover_folder,
)
from eviscene.store.migrate import apply_migrations
from eviscene.store.schema import BLOB_COLUMNS, EVENT_COLUMNS
from eviscene.store.snapshot import attach_archive, closed_on_failure, new_connection, open_snapshot, read_a_snapshot
from eviscene.store.verify import RECORD_COLUMNS, altered_blobs, missing_blobs, ordered_events, sealed_files, walk_chains


def open_archive_for_writing(log_path: Path):
    con = new_connection()
    with closed_on_failure(con):
        attach_archive(con, log_path, read_only=False)
        apply_migrations(con)
    return con


def seal_runs(log_path: Path, run_ids: list[str] | None = None) -> list[str]:
    """Seal the given runs (default: every live run no writer holds); returns those sealed.
    A named run that is not in the log, or one that fails its checks, is an error."""
    candidates = live_run_ids(log_path) if run_ids is None else run_ids
    sealed = []
    for run_id in candidates:
        folder = run_folder(log_path, run_id)  # InvalidRunIdError for a name no run can have
        if not folder.is_dir():
            if not _archived_tail(log_path, run_id)[0]:
                raise no_run_error(run_id, log_path, _known_run_ids(log_path))
            continue  # sealed already
        lock = RunLock(folder / "writer.lock", run_id)
        try:
            lock.acquire()
        except LogLockedError:
            if run_ids is not None:
                raise
            continue  # still being written; sealed when its writer finishes
        try:
            recover_folder(folder)
            try:
                moved = _seal_folder(log_path, run_id, folder)
            except duckdb.ConstraintException as exc:  # two writers named one event id at once (writer.py)
                raise LogIntegrityError(
                    f"run {run_id} not sealed: {str(exc).splitlines()[0]} (an event id another run holds); the archive "
                    "is unchanged and the run's live segments are kept and readable"
                ) from None
            except (duckdb.IOException, duckdb.TransactionException) as exc:  # a full disk, a read-only archive
                raise EvisceneError(
                    f"could not seal run {run_id}: {str(exc).splitlines()[0]}; nothing was moved (its live segments are "
                    f"kept and readable): fix that, then `{command_line('log', 'seal', run_id, log=log_path)}`"
                ) from None
            if moved:
                sealed.append(run_id)
            checkpoint("seal.copied")
            _remove_folder(folder)
        finally:
            lock.release()
    return sealed


@contextlib.contextmanager
def _archive_read_only(log_path: Path) -> Iterator[duckdb.DuckDBPyConnection | None]:
    """A connection to the archive, read without writing (so a refused seal leaves the archive
    file as it was); None when there is no archive yet."""
    if not log_path.exists():
        yield None
        return
    con = new_connection()
    try:
        attach_archive(con, log_path, read_only=True)
        yield con if con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'archive' AND table_name = 'sealed_segments'"
        ).fetchone()[0] else None
    finally:
        con.close()


def _archived_tail(log_path: Path, run_id: str) -> tuple[list[tuple], dict[str, str]]:
    """The run's last archived event (seq, hash) if any, and the files sealed from its folder
    with their sha256."""
    with _archive_read_only(log_path) as con:
        if con is None:
            return [], {}
        last = con.execute("SELECT seq, hash FROM archive.events WHERE run_id = ? ORDER BY seq DESC LIMIT 1", [run_id]).fetchall()
        done = {name: sha for (_run, name), sha in sealed_files(con, run_id).items()}
        return last, done


def _known_run_ids(log_path: Path) -> list[str]:
    """The runs the log holds, live or sealed: those a mistyped run name is matched against."""
    with _archive_read_only(log_path) as con:
        sealed = [] if con is None else [row[0] for row in con.execute("SELECT DISTINCT run_id FROM archive.sealed_segments").fetchall()]
    return live_run_ids(log_path) + sealed


def _seal_folder(log_path: Path, run_id: str, folder: Path) -> bool:
    """Check, then copy what the archive lacks; False when that held no event: nothing (e.g.
    an interrupted seal's leftovers), or blobs alone (a run killed before its first event,
    no run to call sealed)."""
    last, done = _archived_tail(log_path, run_id)
    manifest = committed(read_manifest(folder) or [])
    for entry in manifest:  # skipped as sealed, then deleted with the folder: it must be the sealed one
        if entry.file in done and done[entry.file] not in (None, entry.sha256):
            raise LogIntegrityError(
                f"run {run_id} not sealed: live segment {entry.file} is not the segment sealed under its name (another "
                "sha256): a second writer of the run wrote it; the archive is unchanged and the live folder kept"
            )
    _refuse_sealed_but_not_held(log_path, run_id, folder, [e for e in manifest if e.file in done])
    entries = [e for e in manifest if e.file not in done]
    if not entries:
        return False
    check_segments(run_id, folder, entries, (last[0][0], last[0][1]) if last else (0, GENESIS_HASH))
    check_cited_blobs(log_path, run_id)
    checkpoint("seal.checked")
    events = [folder / e.file for e in entries if e.is_events]
    blobs = [folder / e.file for e in entries if not e.is_events]
    con = open_archive_for_writing(log_path)
    try:
        _copy(con, run_id, entries, events, blobs)
    finally:
        con.close()
    return bool(events)


def _refuse_sealed_but_not_held(log_path: Path, run_id: str, folder: Path, sealed: list[ManifestEntry]) -> None:
    """A live segment recorded as sealed is deleted with the folder: only if the archive holds
    its rows (a record alone, planted or left by an edit that deleted the rows, would have
    the seal delete the one copy there is)."""
    # One a killed seal deleted already is gone from the folder: nothing of it is left to lose.
    sealed = [entry for entry in sealed if (folder / entry.file).exists()]
    if not sealed:
        return
    con = new_connection()
    try:
        attach_archive(con, log_path, read_only=True)
        for entry in sealed:
            if entry.is_events:
                held = con.execute(
                    "SELECT count(*) FROM archive.events WHERE run_id = ? AND seq BETWEEN ? AND ?",
                    [run_id, entry.first_seq, entry.last_seq],
                ).fetchone()[0]
                lacking = f"seq {entry.first_seq}..{entry.last_seq}" if held != entry.rows else None
            else:
                held = con.execute(
                    f"SELECT count(*) FROM {read_parquet([folder / entry.file])} s "
                    "WHERE s.sha256 NOT IN (SELECT sha256 FROM archive.blobs)"
                ).fetchone()[0]
                lacking = f"{held} of its blobs" if held else None
            if lacking:
                raise LogIntegrityError(
                    f"run {run_id} not sealed: live segment {entry.file} is recorded as sealed, but the archive lacks "
                    f"{lacking} (its rows deleted, or the record made by hand); the archive is unchanged and the live "
                    f"folder kept: `{command_line('log', 'verify', log=log_path)}` names the damage"
                )
    finally:
        con.close()


def _copy(con: duckdb.DuckDBPyConnection, run_id: str, entries: list[ManifestEntry], events: list[Path], blobs: list[Path]) -> None:
    con.execute("BEGIN")
    if blobs:
        segments = read_parquet(blobs)
        # A blob the segments hold twice (a second writer session's) is stored once. DISTINCT ON
        # carries every blob's content through an aggregate (~40% of this insert at 100k blobs),
        # so only when the sha256 column alone shows a repeat.
        repeated = con.execute(f"SELECT count(*) <> count(DISTINCT sha256) FROM {segments}").fetchone()[0]
        con.execute(
            f"INSERT INTO archive.blobs SELECT {'DISTINCT ON (sha256) ' if repeated else ''}{BLOB_COLUMNS} FROM {segments} "
            "WHERE sha256 NOT IN (SELECT sha256 FROM archive.blobs)"
        )
    if events:
        con.execute(
            f"INSERT INTO archive.events SELECT {EVENT_COLUMNS} FROM {read_parquet(events)} "
            "WHERE event_id NOT IN (SELECT event_id FROM archive.events WHERE run_id = ?) ORDER BY seq",
            [run_id],
        )
    con.executemany(
        f"INSERT INTO archive.sealed_segments ({RECORD_COLUMNS}, sealed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, now())",
        [[run_id, e.file, e.rows, e.sha256, e.first_seq, e.last_seq, e.first_prev_hash, e.last_hash] for e in entries],
    )
    con.execute("COMMIT")


def check_segments(run_id: str, folder: Path, entries: list[ManifestEntry], start: tuple[int, str]) -> None:
    """Refuse (LogIntegrityError) a run whose segments are missing, altered, leave a gap or
    break the chain, which continues from `start`, the archive's last (seq, hash) of the run."""

    def refuse(first: int | None, last: int | None, why: str) -> None:
        where = f", seq {first}..{last}" if first is not None else ""
        raise LogIntegrityError(f"run {run_id}{where} not sealed: {why}; the archive is unchanged")

    for entry in entries:
        path = folder / entry.file
        if not path.exists():
            refuse(entry.first_seq, entry.last_seq, f"segment {entry.file} is missing")
        if file_sha256(path) != entry.sha256:
            refuse(entry.first_seq, entry.last_seq, f"segment {entry.file} was altered (sha256 differs from its manifest line)")
    for entry in entries:
        if not entry.is_events:
            blobs = pq.ParquetFile(folder / entry.file).iter_batches(1_000, columns=["sha256", "size", "content"])
            for problem in altered_blobs(blobs):
                refuse(None, None, f"{problem} in {entry.file}")
    events = [folder / e.file for e in entries if e.is_events]
    if not events:
        return
    con = new_connection()
    try:
        walk = walk_chains(ordered_events(con, read_parquet(events)), start={run_id: start})
    finally:
        con.close()
    others = sorted(set(walk.tails) - {run_id}, key=str)
    if others:  # a segment of this run holding another's events (a forged one): sealed, they would join that run
        refuse(None, None, f"its segments hold events of {'another run' if len(others) == 1 else 'other runs'}: {', '.join(map(repr, others))}")
    for problem in walk.problems:
        refuse(problem.seq, problem.seq, f"{problem.problem} ({problem.event_id})")
    recorded_end = max(e.last_seq for e in entries if e.is_events)  # type: ignore[type-var]
    tail = walk.tails.get(run_id, (start[0],))[0]
    if tail != recorded_end:
        refuse(tail + 1, recorded_end, "events missing from their segments")


def check_cited_blobs(log_path: Path, run_id: str) -> None:
    """Refuse a run citing a blob the log no longer holds (its segment deleted): sealed, the
    loss would be archived and the folder it could be restored into removed. Looked for in
    the whole log, not the run's folder alone: a writer stores a blob once a log, so a run
    may cite one that another run stored. Reading the others' live segments, it may meet one
    that their own seal or compaction just moved: a newer snapshot finds it where it went."""
    missing = read_a_snapshot(lambda: open_snapshot(log_path), lambda con: missing_blobs(con, run_id))
    if missing:
        raise LogIntegrityError(f"run {run_id} not sealed: {missing[0]}; the archive is unchanged")


def _remove_folder(folder: Path) -> None:
    """Segments first, the manifest and the lock file last: a seal killed midway leaves a
    folder whose remaining files the archive records as sealed (readers skip them) and a
    manifest that still names them, which the next seal removes. Only the log's own files go:
    anything else someone put there stays, and so does the folder holding it."""
    last = [MANIFEST, "writer.lock"]
    for name in os.listdir(folder):
        if EVENTS_FILE.match(name) or BLOBS_FILE.match(name):
            (folder / name).unlink(missing_ok=True)
    checkpoint("seal.removing")
    for name in last:
        (folder / name).unlink(missing_ok=True)
    try:
        folder.rmdir()
    except OSError:
        pass  # a writer waiting for the lock has made its new lock file: the folder is its now
    checkpoint("seal.removed")
