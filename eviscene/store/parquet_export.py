"""`eviscene log export-parquet DIR`: the log's history as plain Parquet, for Spark, Trino,
Polars or DuckDB over object storage, and readable back by every read command
(`eviscene --db DIR …`).

    DIR/events/run_id=<run>/events-<last seq>-<last hash[:16]>.parquet   one file per run, by seq
    DIR/blobs/blobs-<digest[:16]>.parquet                                 blobs, by sha256, each once

The events files have the log's columns less `run_id`, which is the hive partition (the
folder name, percent-encoded where a run id holds `:`, `+`, `=` or `@`); `payload` is the
event's JSON text. A run's file is named by the chain head it ends at, so an export is
incremental: a run whose file is there already is skipped, a run that grew since (a resume,
a merged shard) gets its new file and loses the old one, and a run still being written (its
writer holds the lock) is not exported until it ends. Blobs already exported are not written
again. Files are written under a temporary name and renamed, so a reader never sees half a
file; the same log exported into an empty folder gives the same bytes. One export at a time
writes a folder (`DIR/.export.lock`): two at once would each write the blobs neither found
there, and every view joining on blobs would count them twice. What a killed export left
(its temporary files) goes at the next export.
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from eviscene.errors import EvisceneError
from eviscene.store.layout import check_not_the_log, live_root, live_run_ids, read_parquet
from eviscene.store.locks import folder_lock, lock_holder
from eviscene.store.schema import BLOB_COLUMNS, BLOB_SCHEMA, EVENT_SCHEMA
from eviscene.store.streams import count_streams, stream_kind

EVENTS_DIR = "events"
BLOBS_DIR = "blobs"
_LOCK_FILE = ".export.lock"
_EVENTS_FILE = re.compile(r"events-(\d{12})-([0-9a-f]{16})\.parquet")
_FILE_COLUMNS = [name for name in EVENT_SCHEMA.names if name != "run_id"]
_FILE_SCHEMA = pa.schema([EVENT_SCHEMA.field(name) for name in _FILE_COLUMNS])


@dataclass(frozen=True)
class ExportReport:
    exported: dict[str, str]  # stream -> its kind (`store.streams`)
    events: int
    unchanged: int
    running: dict[str, str]  # a run held by a writer or a seal, not exported -> its holder (`lock_holder`)
    blobs: int

    @property
    def streams(self) -> str:
        """What was exported, in `log verify`'s words: `2 run(s), 1 import stream(s)`."""
        return count_streams(Counter(self.exported.values()))


def export_sources(directory: Path) -> tuple[str | None, str, list[Path]]:
    """The SELECTs presenting an export folder's files as the `events` and `blobs` relations
    (events None while the folder holds none), and the files they read, named one by one
    (so a sandboxed reader can allow exactly those)."""
    if not (directory / EVENTS_DIR).is_dir():
        raise EvisceneError(f"{directory} is a folder but not a `log export-parquet` export (no {EVENTS_DIR}/ in it)")
    events = sorted(path for _seq, _hash, path in _current_events_files(directory).values())
    blobs = sorted((directory / BLOBS_DIR).glob("blobs-*.parquet"))
    columns = ", ".join("payload::JSON AS payload" if c == "payload" else c for c in EVENT_SCHEMA.names)
    events_sql = (
        # run_id from the file's own folder: as a hive partition, any `key=value` folder above it would be one too
        f"SELECT {columns} FROM (SELECT *, url_decode(regexp_extract(filename, '/run_id=([^/]*)/[^/]*$', 1)) AS run_id "
        f"FROM {read_parquet(events, 'filename = true')})"
        if events else None
    )
    blobs_sql = (
        f"SELECT {BLOB_COLUMNS} FROM {read_parquet(blobs)}" if blobs
        else "SELECT NULL::VARCHAR AS sha256, NULL::VARCHAR AS media_type, NULL::BIGINT AS size, NULL::BLOB AS content WHERE false"
    )
    return events_sql, blobs_sql, events + blobs


def exported_ends(directory: Path) -> dict[str, tuple[int, str]]:
    """Each run's last seq and hash prefix as its events file's name records them: what the
    file must end at (a file cut down after the export keeps its name)."""
    return {run_id: (seq, hash_) for run_id, (seq, hash_, _path) in _current_events_files(directory).items()}


