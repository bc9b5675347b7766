"""`eviscene sql` and `EventLog.sql` read the log and nothing else, and write nothing.

Every hostile statement runs against a copy of a real log; afterwards every file under the
test's folder (the log, its live folder, anything else) is byte for byte what it was, and
no file appeared. The statements are those of issue 9 plus generated lists: one per DuckDB
statement type, every file-reading table function, every setting, and the table functions
with side effects.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from eviscene.errors import QueryRefusedError
from eviscene.log import EventLog
from eviscene.store.snapshot import Sandbox, check_query, open_snapshot, spill_directory
import sandbox_log

EVISCENE = str(Path(sys.executable).with_name("eviscene"))


@pytest.fixture(scope="module")
def original(tmp_path_factory) -> Path:
    return sandbox_log.build(tmp_path_factory.mktemp("original"))


@pytest.fixture
def log_copy(original, tmp_path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "secret.txt").write_text("not yours\n", encoding="utf-8")
    return sandbox_log.copy(original, folder)


def eviscene(log_path: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [EVISCENE, "--db", str(log_path), *args], capture_output=True, text=True, timeout=120, cwd=log_path.parent, **kwargs
    )


def _unchanged_after(log_path: Path, run) -> None:
    folder = log_path.parent
    before = sandbox_log.fingerprint(folder)
    run()
    assert sandbox_log.fingerprint(folder) == before, "the log or its folder changed"


def _refused_in_process(log_path: Path, statements: list[str], *, parse_check: bool = True) -> None:
    """Each statement is refused on one sandboxed connection: by the one-SELECT check and
    DuckDB, or (`parse_check=False`) by DuckDB's guard rails alone."""
    def run():
        con = EventLog(log_path).connect(views=False)
        try:
            for statement in statements:
                with pytest.raises((QueryRefusedError, duckdb.Error)):
                    if parse_check:
                        check_query(con, statement)
                    con.execute(statement)
            # The sandbox still answers afterwards, and the log still holds every event.
            assert con.execute("SELECT count(*) FROM events").fetchone()[0] == sum(sandbox_log.EVENTS.values())
        finally:
            con.close()

    _unchanged_after(log_path, run)


def _issue_statements(log: str) -> list[str]:
    return [
        f"COPY (SELECT 'x' AS a) TO '{log}' (FORMAT csv)",
        f"COPY (SELECT 'x' AS a) TO '{log}' (FORMAT csv, USE_TMP_FILE false)",
        f"COPY (SELECT 'x' AS a) TO '{log}.live/live/events-000000000001-000000000021.parquet' (FORMAT parquet)",
        "COPY (SELECT 1 AS a) TO 'created.csv' (FORMAT csv)",
        "DETACH archive",
        f"ATTACH '{log}' AS a2",
        f"DETACH archive; ATTACH '{log}' AS a2; DELETE FROM a2.events WHERE seq = 5",
        "ATTACH 'created.duckdb' AS created",
        "SELECT * FROM read_csv('/etc/shadow')",
        "SELECT * FROM read_text('/etc/passwd')",
        "INSTALL httpfs",
        "LOAD httpfs",
        "SET enable_external_access = true",
        "SET lock_configuration = false",
        "RESET lock_configuration",
        "SET threads = 1",
        "CREATE TABLE archive.stolen AS SELECT 1 AS a",
        "INSERT INTO archive.events SELECT * FROM archive.events LIMIT 1",
        "DELETE FROM archive.events WHERE seq = 5",
        "UPDATE archive.events SET type = 'x' WHERE seq = 5",
        "CREATE TABLE created AS SELECT 1 AS a",
        "PRAGMA force_checkpoint",
        "PRAGMA enable_profiling",
        "CHECKPOINT",
        "EXPORT DATABASE 'exported'",
    ]


