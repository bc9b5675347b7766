"""Sealing: copy a run's committed live segments into the DuckDB archive in one
transaction, then delete them. Readers see the same events before and after."""

from __future__ import annotations

import shutil
from pathlib import Path

from eviscene.errors import LogLockedError
from eviscene.store.layout import list_blob_files, list_segments, live_root, live_run_ids
from eviscene.store.locks import RunLock
from eviscene.store.migrate import apply_migrations
from eviscene.store.schema import BLOB_COLUMNS, EVENT_COLUMNS
from eviscene.store.snapshot import _sql_list, attach_archive, new_connection


def open_archive_for_writing(log_path: Path):
    con = new_connection()
    attach_archive(con, log_path, read_only=False)
    apply_migrations(con)
    return con


def seal_runs(log_path: Path, run_ids: list[str] | None = None) -> list[str]:
    """Seal the given runs (default: every live run no writer holds); returns those sealed."""
    candidates = live_run_ids(log_path) if run_ids is None else run_ids
    if not candidates:
        return []
    con = open_archive_for_writing(log_path)
    sealed = []
    try:
        for run_id in candidates:
            folder = live_root(log_path) / run_id
            lock = RunLock(folder / "writer.lock", run_id)
            try:
                lock.acquire()
            except LogLockedError:
                if run_ids is not None:
                    raise
                continue  # still being written; sealed when its writer finishes
            try:
                _seal_folder(con, run_id, folder)
                sealed.append(run_id)
            finally:
                lock.release()
            shutil.rmtree(folder, ignore_errors=True)
    finally:
        con.close()
    return sealed


def _seal_folder(con, run_id: str, folder: Path) -> None:
    done = {row[0] for row in con.execute(
        "SELECT file_name FROM archive.sealed_segments WHERE run_id = ?", [run_id]
    ).fetchall()}
    events = [s.path for s in list_segments(folder) if s.path.name not in done]
    blobs = [p for p in list_blob_files(folder) if p.name not in done]
    if not events and not blobs:
        return
    con.execute("BEGIN")
    if blobs:
        con.execute(
            f"INSERT INTO archive.blobs SELECT DISTINCT ON (sha256) {BLOB_COLUMNS} FROM read_parquet({_sql_list(blobs)}) "
            "WHERE sha256 NOT IN (SELECT sha256 FROM archive.blobs)"
        )
    if events:
        con.execute(
            f"INSERT INTO archive.events SELECT {EVENT_COLUMNS} FROM read_parquet({_sql_list(events)}) "
            "WHERE event_id NOT IN (SELECT event_id FROM archive.events WHERE run_id = ?) ORDER BY seq",
            [run_id],
        )
    con.executemany(
        "INSERT INTO archive.sealed_segments VALUES (?, ?, now())",
        [[run_id, p.name] for p in events + blobs],
    )
    con.execute("COMMIT")