def _current_events_files(directory: Path) -> dict[str, tuple[int, str, Path]]:
    """Each run's events file, with the last seq and hash prefix its name records: the one
    ending furthest. An export writes a grown run's new file before it removes the old one, so
    one killed between the two left both; the old one's events are the new one's first."""
    current: dict[str, tuple[int, str, Path]] = {}
    for path in (directory / EVENTS_DIR).glob("run_id=*/events-*.parquet"):
        if match := _EVENTS_FILE.fullmatch(path.name):
            run_id = unquote(path.parent.name.removeprefix("run_id="))
            current[run_id] = max(current.get(run_id, (0, "", path)), (int(match.group(1)), match.group(2), path))
    return current


def export_parquet(log_path: Path, directory: Path, con: duckdb.DuckDBPyConnection) -> ExportReport:
    """Export the log read through `con` (a snapshot of `log_path`) into `directory`."""
    check_not_the_log("export folder", directory, log_path)
    if directory.exists() and not directory.is_dir():
        raise EvisceneError(f"{directory} is not a directory")
    for folder in (directory / EVENTS_DIR, directory / BLOBS_DIR, *(directory / EVENTS_DIR).glob("*")):
        _refuse_link(folder)
    directory.mkdir(parents=True, exist_ok=True)
    with folder_lock(directory / _LOCK_FILE, f"export folder {directory}"):
        for leftover in (*directory.glob(f"{BLOBS_DIR}/.*.tmp"), *directory.glob(f"{EVENTS_DIR}/run_id=*/.*.tmp")):
            leftover.unlink()  # a killed export's: none other writes here while the lock is held
        return _export(log_path, directory, con)


def _export(log_path: Path, directory: Path, con: duckdb.DuckDBPyConnection) -> ExportReport:
    holders = {run_id: lock_holder(live_root(log_path) / run_id / "writer.lock") for run_id in live_run_ids(log_path)}
    running = {run_id: holder for run_id, holder in sorted(holders.items()) if holder is not None}
    heads = con.execute(
        "SELECT run_id, max(seq), arg_max(hash, seq), arg_min(type, seq) FROM events GROUP BY run_id ORDER BY run_id"
    ).fetchall()
    exported, events, unchanged = {}, 0, 0
    for run_id, last_seq, last_hash, opener in heads:
        if run_id in running:
            continue
        partition = directory / EVENTS_DIR / f"run_id={quote(run_id, safe='._-')}"
        name = f"events-{last_seq:012d}-{last_hash[:16]}.parquet"  # read back by exported_ends
        if (partition / name).exists():
            unchanged += 1
        else:
            table = con.sql(
                f"SELECT {', '.join(_FILE_COLUMNS).replace('payload', 'payload::VARCHAR AS payload')} FROM events WHERE run_id = $run ORDER BY seq",
                params={"run": run_id},
            ).to_arrow_table().cast(_FILE_SCHEMA)
            _write(partition, name, table)
            exported[run_id] = stream_kind(opener)
            events += table.num_rows
        for stale in partition.glob("events-*.parquet"):  # the old file, or one a killed export left beside this
            if stale.name != name:
                stale.unlink()
    return ExportReport(exported, events, unchanged, running, _export_blobs(con, directory / BLOBS_DIR))


def _refuse_link(folder: Path) -> None:
    """The export writes into its own folders only: a link among them could lead anywhere,
    the log's live folder included."""
    if folder.is_symlink():
        raise EvisceneError(f"{folder} is a link: an export folder's events/ and blobs/ folders are its own; remove the link")


def _export_blobs(con: duckdb.DuckDBPyConnection, folder: Path) -> int:
    have = sorted(folder.glob("*.parquet"))
    known = pa.concat_tables([pq.read_table(p, columns=["sha256"]) for p in have]) if have else pa.table({"sha256": pa.array([], pa.string())})
    con.register("exported_blobs", known)
    try:
        table = con.sql(
            f"SELECT DISTINCT ON (sha256) {BLOB_COLUMNS} FROM blobs WHERE sha256 NOT IN (SELECT sha256 FROM exported_blobs) ORDER BY sha256"
        ).to_arrow_table().cast(BLOB_SCHEMA)
    finally:
        con.unregister("exported_blobs")
    if table.num_rows:
        digest = hashlib.sha256("\n".join(table.column("sha256").to_pylist()).encode()).hexdigest()
        _write(folder, f"blobs-{digest[:16]}.parquet", table)
    return table.num_rows


def _write(folder: Path, name: str, table: pa.Table) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    # A new file of its own (O_EXCL, a name nobody can guess): never written through a link planted there.
    pending = folder / f".{name}.{uuid.uuid4().hex[:12]}.tmp"
    handle = os.open(pending, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(handle, "wb") as out:
            pq.write_table(table, out, compression="zstd")
        os.replace(pending, folder / name)
    except BaseException:
        pending.unlink(missing_ok=True)
        raise