# One SQL text per DuckDB statement type that SQL text can express; the test below checks
# that DuckDB's parser classifies each as named, so the list covers every type.
STATEMENT_TYPES = {
    "ALTER": "ALTER TABLE archive.events ADD COLUMN x INTEGER",
    "ATTACH": "ATTACH ':memory:' AS scratch",
    "CALL": "CALL pragma_version()",
    "COPY": "COPY archive.events TO 'events.csv'",
    "CREATE": "CREATE MACRO m(x) AS x",
    "DELETE": "TRUNCATE archive.events",
    "DETACH": "DETACH archive",
    "DROP": "DROP TABLE archive.events",
    "EXECUTE": "EXECUTE p",
    "EXPLAIN": "EXPLAIN ANALYZE COPY (SELECT 1) TO 'explained.csv'",
    "EXPORT": "EXPORT DATABASE 'exported' (FORMAT parquet)",
    "INSERT": "INSERT INTO archive.blobs VALUES ('x', 'text/plain', 1, 'x'::BLOB)",
    "LOAD": "FORCE INSTALL parquet",
    "MERGE_INTO": "MERGE INTO archive.events USING (SELECT 1 AS seq) s USING (seq) WHEN MATCHED THEN DELETE",
    "MULTI": "PIVOT events ON type",
    "PRAGMA": "IMPORT DATABASE 'exported'",
    "PREPARE": "PREPARE p AS SELECT 1",
    "SET": "USE archive",
    "TRANSACTION": "BEGIN TRANSACTION",
    "UPDATE": "UPDATE archive.events SET step = 0",
    "VACUUM": "VACUUM ANALYZE archive.events",
}
# Types the parser never returns for SQL text (plan-level, or SELECT, which is what runs).
NOT_FROM_TEXT = {"SELECT", "INVALID", "RELATION", "LOGICAL_PLAN", "ANALYZE", "COPY_DATABASE", "CREATE_FUNC", "EXTENSION", "VARIABLE_SET"}


def test_the_statement_type_list_covers_every_type():
    con = duckdb.connect()
    for name, statement in STATEMENT_TYPES.items():
        assert [s.type.name for s in con.extract_statements(statement)] == [name], statement
    every = {t for t in dir(duckdb.StatementType) if t.isupper()}
    assert every - NOT_FROM_TEXT == set(STATEMENT_TYPES)


def _file_table_functions() -> list[str]:
    """Every table function of this DuckDB that opens a path: the readers, the Parquet
    metadata functions, glob and sniff_csv."""
    names = duckdb.connect().execute(
        "SELECT DISTINCT function_name FROM duckdb_functions() WHERE function_type = 'table' ORDER BY 1"
    ).fetchall()
    found = [n for (n,) in names if re.match(r"^(read_|parquet_|sniff_csv$|glob$)", n)]
    assert {"read_csv", "read_json", "read_parquet", "read_text", "read_blob", "glob", "parquet_metadata", "sniff_csv"} <= set(found)
    return found


def _settings() -> list[str]:
    return [n for (n,) in duckdb.connect().execute("SELECT name FROM duckdb_settings() ORDER BY name").fetchall()]


NAME_LOOKUP_SETTINGS = ("schema", "search_path")

# Table functions that act rather than read; whatever they do, nothing on disk changes.
SIDE_EFFECT_CALLS = [
    "SELECT * FROM checkpoint()",
    "SELECT * FROM force_checkpoint()",
    "SELECT * FROM checkpoint('archive')",
    "SELECT * FROM enable_profiling()",
    "SELECT * FROM enable_logging()",
    "SELECT * FROM truncate_duckdb_logs()",
    "SELECT * FROM query('COPY (SELECT 1) TO ''q.csv''')",
    "SELECT * FROM json_execute_serialized_sql(json_serialize_sql('COPY (SELECT 1) TO ''j.csv'''))",
    "SELECT * FROM read_duckdb('created.duckdb', table_name => 'events')",
]


@pytest.mark.parametrize("index", range(len(_issue_statements("LOG"))))
def test_each_hostile_statement_of_the_issue_is_one_line_and_exit_2(log_copy, index):
    statement = _issue_statements(str(log_copy))[index]
    result = None

    def run():
        nonlocal result
        result = eviscene(log_copy, "sql", statement)

    _unchanged_after(log_copy, run)
    assert result.returncode == 2, (statement, result.stdout, result.stderr)
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
    assert result.stdout == ""


