"""A command that only reads, pointed at a path holding no log, says so and creates nothing;
writers still create a log. A file that is not a log (not even a DuckDB database, or a DuckDB
database of something else) is named so by every command, reading or writing, and left as it was."""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

import eviscene
import eviscene.errors
import sandbox_log
from eviscene.log import open_log

EVISCENE = str(Path(sys.executable).with_name("eviscene"))
BENCHMARK = Path(__file__).resolve().parents[2] / "examples" / "eviscene-demo-v1" / "runtime_input" / "cases.jsonl"

READS = [
    ("sql", "SELECT 1"),
    ("runs",),
    ("runs", "compare", "a", "b"),
    ("why", "episode-1"),
    ("log", "verify"),
    ("log", "seal"),
    ("eval", "resume", "run-1"),  # it said `no run 'run-1' in PATH; \`eviscene --db PATH runs\` lists the runs`, which said no log
    ("log", "export-parquet", "out"),
    ("materialize", "run-1", "--out", "out"),
    ("dataset", "export", "--run", "run-1", "--out", "out"),
    ("views", "--columns"),
]
# `view` starts where no log is yet, for a run about to write there, but not on someone else's file.
ON_A_FILE = [*READS, ("view", "--port", "0")]


@pytest.mark.parametrize("command", READS, ids=" ".join)
def test_a_read_of_a_missing_log_is_one_line_and_creates_nothing(tmp_path, command):
    missing = tmp_path / "mistyped.duckdb"
    result = subprocess.run([EVISCENE, "--db", str(missing), *command], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr == f"Error: no log at {missing}\n"
    assert list(tmp_path.iterdir()) == []


def test_the_view_catalog_is_listed_without_a_log_and_nothing_is_created(tmp_path):
    """`views` lists what the views mean, which the catalog says, not the log (README)."""
    missing = tmp_path / "mistyped.duckdb"
    result = subprocess.run([EVISCENE, "--db", str(missing), "views", "episodes", "--format", "csv"], capture_output=True, text=True,
                            timeout=120, cwd=tmp_path, check=False)
    assert result.returncode == 0 and result.stdout.startswith("view,grain,key,meaning\nepisodes,"), result
    assert list(tmp_path.iterdir()) == []


# Files a mistyped --db (or log merge SOURCE) may name: a run directory's summary.json (which
# DuckDB reads by its extension: "Cannot launch in-memory database in read-only mode!"), text,
# an empty file, bytes.
NOT_LOGS = {"summary.json": b'{"num_samples": 3}', "notes.txt": b"a note\n", "empty.duckdb": b"", "noise.duckdb": bytes(range(256)) * 64}


@pytest.mark.parametrize("name", NOT_LOGS)
@pytest.mark.parametrize("command", ON_A_FILE, ids=" ".join)
def test_a_file_that_is_not_a_log_is_named_so_in_one_line_and_left_as_it_was(tmp_path, command, name):
    not_a_log = tmp_path / name
    not_a_log.write_bytes(NOT_LOGS[name])
    result = subprocess.run([EVISCENE, "--db", str(not_a_log), *command], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                            check=False)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr == f"Error: {not_a_log} is not an EviScene log (not a DuckDB database file)\n"
    assert list(tmp_path.iterdir()) == [not_a_log] and not_a_log.read_bytes() == NOT_LOGS[name]


@pytest.mark.parametrize("special", ["character device", "FIFO"])
@pytest.mark.parametrize("command", [*ON_A_FILE, ("eval", "run", "--benchmark", str(BENCHMARK), "--limit", "1")], ids=" ".join)
def test_a_device_or_fifo_is_named_so_in_one_line(tmp_path, command, special):
    """`--db /dev/null` got DuckDB's "exists, but it is not a valid DuckDB database file!"."""
    if special == "FIFO":
        path = tmp_path / "pipe.duckdb"
        os.mkfifo(path)
    else:
        path = Path("/dev/null")
    result = subprocess.run([EVISCENE, "--db", str(path), *command], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (2, f"Error: {path} is not an EviScene log (it is a {special}, not a file)\n")


@pytest.mark.parametrize("name", NOT_LOGS)
def test_a_merge_of_or_into_a_file_that_is_not_a_log_is_named_so(tmp_path, name):
    (tmp_path / "log").mkdir()
    log = sandbox_log.build(tmp_path / "log")
    before = sandbox_log.fingerprint(log.parent)
    not_a_log = tmp_path / name
    not_a_log.write_bytes(NOT_LOGS[name])
    for target, source in ((log, not_a_log), (not_a_log, log)):
        result = subprocess.run([EVISCENE, "--db", str(target), "log", "merge", str(source)], capture_output=True, text=True,
                                timeout=120, cwd=tmp_path, check=False)
        assert result.returncode == 2 and result.stdout == "", (result.stdout, result.stderr)
        assert result.stderr == f"Error: {not_a_log} is not an EviScene log (not a DuckDB database file)\n"
    assert sandbox_log.fingerprint(log.parent) == before and not_a_log.read_bytes() == NOT_LOGS[name]


def _someone_elses_database(path: Path) -> Path:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE measurements (x INTEGER); INSERT INTO measurements VALUES (1), (2)")
    con.execute("CREATE VIEW doubled AS SELECT 2 * x FROM measurements")
    con.close()
    return path


def _contents(path: Path) -> list[tuple]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(
            "SELECT table_name, estimated_size FROM duckdb_tables() "
            "UNION ALL SELECT view_name, NULL FROM duckdb_views() WHERE NOT internal ORDER BY 1"
        ).fetchall()
    finally:
        con.close()


def _not_a_log_line(path: Path) -> str:
    return (f"Error: {path} is a DuckDB database but not an EviScene log (it holds table measurements, view doubled; "
            "a log holds the tables events, blobs, sealed_segments and schema_migrations)\n")


WRITES = [
    ("eval", "run", "--benchmark", str(BENCHMARK), "--limit", "1"),
    ("import", "split.jsonl"),
]


@pytest.mark.parametrize("command", ON_A_FILE + WRITES, ids=" ".join)
def test_a_duckdb_database_that_is_not_a_log_is_named_so_and_left_as_it_was(tmp_path, command):
    """Neither read as an empty log (no runs, `log verify` ok) nor given the log's tables by a
    writer: refused before anything is read or written, the database and its folder unchanged."""
    other = _someone_elses_database(tmp_path / "other.duckdb")
    (tmp_path / "split.jsonl").write_text('{"case_id": "c1", "split": "train", "split_group_id": "g1"}\n')
    before = sandbox_log.fingerprint(tmp_path)
    result = subprocess.run([EVISCENE, "--db", str(other), *command], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr == _not_a_log_line(other)
    assert sandbox_log.fingerprint(tmp_path) == before
    assert _contents(other) == [("doubled", None), ("measurements", 2)]


def test_a_merge_of_or_into_a_duckdb_database_that_is_not_a_log_is_named_so(tmp_path):
    (tmp_path / "log").mkdir()
    log = sandbox_log.build(tmp_path / "log")
    other = _someone_elses_database(tmp_path / "other.duckdb")
    before = sandbox_log.fingerprint(tmp_path)
    for target, source in ((log, other), (other, log)):
        result = subprocess.run([EVISCENE, "--db", str(target), "log", "merge", str(source)], capture_output=True, text=True,
                                timeout=120, cwd=tmp_path)
        assert result.returncode == 2 and result.stdout == "", (result.stdout, result.stderr)
        assert result.stderr == _not_a_log_line(other)
    assert sandbox_log.fingerprint(tmp_path) == before
    assert _contents(other) == [("doubled", None), ("measurements", 2)]


def test_a_log_whose_archive_holds_a_view_is_refused_before_the_view_runs(tmp_path):
    """A log someone hands you, its `blobs` made a view that reads a file of yours with a
    valid address: `log verify` would pass it and `log merge` keep the file in your log."""
    secret = tmp_path / "id_rsa"
    secret.write_text("victim's private key\n")
    (tmp_path / "theirs").mkdir()
    crafted = sandbox_log.build(tmp_path / "theirs")
    con = duckdb.connect(str(crafted))
    con.execute("ALTER TABLE blobs RENAME TO blobs_kept")
    con.execute(f"CREATE VIEW blobs AS SELECT * FROM blobs_kept UNION ALL "
                f"SELECT sha256(content), 'text/plain', size, content FROM read_blob('{secret}')")
    con.close()
    mine = tmp_path / "mine.duckdb"
    refused = f"Error: {crafted} is not an EviScene log: it holds view blobs (a log's archive holds tables only, " \
              "and a view's SQL would run as you); nothing was read\n"
    for command in (("--db", str(crafted), "log", "verify"), ("--db", str(mine), "log", "merge", str(crafted))):
        result = subprocess.run([EVISCENE, *command], capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False)
        assert (result.returncode, result.stdout, result.stderr) == (2, "", refused)
    assert not mine.exists()


# How a log someone hands you may differ from the log this EviScene writes, and what it is told.
OTHER_SHAPES = {
    "newer": ("INSERT INTO schema_migrations VALUES (3, '003_later.sql', now())",
              "its schema version is 3, newer than this EviScene's (2): upgrade EviScene to read it"),
    "column dropped": ("ALTER TABLE events DROP COLUMN attempt", "its table events lacks column attempt"),
    "retyped": ("ALTER TABLE events ALTER COLUMN step TYPE VARCHAR", "its column events.step is VARCHAR (NULL allowed), a log's is INTEGER"),
    "nullable key": ("ALTER TABLE blobs ALTER COLUMN content DROP NOT NULL",
                     "its column blobs.content is BLOB (NULL allowed), a log's is BLOB NOT NULL"),
}


@pytest.mark.parametrize("shape", OTHER_SHAPES)
def test_a_log_of_another_schema_is_named_so_in_one_line_by_reads_verify_and_merge(tmp_path, shape):
    """A newer EviScene's log was read by this one's rules (and merged: `ok`); one whose tables
    lost a column or a NOT NULL, or changed a type, got DuckDB's `Binder Error: Referenced
    column "attempt" not found in FROM clause!`, naming no file, or NULL run ids as `run None`."""
    change, problem = OTHER_SHAPES[shape]
    (tmp_path / "theirs").mkdir()
    crafted = sandbox_log.build(tmp_path / "theirs")
    con = duckdb.connect(str(crafted))
    con.execute(change)
    con.close()
    every_command_refuses(tmp_path, crafted, f"Error: {crafted} is not an EviScene log this version reads: {problem}; nothing was read\n")


def every_command_refuses(tmp_path, crafted, refused):
    """A read, `sql`, `log verify` and a merge of `crafted` each print `refused` alone and exit 2,
    touching nothing under `tmp_path`."""
    before = sandbox_log.fingerprint(tmp_path)
    mine = tmp_path / "mine.duckdb"
    for command in (("--db", str(crafted), "log", "verify"), ("--db", str(crafted), "runs"),
                    ("--db", str(crafted), "sql", "SELECT count(*) FROM events"), ("--db", str(mine), "log", "merge", str(crafted))):
        result = subprocess.run([EVISCENE, *command], capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False)
        assert (result.returncode, result.stdout, result.stderr) == (2, "", refused), command
    assert sandbox_log.fingerprint(tmp_path) == before


def test_a_live_segment_without_the_logs_columns_is_named_by_every_read_verify_and_merge(tmp_path):
    """A live folder someone hands you, a segment's `attempt` column dropped and its manifest
    line made to match: every command said only DuckDB's `Binder Error: Referenced column
    "attempt" not found in FROM clause!`, naming no file."""
    (tmp_path / "theirs").mkdir()
    crafted = sandbox_log.build(tmp_path / "theirs")
    folder = tmp_path / "theirs" / "log.duckdb.live" / "live"
    segment = folder / "events-000000000001-000000000021.parquet"
    pq.write_table(pq.read_table(segment).drop(["attempt"]), segment)
    line = json.loads((folder / "segments.jsonl").read_text())
    line["sha256"] = hashlib.sha256(segment.read_bytes()).hexdigest()
    (folder / "segments.jsonl").write_text(json.dumps(line) + "\n")
    every_command_refuses(tmp_path, crafted, f"Error: {segment} is not a segment of an EviScene log: it lacks column attempt\n")


def test_a_parquet_export_file_without_the_logs_columns_is_named(tmp_path):
    """`--db FOLDER` reads a `log export-parquet` folder as a log; one handed to you whose
    events file lost a column got the same unnamed binder error."""
    (tmp_path / "theirs").mkdir()
    log = sandbox_log.build(tmp_path / "theirs")
    folder = tmp_path / "export"
    exported = subprocess.run([EVISCENE, "--db", str(log), "log", "export-parquet", str(folder)], capture_output=True,
                              text=True, timeout=120, cwd=tmp_path, check=False)
    assert exported.returncode == 0, exported.stderr
    events = min((folder / "events").glob("run_id=*/events-*.parquet"))
    pq.write_table(pq.read_table(events).drop(["attempt"]), events)
    result = subprocess.run([EVISCENE, "--db", str(folder), "runs"], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                            check=False)
    assert (result.returncode, result.stdout, result.stderr) == (
        2, "", f"Error: {events} is not a segment of an EviScene log: it lacks column attempt\n")


def test_an_empty_duckdb_database_is_a_new_log(tmp_path):
    """A DuckDB file holding nothing (made by hand before the first run, or left by a first seal
    killed before its migration) is adopted as a missing path is: read as a log without runs,
    written as a new log."""
    source = sandbox_log.build(tmp_path)
    empty = tmp_path / "empty.duckdb"
    duckdb.connect(str(empty)).close()
    assert open_log(empty).sql("SELECT count(*) AS n FROM events")["n"].to_pylist() == [0]
    result = subprocess.run([EVISCENE, "--db", str(empty), "log", "merge", str(source)], capture_output=True, text=True, timeout=120,
                            cwd=tmp_path)
    assert "every chain intact" in result.stderr, result.stderr
    assert open_log(empty).sql("SELECT count(*) AS n FROM events")["n"].to_pylist() == [sum(sandbox_log.EVENTS.values())]


def test_an_archive_left_before_its_first_migration_is_a_new_log(tmp_path):
    """A first seal killed after making `schema_migrations` and before migration 001 left no
    tables: no schema to compare, still a new log (the schema check must not call it `lacks
    column seq`)."""
    source = sandbox_log.build(tmp_path)
    started = tmp_path / "started.duckdb"
    con = duckdb.connect(str(started))
    con.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL)")
    con.close()
    assert open_log(started).sql("SELECT count(*) AS n FROM events")["n"].to_pylist() == [0]
    open_log(started).merge(source)
    assert open_log(started).sql("SELECT count(*) AS n FROM events")["n"].to_pylist() == [sum(sandbox_log.EVENTS.values())]


def test_view_of_a_missing_log_starts_and_says_there_is_no_log_yet(tmp_path):
    """`view` may start before the first run writes (runs appear as they are written), but
    never silently: a mistyped --db shows up on stderr."""
    missing = tmp_path / "mistyped.duckdb"
    process = subprocess.Popen([EVISCENE, "--db", str(missing), "view", "--port", "0"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        assert process.stdout.readline().startswith(f"serving {missing} at http://127.0.0.1:")
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=60)
    assert f"note: no log at {missing} yet" in stderr
    assert list(tmp_path.iterdir()) == []


def test_open_log_of_a_missing_log_raises_and_creates_nothing(tmp_path):
    with pytest.raises(eviscene.LogNotFoundError, match="no log at"):  # as the README's Python example says
        eviscene.open_log(tmp_path / "mistyped.duckdb")
    log = open_log(tmp_path / "new.duckdb", create=True)  # a writer's first run
    assert log.sql("SELECT count(*) AS n FROM events")["n"].to_pylist() == [0]
    assert list(tmp_path.iterdir()) == []


def test_every_error_a_caller_may_catch_is_exported_from_the_package():
    errors = {name for name, value in vars(eviscene.errors).items()
              if isinstance(value, type) and issubclass(value, eviscene.errors.EvisceneError)}
    assert errors <= set(eviscene.__all__)
    assert all(getattr(eviscene, name) is getattr(eviscene.errors, name) for name in errors)


def test_the_public_names_are_listed_by_dir_and_help_without_importing_them():
    """A notebook's tab completion and `help(eviscene)` read `dir()`: the lazily imported names
    were missing from it (a module `__getattr__` without its `__dir__`)."""
    import pydoc

    import eviscene.store
    import eviscene.tools

    for package in (eviscene, eviscene.store, eviscene.tools):
        assert set(package.__all__) <= set(dir(package)), package.__name__
    listed = "import sys, eviscene; assert set(eviscene.__all__) <= set(dir(eviscene)); print('eviscene.eval.run' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", listed], capture_output=True, text=True, check=True).stdout == "False\n"
    page = pydoc.render_doc(eviscene)
    assert all(name in page for name in ("open_log", "EventLog", "start_run", "LogLockedError"))


def test_a_merge_into_a_new_archive_still_creates_it(tmp_path):
    source = sandbox_log.build(tmp_path)
    target = tmp_path / "merged.duckdb"
    result = subprocess.run([EVISCENE, "--db", str(target), "log", "merge", str(source)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    # Merged, then verified: intact, and its runs (written without run.finished) named unfinished.
    assert result.returncode == 1 and "every chain intact" in result.stderr, result.stderr
    assert target.is_file()
    assert open_log(target).sql("SELECT count(*) AS n FROM events")["n"].to_pylist() == [sum(sandbox_log.EVENTS.values())]
