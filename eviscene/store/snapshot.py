"""Read connections: the archive plus every committed live segment, presented as one
`events` relation (and one `blobs` relation), without taking any lock a writer needs.

A connection is a snapshot of the files present when it opened: what a run committed a
moment ago is there, what it commits later is seen by the next connection.
"""

from __future__ import annotations

import atexit
import contextlib
import difflib
import fcntl
import os
import re
import shlex
import shutil
import socket
import stat
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import TypeVar

import duckdb

from eviscene.errors import ArchiveDamagedError, EvisceneError, LogIntegrityError, LogLockedError, NotALogError, QueryRefusedError
from eviscene.rules.processes import command_name
from eviscene.rules.runtime import private_folder_problem
from eviscene.store.chain import GENESIS_HASH, content_digest
from eviscene.store.migrate import latest_version, migrations
from eviscene.store.layout import list_blob_files, list_segments, live_root, live_run_ids, read_parquet, sql_path_list, sql_quoted
from eviscene.store.schema import BLOB_COLUMNS, EVENT_COLUMNS

DUCKDB_CONFIG = {
    # Only the extensions built into the wheel (json, parquet, icu) exist on our machines.
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}
LOCK_WAIT_SECONDS = 10.0
T = TypeVar("T")
_HOLDER_PID = re.compile(r"PID (\d+)")
# A DuckDB database file opens with an 8-byte checksum, then these bytes.
_DUCKDB_MAGIC = b"DUCK"
_DUCKDB_MAGIC_AT = 8


# This process's spill folder, by the pid that made it (a forked child makes its own), and
# the lock it holds on the folder's owner file while it lives.
_spill_folders: dict[int, Path] = {}
_spill_owners: dict[int, int] = {}
_spill_lock = threading.Lock()
_SPILL_PREFIX = "eviscene-spill-"
_SPILL_OWNER = ".owner"


def spill_directory() -> Path:
    """Where a sandboxed connection's large sorts, joins and temporary tables spill (never the
    cwd). The sandbox lets every query read this folder, so it is private to this process: a
    fresh name that mkdtemp makes (0700) in the temp directory, so that nobody can plant it, or
    a link in its place, beforehand (`_check_private`); removed when the process exits. The
    process's connections share it (each removes its own files when it closes). A process
    killed (SIGKILL, OOM) cannot remove it, and a query's spill may be gigabytes: the next
    process to spill removes each such folder of this user whose owner lock nobody holds."""
    with _spill_lock:
        folder = _spill_folders.get(os.getpid())
        if folder is None:
            _remove_abandoned_spill_folders()
            folder = Path(tempfile.mkdtemp(prefix=_SPILL_PREFIX)).resolve()
            try:
                _check_private(folder)
            except EvisceneError:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            owner = _hold_owner_lock(folder)
            if owner is not None:
                _spill_owners[os.getpid()] = owner
            _spill_folders[os.getpid()] = folder
            atexit.register(_remove_spill_directory, folder, os.getpid())
    return folder