# Statements with the name their refusal must give. DuckDB's parser files the first ones under
# another statement's type (in brackets), which the refusal must not name instead.
NAMED_AS_WRITTEN = [
    ("TRUNCATE events", "TRUNCATE"),  # DELETE
    ("truncate table archive.events", "TRUNCATE"),  # DELETE
    ("USE archive", "USE"),  # SET
    ("/* a note */ use memory", "USE"),  # SET
    ("RESET threads", "RESET"),  # SET
    ("INSTALL httpfs", "INSTALL"),  # LOAD
    ("force install parquet", "INSTALL"),  # LOAD
    ("-- a note\nINSTALL httpfs", "INSTALL"),  # LOAD
    ("CHECKPOINT", "CHECKPOINT"),  # CALL
    ("FORCE CHECKPOINT archive", "CHECKPOINT"),  # CALL
    ("IMPORT DATABASE 'exported'", "IMPORT"),  # PRAGMA
    ("ANALYZE archive.events", "ANALYZE"),  # VACUUM
    ("BEGIN TRANSACTION", "BEGIN"),  # TRANSACTION
    ("WITH doomed AS (SELECT 5 AS seq) DELETE FROM archive.events WHERE seq IN (SELECT seq FROM doomed)", "DELETE"),
    ("DETACH archive", "DETACH"),
    ("VACUUM", "VACUUM"),
    ("LOAD httpfs", "LOAD"),
    ("PRAGMA force_checkpoint", "PRAGMA"),
    ("CALL pragma_version()", "CALL"),
    ("EXPORT DATABASE 'exported'", "EXPORT"),
    ("ALTER TABLE archive.events ADD COLUMN x INTEGER", "ALTER"),
    ("DROP TABLE archive.events", "DROP"),
    ("INSERT INTO archive.events SELECT * FROM archive.events LIMIT 1", "INSERT"),
    ("UPDATE archive.events SET step = 0", "UPDATE"),
    ("DELETE FROM archive.events", "DELETE"),
    ("COPY archive.events TO 'events.csv'", "COPY"),
    ("ATTACH 'created.duckdb' AS created", "ATTACH"),
    ("CREATE TABLE archive.stolen AS SELECT 1 AS a", "CREATE"),
    ("SET threads = 1", "SET"),
    ("UPDATE EXTENSIONS", "UPDATE"),  # a type duckdb's Python enum does not name
]


@pytest.mark.parametrize(("statement", "name"), NAMED_AS_WRITTEN, ids=[s for s, _ in NAMED_AS_WRITTEN])
def test_the_refusal_names_the_statement_as_written(log_copy, statement, name):
    result = None

    def run():
        nonlocal result
        result = eviscene(log_copy, "sql", "--", statement)

    _unchanged_after(log_copy, run)
    assert result.returncode == 2 and result.stdout == "" and result.stderr == (
        f"Error: only a SELECT statement runs over the log; {name} is refused (the log is read-only: results leave "
        "with --output FILE, your own files come in with --read PATH)\n"
    )


def test_every_statement_type_but_select_is_refused(log_copy):
    _refused_in_process(log_copy, list(STATEMENT_TYPES.values()))


@pytest.mark.parametrize("function", _file_table_functions())
def test_file_table_functions_cannot_open_files_outside_the_log(log_copy, function):
    paths = ("/etc/passwd", log_copy.parent / "secret.txt", log_copy.parent / "*", log_copy.parent / "log.duckdb.live" / "live" / "writer.lock")
    _refused_in_process(log_copy, [f"SELECT * FROM {function}('{path}')" for path in paths], parse_check=False)


def test_no_setting_can_be_changed_even_past_the_select_check(log_copy):
    con = duckdb.connect()
    statements = {}
    for name in _settings():
        value = con.execute("SELECT current_setting(?)", [name]).fetchone()[0]
        statements[name] = [f"SET {name} = '{str(value).replace(chr(39), chr(39) * 2)}'", f"RESET {name}"]
    # Name lookup, not access: the locked configuration leaves these two to the session (as
    # USE does); the one-SELECT check refuses them.
    session = [s for name in NAME_LOOKUP_SETTINGS for s in statements.pop(name)]
    _refused_in_process(log_copy, [s for pair in statements.values() for s in pair], parse_check=False)
    _refused_in_process(log_copy, session)


def test_table_functions_with_side_effects_change_nothing_on_disk(log_copy):
    for statement in SIDE_EFFECT_CALLS:
        def run(statement=statement):
            try:
                EventLog(log_copy).sql(statement)
            except (QueryRefusedError, duckdb.Error):
                pass

        _unchanged_after(log_copy, run)


def test_the_log_is_unchanged_by_a_plain_query_and_answers_it(log_copy):
    result = None

    def run():
        nonlocal result
        result = eviscene(log_copy, "sql", "SELECT run_id, count(*) AS n FROM events GROUP BY run_id ORDER BY run_id", "--format", "csv")

    _unchanged_after(log_copy, run)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "run_id,n\nlive,21\nsealed,41\n"


def test_empty_and_comment_only_sql_is_a_clear_error(log_copy):
    for text in ("", "   \n\t", "-- nothing here"):
        result = eviscene(log_copy, "sql", "--", text)
        assert result.returncode == 2 and result.stderr.startswith("Error: no SQL given"), result.stderr


def test_two_statements_are_refused(log_copy):
    result = eviscene(log_copy, "sql", "SELECT 1; SELECT 2")
    assert result.returncode == 2 and result.stderr == "Error: one statement at a time: the SQL holds 2\n"


def test_read_opens_exactly_the_named_file(log_copy, tmp_path):
    notes = tmp_path / "notes.csv"
    notes.write_text("run_id,note\nsealed,first\nlive,second\n", encoding="utf-8")
    (tmp_path / "notes2.csv").write_text("run_id,note\nsealed,other\n", encoding="utf-8")
    query = "SELECT e.run_id, n.note, count(*) AS n FROM events e JOIN '{}' n USING (run_id) GROUP BY ALL ORDER BY 1"
    ok = eviscene(log_copy, "sql", query.format(notes), "--read", str(notes), "--format", "csv")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout == "run_id,note,n\nlive,second,21\nsealed,first,41\n"
    for other in (tmp_path / "notes2.csv", log_copy.parent / "secret.txt"):
        refused = eviscene(log_copy, "sql", f"SELECT * FROM read_csv('{other}')", "--read", str(notes))
        assert refused.returncode == 2 and "Permission Error" in refused.stderr, refused.stderr
    # Nor can the named file be written over.
    copy_over = eviscene(log_copy, "sql", f"COPY (SELECT 1 AS a) TO '{notes}'", "--read", str(notes))
    assert copy_over.returncode == 2
    assert notes.read_text(encoding="utf-8").startswith("run_id,note")


def test_read_of_a_folder_opens_what_is_inside_and_nothing_beside_it(log_copy, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "a.csv").write_text("x\n1\n2\n", encoding="utf-8")
    (tmp_path / "data2").mkdir()
    (tmp_path / "data2" / "b.csv").write_text("x\n3\n", encoding="utf-8")
    ok = eviscene(log_copy, "sql", f"SELECT sum(x) AS s FROM '{folder}/*.csv'", "--read", str(folder), "--format", "csv")
    assert ok.returncode == 0 and ok.stdout == "s\n3\n", ok.stderr
    for escape in (f"{tmp_path}/data2/b.csv", f"{folder}/../data2/b.csv", f"{folder}/../../work/secret.txt"):
        refused = eviscene(log_copy, "sql", f"SELECT * FROM read_text('{escape}')", "--read", str(folder))
        assert refused.returncode == 2 and "Permission Error" in refused.stderr, (escape, refused.stdout, refused.stderr)