def _hold_owner_lock(folder: Path) -> int | None:
    """Lock the folder's owner file, which names this host, for as long as this process lives
    (the kernel lets go when it dies, however it dies). Locked under another name, then
    renamed: a sweeping process never finds the owner file unlocked while its maker lives.
    None where the temp directory's file system has no flock: the folder is then never swept."""
    pending = folder / f"{_SPILL_OWNER}.{os.getpid()}"
    try:
        owner = os.open(pending, os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        os.write(owner, socket.gethostname().encode())
        fcntl.flock(owner, fcntl.LOCK_EX)
        pending.rename(folder / _SPILL_OWNER)
    except OSError:
        os.close(owner)
        pending.unlink(missing_ok=True)
        return None
    return owner


def _remove_abandoned_spill_folders() -> None:
    """Remove this user's spill folders made on this host (a temp directory may be shared, and
    a lock held on another host may not show here) whose owner file no process holds locked:
    their process was killed. A folder without the file (being made, or left by an older
    version or a file system without flock) is left alone."""
    for folder in Path(tempfile.gettempdir()).glob(f"{_SPILL_PREFIX}*"):
        try:
            if not folder.is_dir() or folder.is_symlink() or folder.stat().st_uid != os.geteuid():
                continue
            owner = os.open(folder / _SPILL_OWNER, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)  # NFS locks need it writable
        except OSError:
            continue
        try:
            if os.read(owner, 256).decode("utf-8", "replace") != socket.gethostname():
                continue
            fcntl.flock(owner, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # its process lives (or the lock cannot be had here)
        else:
            shutil.rmtree(folder, ignore_errors=True)
        finally:
            os.close(owner)


def _check_private(folder: Path) -> None:
    """Refuse a spill folder (resolved) another user could read, or swap for a link."""
    problem = private_folder_problem(folder)
    if problem is None:
        return
    where, why = problem
    if where == folder:
        raise EvisceneError(f"the SQL spill folder {folder} {why}; nothing was read")
    raise EvisceneError(f"another user could replace the SQL spill folder {folder}: {where} {why}; point TMPDIR at a folder of your own")


def _remove_spill_directory(folder: Path, pid: int) -> None:
    if os.getpid() == pid:  # not a forked child's exit: the folder is its parent's
        shutil.rmtree(folder, ignore_errors=True)


# Every connection this process holds open, for `interrupt_queries`.
_open_connections: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()
_open_connections_lock = threading.Lock()


def new_connection() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:", config=DUCKDB_CONFIG)
    with _open_connections_lock:
        _open_connections.add(con)
    con.execute("SET TimeZone = 'UTC'")
    # A long query streamed row by row would draw DuckDB's progress bar into the output.
    con.execute("SET enable_progress_bar = false")
    # DuckDB 2.0's projection pull-up walks the whole plan once per projection: over the
    # stacked per-episode views (thousands of operators once inlined) it was most of a query's
    # time (`post_rollout_rewards` on the bundled release's log: 13.6 s with it, 5.9 s without).
    con.execute("SET disabled_optimizers = 'projection_pullup'")
    return con


@contextlib.contextmanager
def closed_on_failure(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """`con`, closed if the block fails, a Ctrl-C included: left to the traceback, it would keep
    the archive attached, and this process could attach it no more (DuckDB: "already attached")."""
    try:
        yield con
    except BaseException:
        con.close()
        raise


def interrupt_queries() -> None:
    """Stop the query each open connection runs, from any thread (InterruptException). DuckDB
    notices a Ctrl-C by itself only while the calling thread runs a task of the query, not
    while it waits for one on DuckDB's own threads: a long query would run on to its end."""
    with _open_connections_lock:
        connections = list(_open_connections)
    for con in connections:
        with contextlib.suppress(duckdb.Error):  # closed meanwhile
            con.interrupt()


def attach_archive(con: duckdb.DuckDBPyConnection, log_path: Path, *, read_only: bool) -> None:
    """Attach the archive as `archive`, waiting a moment while a seal holds it."""
    attach_archive_as(con, log_path, "archive", read_only=read_only)


def attach_archive_as(con: duckdb.DuckDBPyConnection, log_path: Path, alias: str, *, read_only: bool = False) -> None:
    """Attach a log's archive under `alias`, waiting a moment while another process holds it;
    `NotALogError` for a file that is not a log's archive (`check_archive_file`,
    `_refuse_other_database`)."""
    check_archive_file(log_path)
    mode = " (READ_ONLY)" if read_only else ""
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while True:
        try:
            con.execute(f"ATTACH '{sql_quoted(log_path)}' AS {alias}{mode}")
            break
        except (duckdb.IOException, duckdb.ResourceInUseException) as exc:
            # Another process's lock (the kernel's), or this process's own other attachment of
            # the file in the other mode (a query still read, a `log.connect()` kept open).
            in_this_process = isinstance(exc, duckdb.ResourceInUseException)
            if not in_this_process and "lock" not in str(exc).lower():
                raise
            if time.monotonic() > deadline:
                match = _HOLDER_PID.search(str(exc))
                holder = (f"this process (pid {os.getpid()}: another of its connections, a query still being read or a "
                          "`log.connect()` kept open, or its seal in another thread)"
                          if in_this_process else _process_named(int(match.group(1))) if match else "another process")
                # Readers share the archive: a reader is kept out only by a writer (a seal, a
                # merge), a writer by anyone (a long `eviscene sql` too).
                held = "held for writing by" if read_only else "in use by"
                raise LogLockedError(f"log {log_path} is {held} {holder}") from None
            time.sleep(0.1)
    _refuse_other_database(con, log_path, alias)


def _process_named(pid: int) -> str:
    """`pid N (eviscene sql)`: the pid DuckDB names as a lock's holder (always one on this
    machine: the lock is the kernel's), with the command it runs where this process may read it."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace").split("\0")
    except OSError:
        return f"pid {pid}"
    name = command_name(argv)
    return f"pid {pid} ({name})" if name else f"pid {pid}"


def check_archive_file(log_path: Path) -> None:
    """Refuse a log path that holds a file other than a DuckDB database, before DuckDB reads
    it: of a run's summary.json it says "Cannot launch in-memory database in read-only
    mode!". A path with nothing there yet passes (a first run creates the log)."""
    if not log_path.is_file():
        _refuse_special_file(log_path)
        return
    with log_path.open("rb") as handle:
        header = handle.read(_DUCKDB_MAGIC_AT + len(_DUCKDB_MAGIC))
    if header[_DUCKDB_MAGIC_AT:] != _DUCKDB_MAGIC:
        raise NotALogError(f"{log_path} is not an EviScene log (not a DuckDB database file)")


_SPECIAL_FILES = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
                  (stat.S_ISSOCK, "a socket"))


def _refuse_special_file(log_path: Path) -> None:
    """A device, FIFO or socket at the log's path (`--db /dev/null`): DuckDB said only that it
    "is not a valid DuckDB database file", and a FIFO would block whoever opened it."""
    try:
        mode = log_path.stat().st_mode
    except OSError:  # nothing there: a first run creates the log
        return
    kind = next((name for test, name in _SPECIAL_FILES if test(mode)), None)
    if kind is not None:
        raise NotALogError(f"{log_path} is not an EviScene log (it is {kind}, not a file)")


def check_log_file(log_path: Path) -> None:
    """Refuse (`NotALogError`) a log path whose file is not a log's archive, before a writer
    plans anything; a path with nothing there yet passes."""
    if not log_path.is_file():
        _refuse_special_file(log_path)
        return
    con = new_connection()
    try:
        attach_archive(con, log_path, read_only=True)
    finally:
        con.close()


# Everything a DuckDB database holds that someone made in it.
_DATABASE_CONTENTS = """
SELECT 'table' AS kind, schema_name, table_name AS name FROM duckdb_tables() WHERE database_name = $db
UNION ALL SELECT 'view', schema_name, view_name FROM duckdb_views() WHERE database_name = $db AND NOT internal
UNION ALL SELECT 'sequence', schema_name, sequence_name FROM duckdb_sequences() WHERE database_name = $db
UNION ALL SELECT DISTINCT 'macro', schema_name, function_name FROM duckdb_functions() WHERE database_name = $db AND NOT internal
UNION ALL SELECT 'type', schema_name, type_name FROM duckdb_types() WHERE database_name = $db AND NOT internal
UNION ALL SELECT 'schema', NULL, schema_name FROM duckdb_schemas() WHERE database_name = $db AND NOT internal
ORDER BY kind <> 'table', kind, schema_name, name
"""
_NAMES_SHOWN = 5


def _refuse_other_database(con: duckdb.DuckDBPyConnection, log_path: Path, alias: str) -> None:
    """A log's archive records its schema version in `schema_migrations` (version, name,
    applied_at) from its first migration on. A DuckDB database without it is someone else's,
    refused (detached, untouched) so that no read answers from it as an empty log and no
    writer adds the log's tables to it; unless it holds nothing at all: a database someone
    just created, or that a first seal killed before its migration left, becomes a new log."""
    try:
        con.execute(f"SELECT version, name, applied_at FROM {alias}.schema_migrations LIMIT 0")
    except (duckdb.CatalogException, duckdb.BinderException):
        pass
    else:
        _refuse_views(con, log_path, alias)
        _refuse_other_schema(con, log_path, alias)
        return
    contents = con.execute(_DATABASE_CONTENTS, {"db": alias}).fetchall()
    if not contents:
        return
    named: dict[str, list[str]] = {}
    for kind, schema, name in contents[:_NAMES_SHOWN]:
        named.setdefault(kind, []).append(name if schema in (None, "main") else f"{schema}.{name}")
    held = ", ".join(f"{kind}{'s' if len(names) > 1 else ''} {', '.join(names)}" for kind, names in named.items())
    more = f" and {len(contents) - _NAMES_SHOWN} more" if len(contents) > _NAMES_SHOWN else ""
    raise _detached(con, alias, NotALogError(
        f"{log_path} is a DuckDB database but not an EviScene log (it holds {held}{more}; "
        "a log holds the tables events, blobs, sealed_segments and schema_migrations)"
    ))


def _detached(con: duckdb.DuckDBPyConnection, alias: str, error: EvisceneError) -> EvisceneError:
    """`error`, to raise once the archive it refuses is detached: nothing of it stays open to a
    reader, a writer or a further query."""
    con.execute(f"DETACH {alias}")
    return error


def _refuse_views(con: duckdb.DuckDBPyConnection, log_path: Path, alias: str) -> None:
    """A log's archive holds tables only. A view there (`events` or `blobs` made a view over
    `read_blob('~/.ssh/id_rsa')`, say) would run its SQL with the reader's rights wherever no
    sandbox holds (`log verify`, `log merge`, which would keep what it read for good)."""
    views = con.execute(
        "SELECT view_name FROM duckdb_views() WHERE database_name = $db AND NOT internal ORDER BY view_name", {"db": alias}
    ).fetchall()
    if views:
        raise _detached(con, alias, NotALogError(
            f"{log_path} is not an EviScene log: it holds view {', '.join(v[0] for v in views[:_NAMES_SHOWN])} "
            "(a log's archive holds tables only, and a view's SQL would run as you); nothing was read"
        ))


def _refuse_other_schema(con: duckdb.DuckDBPyConnection, log_path: Path, alias: str) -> None:
    """A log's archive at a schema version this EviScene knows, whose `events` and `blobs`
    (the tables every reader and merge selects from) have the columns, types and NOT NULLs its
    migrations give them. Else DuckDB's binder spoke for it (`Referenced column "attempt" not
    found`, naming no file), or a newer log's meaning was read by older rules. An archive with
    no migration applied yet (a first seal killed before it) has no tables to check."""
    newest = con.execute(f"SELECT max(version) FROM {alias}.schema_migrations").fetchone()[0]
    if newest is None:
        return
    known = latest_version()
    problem = None
    if newest > known:
        problem = f"its schema version is {newest}, newer than this EviScene's ({known}): upgrade EviScene to read it"
    else:
        _refuse_missing_tables(con, log_path, alias)
        problem = next(filter(None, (_column_difference(con, alias, table, expected)
                                     for table, expected in _log_tables(con).items())), None)
    if problem:
        raise _detached(con, alias, NotALogError(f"{log_path} is not an EviScene log this version reads: {problem}; nothing was read"))


def _refuse_missing_tables(con: duckdb.DuckDBPyConnection, log_path: Path, alias: str) -> None:
    """The first migration makes events, blobs and sealed_segments together: an archive past
    it without one of them was edited. Without sealed_segments, say, every archived event
    would read as absent (readers take a missing one for a log not yet sealed) and `log
    verify` would call the log empty and intact."""
    missing = [name for name in ("events", "blobs", "sealed_segments") if not _columns(con, alias, name)]
    if missing:
        raise _detached(con, alias, ArchiveDamagedError(
            f"{log_path} is damaged: its archive lacks the table{'s' if len(missing) > 1 else ''} {', '.join(missing)}, "
            "which every log has from its first migration (dropped?); restore the log from a copy; nothing was read"
        ))


_LOG_TABLES = ("events", "blobs")
_expected_tables: dict[str, dict[str, tuple[str, bool]]] = {}


def _columns(con: duckdb.DuckDBPyConnection, database: str, table: str) -> dict[str, tuple[str, bool]]:
    """`database.table`'s columns: name -> (type, NOT NULL); none for a table that is not there."""
    try:
        rows = con.execute(f"SELECT name, type, \"notnull\" FROM pragma_table_info('{database}.{table}')").fetchall()
    except duckdb.CatalogException:
        return {}
    return {name: (data_type, not_null) for name, data_type, not_null in rows}


def _column_difference(con: duckdb.DuckDBPyConnection, database: str, table: str,
                       expected: dict[str, tuple[str, bool]]) -> str | None:
    found = _columns(con, database, table)
    for name, (data_type, not_null) in expected.items():
        if name not in found:
            return f"its table {table} lacks column {name}"
        if found[name] != (data_type, not_null):
            has, has_not_null = found[name]
            return (f"its column {table}.{name} is {has}{'' if has_not_null else ' (NULL allowed)'}, "
                    f"a log's is {data_type}{' NOT NULL' if not_null else ''}")
    return None


def _log_tables(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, tuple[str, bool]]]:
    """The events and blobs tables as the migrations make them (the one definition of a log),
    made once a process in an in-memory database attached to `con` for the moment."""
    if not _expected_tables:
        con.execute("ATTACH ':memory:' AS eviscene_expected")
        try:
            con.execute("USE eviscene_expected")
            for _, _, ddl in migrations():
                con.execute(ddl)
            _expected_tables.update({table: _columns(con, "eviscene_expected", table) for table in _LOG_TABLES})
        finally:
            con.execute("USE memory")
            con.execute("DETACH eviscene_expected")
    return _expected_tables


# How many fresh snapshots a reader tries when a live segment moves under it.
SNAPSHOT_RETRIES = 3
# A sandboxed snapshot reports a vanished file as a folder of that name it may not glob.
_GLOBBED_MISSING_FILE = re.compile(r'Cannot access file "(.+?)/\*\*/\*\.parquet"')


def segment_moved(exc: duckdb.Error) -> bool:
    """A live segment was compacted or sealed between listing and reading it: a newer
    snapshot finds its rows where they went (another segment, or the archive)."""
    if isinstance(exc, duckdb.IOException):
        return "No files found" in str(exc) or "No such file" in str(exc)
    globbed = _GLOBBED_MISSING_FILE.search(str(exc)) if isinstance(exc, duckdb.PermissionException) else None
    return globbed is not None and not Path(globbed.group(1)).exists()


def read_a_snapshot(connect: Callable[[], duckdb.DuckDBPyConnection], reader: Callable[[duckdb.DuckDBPyConnection], T]) -> T:
    """`reader` over one snapshot `connect` opens (and this closes), again over a newer one
    where a live segment moved under it (`segment_moved`)."""
    for attempt in range(SNAPSHOT_RETRIES):
        try:
            con = connect()
            try:
                return reader(con)
            finally:
                con.close()
        except duckdb.Error as exc:
            if attempt == SNAPSHOT_RETRIES - 1 or not segment_moved(exc):
                raise
    raise AssertionError("unreachable")


@dataclass
class LiveFiles:
    events: list[Path] = field(default_factory=list)
    blobs: list[Path] = field(default_factory=list)


def live_files(log_path: Path, sealed: set[tuple[str, str]]) -> LiveFiles:
    files = LiveFiles()
    for run_id in live_run_ids(log_path):
        folder = live_root(log_path) / run_id
        files.events += [s.path for s in list_segments(folder) if (run_id, s.path.name) not in sealed]
        files.blobs += [p for p in list_blob_files(folder) if (run_id, p.name) not in sealed]
    return files


@dataclass(frozen=True)
class Sandbox:
    """A snapshot that reads the log's own files and the analyst's named files and folders
    (`readable`, `--read`), and nothing else, enforced by DuckDB itself: external access off
    with only those paths allowed, no extension install or autoload, then the configuration
    locked so no statement can change any of it."""

    readable: tuple[Path, ...] = ()
    memory_limit: int | None = None  # DuckDB's memory in bytes, else its default, 80% of RAM
    spill_limit: int | None = None  # the spill folder's bytes, else DuckDB's default, 90% of its disk's free space


def open_snapshot(log_path: Path, *, sandbox: Sandbox | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory connection whose `events` and `blobs` views cover the whole log
    (locked down to reading with `sandbox`)."""
    if log_path.is_dir():
        return open_parquet_export(log_path, sandbox)
    con = new_connection()
    with closed_on_failure(con):
        _cover_the_log(con, log_path, sandbox)
    return con


def _cover_the_log(con: duckdb.DuckDBPyConnection, log_path: Path, sandbox: Sandbox | None) -> None:
    """`open_snapshot`'s views over the archive and the live segments, on `con`."""
    sealed: set[tuple[str, str]] = set()
    parts_events, parts_blobs = [], []
    if log_path.exists():
        attach_archive(con, log_path, read_only=True)
        # The first migration creates events, blobs and sealed_segments together. Asked
        # directly rather than through duckdb_tables(), which costs a CLI command ~25 ms.
        try:
            sealed = set(con.execute("SELECT run_id, file_name FROM archive.sealed_segments").fetchall())
        except duckdb.CatalogException:  # an archive without tables yet
            pass
        else:
            parts_events.append(f"SELECT {EVENT_COLUMNS} FROM archive.events")
            parts_blobs.append(f"SELECT {BLOB_COLUMNS} FROM archive.blobs")
    files = live_files(log_path, sealed)
    if files.events:
        parts_events.append(
            f"SELECT {EVENT_COLUMNS.replace('payload', 'payload::JSON AS payload')} FROM {read_parquet(files.events)}"
        )
    copies = list(parts_blobs)
    if files.blobs:
        live_blobs = f"SELECT {BLOB_COLUMNS} FROM {read_parquet(files.blobs)}"
        # one row an address: a live run holds the gold and policy files a sealed one put
        # in the archive already (every join on `blobs` would count them twice)
        archived = " WHERE NOT EXISTS (SELECT 1 FROM archive.blobs a WHERE a.sha256 = l.sha256)" if parts_blobs else ""
        parts_blobs.append(f"SELECT DISTINCT ON (sha256) * FROM ({live_blobs}) l{archived}")
        copies.append(live_blobs)
    if not parts_events:
        parts_events.append(_empty_events())
    if not parts_blobs:
        parts_blobs.append("SELECT NULL::VARCHAR AS sha256, NULL::VARCHAR AS media_type, NULL::BIGINT AS size, NULL::BLOB AS content WHERE false")
        copies = parts_blobs
    try:
        con.execute("CREATE VIEW events AS " + " UNION ALL ".join(parts_events))
        con.execute("CREATE VIEW blobs AS " + " UNION ALL ".join(parts_blobs))
    except duckdb.BinderException:
        _name_foreign_segment(con, [*files.events, *files.blobs])
        raise
    # Every stored copy, for `log verify`: `blobs` shows one copy of an address the live files
    # hold twice, any one, so a forged copy beside the real one would be read now and then.
    con.execute("CREATE VIEW blob_copies AS " + " UNION ALL ".join(copies))
    if sandbox is not None:
        _lock_down(con, [*files.events, *files.blobs], sandbox)


_MISSING_COLUMN = re.compile(r'Referenced column "([^"]+)" not found')


def _name_foreign_segment(con: duckdb.DuckDBPyConnection, paths: list[Path], events_columns: str = EVENT_COLUMNS) -> None:
    """Raise `LogIntegrityError` naming the Parquet file (a live segment, or a file of a `log
    export-parquet` folder, whose `events_columns` lack run_id) that lacks the log's columns,
    as one a log someone hands you may hold: DuckDB's binder names the column, not the file."""
    for path in paths:
        columns = events_columns if path.name.startswith("events-") else BLOB_COLUMNS
        try:
            con.execute(f"SELECT {columns} FROM {read_parquet([path])} LIMIT 0")
        except duckdb.BinderException as exc:
            missing = _MISSING_COLUMN.search(str(exc))
            problem = f"it lacks column {missing.group(1)}" if missing else str(exc).splitlines()[0]
            raise LogIntegrityError(f"{path} is not a segment of an EviScene log: {problem}") from None


def _lock_down(con: duckdb.DuckDBPyConnection, log_files: list[Path], sandbox: Sandbox) -> None:
    """DuckDB's own guard rails. The attached archive stays readable (DuckDB allows an
    attached file's path by itself); writing it is refused by `check_query`, since only a
    SELECT runs, and by the read-only attachment."""
    folders = [p for p in sandbox.readable if p.is_dir()]
    files = log_files + [p for p in sandbox.readable if not p.is_dir()]
    con.execute(f"SET allowed_paths = {sql_path_list(files)}")
    # A trailing separator, so that naming /data/in does not also open /data/inbox.
    con.execute("SET allowed_directories = [" + ", ".join(f"'{sql_quoted(p)}{os.sep}'" for p in folders) + "]")
    limit_memory(con, sandbox.memory_limit, sandbox.spill_limit)
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def limit_memory(con: duckdb.DuckDBPyConnection, memory_limit: int | None, spill_limit: int | None = None) -> None:
    """`con`'s DuckDB held to `memory_limit` bytes (else its default, 80% of RAM), spilling past
    it into this process's private folder (`spill_directory`, never the cwd), at most
    `spill_limit` bytes of it."""
    folder = str(spill_directory())
    # once a spill has used it, the folder cannot be set again, even to itself
    if con.execute("SELECT current_setting('temp_directory')").fetchall()[0][0] != folder:
        con.execute(f"SET temp_directory = '{sql_quoted(folder)}'")
    if memory_limit is not None:
        con.execute(f"SET memory_limit = '{int(memory_limit)}B'")
    if spill_limit is not None:
        con.execute(f"SET max_temp_directory_size = '{int(spill_limit)}B'")


def check_query(con: duckdb.DuckDBPyConnection, query: str) -> None:
    """Accept exactly one SELECT statement (as DuckDB's parser classifies it): the sandbox
    reads, so COPY, ATTACH, DETACH, INSTALL, SET, CREATE, INSERT, PRAGMA, CALL and the rest
    are refused before anything runs."""
    if not query.strip():
        raise QueryRefusedError("no SQL given: pass one SELECT statement")
    statements = con.extract_statements(query)
    if not statements:
        raise QueryRefusedError("no SQL given: pass one SELECT statement (the text holds only comments)")
    if len(statements) > 1:
        raise QueryRefusedError(f"one statement at a time: the SQL holds {len(statements)}")
    if _statement_type(statements[0]) == duckdb.StatementType.MULTI and _statement_name(statements[0]) in _READING_PIVOT:
        raise QueryRefusedError(
            "a PIVOT runs over the log only with its values listed (`PIVOT … ON type IN ('run.started', 'run.finished')`): "
            "without them DuckDB first runs a statement of its own to find them, which the read-only sandbox refuses"
        )
    if not _is_select(statements[0]):
        raise QueryRefusedError(
            f"only a SELECT statement runs over the log; {_statement_name(statements[0])} is refused "
            "(the log is read-only: results leave with --output FILE, your own files come in with --read PATH)"
        )


# What a query that reads through a PIVOT opens with; DuckDB files a write around one (COPY
# (PIVOT …) TO, CREATE TABLE … AS PIVOT) as several statements too, refused by its own name.
_READING_PIVOT = {"SELECT", "PIVOT", "FROM", "WITH", "MULTI"}


def _is_select(statement: duckdb.Statement) -> bool:
    return _statement_type(statement) == duckdb.StatementType.SELECT


def _statement_type(statement: duckdb.Statement) -> duckdb.StatementType | None:
    try:
        return statement.type
    except ValueError:  # a type this duckdb's Python enum does not name (UPDATE EXTENSIONS)
        return None


# A statement's first keyword, past FORCE (FORCE INSTALL, FORCE CHECKPOINT); the parser has
# already dropped the comments before it.
_LEADING_KEYWORD = re.compile(r"\s*(?:FORCE\s+)?([A-Z_]+)", re.IGNORECASE)


def _statement_name(statement: duckdb.Statement) -> str:
    """A statement as written, by its first keyword: DuckDB's parser files several under
    another statement's type (TRUNCATE under DELETE, USE and RESET under SET, INSTALL under
    LOAD, CHECKPOINT under CALL, IMPORT DATABASE under PRAGMA, ANALYZE under VACUUM). One
    that opens with a WITH clause is named by its type (WITH … DELETE: DELETE)."""
    leading = _LEADING_KEYWORD.match(statement.query)
    if leading is None or leading.group(1).upper() == "WITH":
        return statement.type.name.replace("_", " ")
    return leading.group(1).upper()


# DuckDB's words for a relation the query names but no catalog holds, with its suggestion,
# which it draws from its own catalog too (`episode` -> "pg_index").
_MISSING_TABLE = re.compile(r'(Table with name (.+?) does not exist!)(?:\s*Did you mean "[^"]*"\?)?')
_OUTSIDE_THE_SANDBOX = re.compile(r'Cannot access file "(.+?)" - file system operations are disabled by configuration')
_GLOB = re.compile(r"[*?\[]")
# DuckDB's advice to change a setting, which the sandbox refuses (every SET; the configuration
# is locked): each such sentence, by what the query may do instead (the lambda error says so already).
_SETTING_ADVICE = [
    (re.compile(r'Max expression depth limit of (\d+) exceeded\. Use "SET max_expression_depth TO x" to increase the maximum expression depth\.'),
     r"the query nests expressions deeper than DuckDB's limit of \1 levels; write it as a shallower query."),
    (re.compile(r'Use "SET scalar_subquery_error_on_multiple_rows=false" to revert to previous behavior of returning a random row\.'),
     "Give the subquery LIMIT 1 for any one of its rows, or aggregate them (first(…), list(…))."),
    (re.compile(r"\* SET order_by_non_integer_literal=true to allow this behavior\."),
     "Order by a column's name or position, not a string ('a' is a string, \"a\" a column)."),
    (re.compile(r"\s*Use SET lambda_syntax='ENABLE_SINGLE_ARROW' to revert to the deprecated behavior\."), ""),
    (re.compile(r"Pivot column limit of (\d+) exceeded\. Use SET pivot_limit=X to increase the limit\."),
     r"Pivot column limit of \1 exceeded: pivot on fewer values (list them with ON … IN (…))."),
]


def closest_name(name: str, names: Collection[str]) -> str | None:
    """The one of `names` a mistyped `name` most likely meant (names match in any case)."""
    close = difflib.get_close_matches(name.lower(), sorted(names), n=1)
    return close[0] if close else None


def explain_error(exc: duckdb.Error, relations: Collection[str]) -> Exception | None:
    """DuckDB's error in the sandbox's terms, or None when it needs none: a relation that is
    not there gets the closest of `relations` (what the sandbox exposes) as its suggestion,
    and a file outside the log is refused (`QueryRefusedError`) naming the `--read` that opens
    it (for a glob, its folder); DuckDB's advice to SET a setting gets what the query may do
    instead, since the sandbox refuses every SET."""
    message = str(exc)
    for advice, instead in _SETTING_ADVICE:
        if advice.search(message):
            return type(exc)(advice.sub(instead, message))
    missing = _MISSING_TABLE.search(message) if isinstance(exc, duckdb.CatalogException) else None
    if missing is not None:
        close = closest_name(missing.group(2), relations)
        hint = f' Did you mean "{close}"?' if close else " (`eviscene views` lists the views)"
        return duckdb.CatalogException(message[: missing.start()] + missing.group(1) + hint + message[missing.end():])
    outside = _OUTSIDE_THE_SANDBOX.search(message) if isinstance(exc, duckdb.PermissionException) else None
    if outside is not None and not segment_moved(exc):  # a moved segment is the log's, not a file to --read
        path = outside.group(1)
        remedy = ("download it and --read the copy" if _URL.match(path)  # --read takes files and folders only
                  else f"add --read {shlex.quote(_read_target(path))}")
        return QueryRefusedError(
            message[: outside.start()] + f'Cannot access file "{path}": a query reads only the log and the files given with '
            f"--read (read= in Python); {remedy}" + message[outside.end():]
        )
    return None


_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)


def _read_target(path: str) -> str:
    """What `--read` takes to open `path`: the path itself, or for a glob the folder it searches."""
    parts = PurePath(path).parts
    globbed = next((i for i, part in enumerate(parts) if _GLOB.search(part)), None)
    if globbed is None:
        return path
    return str(PurePath(*parts[:globbed])) if globbed else "."


def open_parquet_export(directory: Path, sandbox: Sandbox | None = None) -> duckdb.DuckDBPyConnection:
    """A folder written by `log export-parquet`: its Parquet files are the log, read only."""
    from eviscene.store.parquet_export import export_sources  # pyarrow: only for an export folder

    events, blobs, files = export_sources(directory)
    con = new_connection()
    with closed_on_failure(con):
        try:
            con.execute("CREATE VIEW events AS " + (events or _empty_events()))
            con.execute("CREATE VIEW blobs AS " + blobs)
        except duckdb.BinderException:
            _name_foreign_segment(con, list(files), EVENT_COLUMNS.replace("run_id, ", ""))
            raise
        con.execute("CREATE VIEW blob_copies AS SELECT * FROM blobs")  # an export stores each blob once
        if sandbox is not None:
            _lock_down(con, list(files), sandbox)
    return con


def _empty_events() -> str:
    return (
        "SELECT NULL::BIGINT AS seq, NULL::VARCHAR AS event_id, NULL::TIMESTAMPTZ AS ts, NULL::VARCHAR AS run_id, "
        "NULL::VARCHAR AS episode_id, NULL::INTEGER AS attempt, NULL::VARCHAR AS type, NULL::INTEGER AS step, "
        "NULL::JSON AS payload, NULL::VARCHAR AS prev_hash, NULL::VARCHAR AS hash WHERE false"
    )


@dataclass
class RunState:
    last_seq: int = 0
    last_hash: str = GENESIS_HASH
    event_ids: dict[str, str] = field(default_factory=dict)
    blob_hashes: set[str] = field(default_factory=set)


def held_by_other_runs(log_path: Path, run_id: str, event_ids: list[str]) -> list[tuple[str, str, int]]:
    """(event_id, run, seq) of each of `event_ids` that another run of the log holds: an event
    id is the log's key, not the run's."""
    con = open_snapshot(log_path)
    try:
        return con.execute(
            "SELECT event_id, run_id, seq FROM events WHERE event_id IN (SELECT unnest($ids::VARCHAR[])) AND run_id <> $run "
            "ORDER BY event_id",
            {"ids": event_ids, "run": run_id},
        ).fetchall()
    finally:
        con.close()


def run_state(log_path: Path, run_id: str) -> RunState:
    """What a writer resuming `run_id` must know: where the chain ends and what is stored."""
    con = open_snapshot(log_path)
    try:
        rows = con.execute(
            "SELECT seq, hash, event_id, episode_id, attempt, type, step, payload::VARCHAR FROM events "
            "WHERE run_id = ? ORDER BY seq",
            [run_id],
        ).fetchall()
        state = RunState()
        if rows:
            state.last_seq, state.last_hash = rows[-1][0], rows[-1][1]
            state.event_ids = {row[2]: content_digest(run_id, *row[3:]) for row in rows}
        state.blob_hashes = {row[0] for row in con.execute("SELECT sha256 FROM blobs").fetchall()}
        return state
    finally:
        con.close()