def test_a_link_in_a_read_folder_is_read_only_where_it_stays_inside_the_folder(log_copy, tmp_path):
    # DuckDB resolves a path's links before it checks it against the allowed folders.
    folder = tmp_path / "data"
    (folder / "deep").mkdir(parents=True)
    (folder / "a.csv").write_text("x\n1\n2\n", encoding="utf-8")
    (folder / "deep" / "same.csv").symlink_to(Path("..") / "a.csv")
    ok = eviscene(log_copy, "sql", f"SELECT sum(x) AS s FROM '{folder}/deep/same.csv'", "--read", str(folder), "--format", "csv")
    assert ok.returncode == 0 and ok.stdout == "s\n3\n", ok.stderr
    # A link leading out: DuckDB refuses a read through it, but a glob listed the names behind
    # it (`glob('DATA/*/*')`), so such a folder is not read at all.
    (folder / "work").symlink_to(log_copy.parent, target_is_directory=True)
    listed = eviscene(log_copy, "sql", f"SELECT * FROM glob('{folder}/*/*')", "--read", str(folder))
    assert (listed.returncode, listed.stdout) == (2, "") and listed.stderr == (
        f"Error: cannot read {folder}: path 'work' resolves to {log_copy.parent}, outside the folder {folder} (a link "
        "leading out); give what it points to its own --read (read= in Python), or move the link out\n"
    )
    (folder / "work").unlink()
    (folder / "deep" / "secret.txt").symlink_to(log_copy.parent / "secret.txt")
    for link in ("deep/secret.txt", "deep/*", "**/*.txt"):
        refused = eviscene(log_copy, "sql", f"SELECT * FROM read_text('{folder}/{link}')", "--read", str(folder))
        assert refused.returncode == 2 and refused.stdout == "" and "path 'deep/secret.txt' resolves to" in refused.stderr, (link, refused.stderr)
    with pytest.raises(QueryRefusedError, match="path 'deep/secret.txt' resolves to .* outside the folder"):
        EventLog(log_copy).sql("SELECT 1", read=[folder])


def test_a_link_planted_where_the_spill_folder_was_opens_nothing(log_copy, tmp_path):
    # The spill folder was `<temp>/eviscene-duckdb-spill`, which the sandbox lets every query
    # read: anyone who may write to the temp directory could plant it as a link (to /, to
    # another user's files) beforehand.
    temp = tmp_path / "temp"
    temp.mkdir()
    planted = temp / "eviscene-duckdb-spill"
    planted.symlink_to(log_copy.parent, target_is_directory=True)
    result = eviscene(log_copy, "sql", f"SELECT content FROM read_text('{planted}/secret.txt')", env={**os.environ, "TMPDIR": str(temp)})
    assert result.returncode == 2 and "Permission Error" in result.stderr and "not yours" not in result.stdout
    assert not list(temp.glob("eviscene-spill-*")), "the process's own spill folder outlived it"


def test_each_process_spills_into_a_private_folder_of_its_own_removed_when_it_exits(tmp_path):
    probe = (
        "import os, stat\n"
        "from eviscene.store.snapshot import spill_directory\n"
        "folder = spill_directory()\n"
        "info = os.lstat(folder)\n"
        "print(folder, stat.S_ISDIR(info.st_mode), oct(stat.S_IMODE(info.st_mode)), info.st_uid == os.geteuid(), spill_directory() == folder)\n"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    answers = [subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True).stdout.split()
               for _ in range(2)]
    folders = [Path(answer[0]) for answer in answers]
    assert [answer[1:] for answer in answers] == [["True", "0o700", "True", "True"]] * 2
    assert folders[0] != folders[1] and all(folder.parent == tmp_path.resolve() for folder in folders)
    assert not any(folder.exists() for folder in folders)


def test_a_temp_directory_without_flock_still_spills(tmp_path):
    """A file system that refuses flock (some FUSE or Lustre mounts) must not stop a query:
    the spill folder then has no owner file and is never swept."""
    probe = (
        "import errno, fcntl\n"
        "def refuse(*args):\n    raise OSError(errno.ENOSYS, 'Function not implemented')\n"
        "fcntl.flock = refuse\n"
        "from eviscene.store.snapshot import spill_directory\n"
        "folder = spill_directory()\n"
        "print(sorted(p.name for p in folder.iterdir()))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], env={**os.environ, "TMPDIR": str(tmp_path)}, capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "[]\n", "")


def test_a_temp_directory_others_may_write_to_is_refused_for_spilling(log_copy, tmp_path):
    temp = tmp_path / "open"
    temp.mkdir()
    temp.chmod(0o777)  # not sticky: another user could rename the spill folder and put a link there
    result = eviscene(log_copy, "sql", "SELECT 1 AS one", env={**os.environ, "TMPDIR": str(temp)})
    assert result.returncode == 2 and result.stdout == ""
    assert re.fullmatch(
        rf"Error: another user could replace the SQL spill folder {re.escape(str(temp))}/eviscene-spill-\w+: "
        rf"{re.escape(str(temp))} is writable by others and not sticky; point TMPDIR at a folder of your own\n",
        result.stderr,
    ), result.stderr
    assert not list(temp.iterdir())


def test_a_large_query_spills_into_the_private_folder_and_leaves_nothing_there(log_copy):
    con = open_snapshot(log_copy, sandbox=Sandbox(memory_limit=100_000_000))
    try:
        con.execute("CREATE TEMP TABLE big AS SELECT i, md5(i::VARCHAR) AS m, md5(m) AS n FROM range(3000000) t(i)")
        assert any(p.name != ".owner" for p in spill_directory().iterdir())
    finally:
        con.close()
    assert [p.name for p in spill_directory().iterdir()] == [".owner"]  # the lock its process holds


def test_the_spill_folder_of_a_killed_process_is_removed_by_the_next_that_spills(tmp_path):
    """A process killed by SIGKILL (or the OOM killer) left its spill folder, whatever it held,
    for good; the next process to spill removes it, and never a living process's."""
    make = "from eviscene.store.snapshot import spill_directory\nprint(spill_directory(), flush=True)\n"
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    living = subprocess.Popen([sys.executable, "-c", make + "input()\n"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        kept = Path(living.stdout.readline().strip())
        killed = subprocess.Popen([sys.executable, "-c", make + "(spill_directory() / 'spilled.tmp').write_bytes(b'x' * 1000)\n"
                                   "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"], env=env, stdout=subprocess.PIPE, text=True)
        left = Path(killed.stdout.readline().strip())
        killed.wait()
        assert left.is_dir() and (left / "spilled.tmp").exists() and kept.is_dir()
        elsewhere = tmp_path / "eviscene-spill-of-another-host"  # a shared temp directory: its lock may not show here
        elsewhere.mkdir(mode=0o700)
        (elsewhere / ".owner").write_text("another-host")
        sweeper = subprocess.run([sys.executable, "-c", make], env=env, capture_output=True, text=True, check=True)
        assert not left.exists() and kept.is_dir() and elsewhere.is_dir()
        assert Path(sweeper.stdout.strip()) != kept
    finally:
        living.communicate("\n", timeout=60)
    assert not kept.exists()


def test_read_of_a_missing_path_is_an_error(log_copy, tmp_path):
    result = eviscene(log_copy, "sql", "SELECT 1", "--read", str(tmp_path / "nope.csv"))
    assert result.returncode == 2 and "nope.csv" in result.stderr


def test_the_python_api_is_the_same_sandbox(log_copy, tmp_path):
    log = EventLog(log_copy)
    with pytest.raises(QueryRefusedError, match="add --read /etc/passwd$"):
        log.sql("SELECT * FROM read_text('/etc/passwd')")
    with pytest.raises(QueryRefusedError):
        log.sql("SELECT 1; COPY events TO 'x.csv'")
    assert sorted(log.view("runs")["run_id"].to_pylist()) == ["live", "sealed"]
    notes = tmp_path / "n.csv"
    notes.write_text("a\n7\n", encoding="utf-8")
    assert log.sql(f"SELECT a FROM '{notes}'", read=[notes])["a"].to_pylist() == [7]
    # one path given alone is that path (it was read as a list of its characters: "nothing to read at /")
    assert log.sql(f"SELECT a FROM '{notes}'", read=str(notes))["a"].to_pylist() == [7]
    assert log.sql(f"SELECT a FROM '{notes}'", read=notes)["a"].to_pylist() == [7]
    assert log.sql("SELECT count(*) AS n FROM events WHERE run_id = ?", ["live"])["n"].to_pylist() == [21]


def test_memory_is_limited_again_on_a_connection_that_has_spilled():
    """`log verify` bounds DuckDB's memory for its duplicate check, then the walk bounds it
    again: setting the spill folder a second time, once a query had spilled into it, failed
    ("Cannot switch temporary directory after the current one has been used") and stopped
    every verification of a log large enough to spill (a 100k-episode run's)."""
    from eviscene.store.snapshot import limit_memory, new_connection

    con = new_connection()
    limit_memory(con, 64 * 2**20)
    con.execute("SELECT count(*) FROM (SELECT repeat('x', 100) || i::VARCHAR AS s FROM range(2000000) t(i) ORDER BY s DESC)").fetchall()
    limit_memory(con, 32 * 2**20)
    assert con.execute("SELECT current_setting('temp_directory'), current_setting('memory_limit')").fetchall() == [
        (str(spill_directory()), "32.0 MiB")]
