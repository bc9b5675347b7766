"""Results leave `eviscene sql` on stdout (--format) or in a file EviScene writes (--output),
streamed in bounded memory; tables fit the terminal; JSON is JSON and integers integers."""

import csv
import hashlib
import io
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import click
import duckdb
import pyarrow.parquet as pq
import pytest

import sandbox_log
from pseudo_terminal import written_to_a_terminal
from eviscene.cli.numbers import MEMORY_SIZE
from eviscene.errors import EvisceneError
from eviscene.log import EventLog

EVISCENE = str(Path(sys.executable).with_name("eviscene"))
BENCHMARK = str(Path(__file__).resolve().parents[2] / "examples" / "eviscene-demo-v1" / "runtime_input" / "cases.jsonl")
PAYLOAD_QUERY = "SELECT run_id, seq, step, payload FROM events WHERE run_id = 'live' AND seq <= 3 ORDER BY seq"


@pytest.fixture(scope="module")
def log_path(tmp_path_factory) -> Path:
    return sandbox_log.build(tmp_path_factory.mktemp("log"))


def eviscene(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([EVISCENE, *args], capture_output=True, text=True, timeout=300, cwd=cwd, env=env)


def expected_payload(step: int) -> dict:
    return {"type": "gate.decided", "gate": "demo", "subject": f"s{step}", "passed": step % 2 == 0, "reasons": []}


@pytest.mark.parametrize("suffix", [".csv", ".json", ".jsonl", ".parquet"])
def test_output_writes_each_format_and_it_reloads(log_path, tmp_path, suffix):
    target = tmp_path / f"rows{suffix}"
    result = eviscene("--db", str(log_path), "sql", PAYLOAD_QUERY, "--output", str(target), cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == "", result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name], "no temporary file is left behind"
    if suffix == ".parquet":
        rows = pq.read_table(target).to_pylist()
        assert [(r["run_id"], r["seq"], r["step"]) for r in rows] == [("live", 1, None), ("live", 2, 0), ("live", 3, 1)]
        assert json.loads(rows[1]["payload"]) == expected_payload(0)
    elif suffix == ".json":  # was refused (`must end in .csv, .jsonl, .parquet`) though --format json exists
        rows = json.loads(target.read_text(encoding="utf-8"))
        assert [r["seq"] for r in rows] == [1, 2, 3] and rows[1]["payload"] == expected_payload(0)
        stdout = eviscene("--db", str(log_path), "sql", PAYLOAD_QUERY, "--format", "json", cwd=tmp_path).stdout
        assert target.read_text(encoding="utf-8") == stdout
    elif suffix == ".jsonl":
        rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
        assert [r["seq"] for r in rows] == [1, 2, 3]
        assert rows[1]["payload"] == expected_payload(0) and rows[2]["payload"] == expected_payload(1)
        assert rows[0]["step"] is None
    else:
        rows = list(csv.DictReader(io.StringIO(target.read_text(encoding="utf-8"))))
        assert [r["seq"] for r in rows] == ["1", "2", "3"]
        assert json.loads(rows[2]["payload"]) == expected_payload(1)
        # The same bytes as --format csv on stdout.
        stdout = eviscene("--db", str(log_path), "sql", PAYLOAD_QUERY, "--format", "csv", cwd=tmp_path).stdout
        assert target.read_text(encoding="utf-8") == stdout
        # DuckDB reads it back as the same table.
        assert duckdb.sql(f"SELECT count(*) FROM '{target}'").fetchall() == [(3,)]


def test_output_never_overwrites_the_log_or_its_folder(log_path, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    copy = sandbox_log.copy(log_path, work)
    before = sandbox_log.fingerprint(work)
    segment = next((work / "log.duckdb.live" / "live").glob("events-*.parquet"))
    for target in (copy, segment, work / "log.duckdb.live" / "x.parquet", work / "log.duckdb.wal", work / "log.duckdb.live" / "live" / "new.csv"):
        result = eviscene("--db", str(copy), "sql", "SELECT 1 AS a", "--output", str(target), cwd=work)
        assert result.returncode == 2 and result.stderr.count("\n") == 1 and "never overwrite the log" in result.stderr, (target, result.stderr)
    # The log's own name is refused whatever its suffix; an unknown suffix is refused too.
    other = eviscene("--db", str(copy), "sql", "SELECT 1 AS a", "--output", str(work / "rows.txt"), cwd=work)
    assert other.returncode == 2 and "must end in" in other.stderr
    assert sandbox_log.fingerprint(work) == before


def test_a_format_that_disagrees_with_the_output_file_is_named_not_ignored(log_path, tmp_path):
    target = tmp_path / "rows.csv"
    result = eviscene("--db", str(log_path), "sql", "SELECT 1 AS a", "--format", "json", "--output", str(target), cwd=tmp_path)
    assert result.returncode == 2 and list(tmp_path.iterdir()) == []
    assert result.stderr.endswith(f"Error: --format json and --output {target} disagree: the file's name (.csv) sets its format\n")
    agreed = eviscene("--db", str(log_path), "sql", "SELECT 1 AS a", "--format", "csv", "--output", str(target), cwd=tmp_path)
    assert agreed.returncode == 0 and target.read_text(encoding="utf-8") == "a\n1\n"


def test_no_command_writes_its_output_over_the_log_or_into_its_live_folder(log_path, tmp_path):
    """`report --out` wrote its HTML over the archive itself (the log was gone), and
    `log export-parquet` into the live folder left `events` and `blobs` there as runs that
    every later seal stumbled on."""
    work = tmp_path / "work"
    work.mkdir()
    copy = sandbox_log.copy(log_path, work)
    before = sandbox_log.fingerprint(work)
    live = work / "log.duckdb.live"
    for option, target in (("--out", copy), ("--out", work / "log.duckdb.wal"), ("--out", live / "live" / "report.html")):
        result = eviscene("--db", str(copy), "report", "sealed", option, str(target), cwd=work)
        assert (result.returncode, result.stderr) == (2, f"Error: {option} {target}: that is the log's own file; results never overwrite the log\n")
    for command, option in ((["log", "export-parquet"], "DIRECTORY"), (["materialize", "sealed", "--out"], "--out"),
                            (["dataset", "export", "--run", "sealed", "--out"], "--out"),
                            (["eval", "run", "--benchmark", BENCHMARK, "--output-dir"], "--output-dir"),
                            (["eval", "resume", "sealed", "--output-dir"], "--output-dir")):
        result = eviscene("--db", str(copy), *command, str(live), cwd=work)
        assert (result.returncode, result.stderr) == (2, f"Error: {option} {live}: that is the log's own file; results never overwrite the log\n")
    assert sandbox_log.fingerprint(work) == before


@pytest.mark.parametrize("command", [["eval", "run", "--benchmark", BENCHMARK, "--limit", "1", "--no-progress", "--output-dir"],
                                     ["dataset", "export", "--run", "sealed", "--out"], ["materialize", "sealed", "--out"]],
                                     ids=lambda c: " ".join(c[:2]))
def test_an_output_folder_that_holds_the_log_is_refused_before_any_work(log_path, tmp_path, command):
    """`--db fresh/log.duckdb eval run --output-dir fresh` ran the whole run, then found its new
    folder not empty (the log was made there) and wrote no run directory; `dataset export`
    recorded its import the same way before refusing."""
    folder = tmp_path / "fresh"
    log = folder / "log.duckdb"
    if command[0] != "eval":  # a run makes its log; the others read one
        folder.mkdir()
        sandbox_log.copy(log_path, folder)
    before = sandbox_log.fingerprint(folder) if folder.exists() else None
    result = eviscene("--db", str(log), *command, str(folder), cwd=tmp_path)
    option = "--output-dir" if command[0] == "eval" else "--out"
    assert (result.returncode, result.stderr) == (2, (
        f"Error: {option} {folder}: holds the log {log}, so it is not new or empty as an output folder must be; name another folder\n"))
    assert (sandbox_log.fingerprint(folder) if folder.exists() else None) == before


def test_an_export_folder_may_hold_the_log(log_path, tmp_path):
    """`log export-parquet .` beside the log: an export adds to its folder, which need not be new."""
    copy = sandbox_log.copy(log_path, tmp_path)
    result = eviscene("--db", str(copy), "log", "export-parquet", ".", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.startswith("exported "), result.stderr
    assert EventLog(tmp_path).sql("SELECT count(*) AS n FROM events").to_pylist() == EventLog(copy).sql("SELECT count(*) AS n FROM events").to_pylist()


def library_writers(log: EventLog, copy: Path) -> dict:
    """Each library function that writes beside a log, by the name its refusals give it."""
    from eviscene.exports.dataset import ExportOptions, export_dataset
    from eviscene.exports.run_dir import materialize_run
    from eviscene.store.parquet_export import export_parquet
    from eviscene.viewer.report import build_report

    return {
        "report": lambda target: build_report(log, "sealed", target),
        "run directory": lambda target: materialize_run(log, "sealed", target, replace=True, unfinished_as_errors=True),
        "dataset output directory": lambda target: export_dataset(log, ExportOptions(out_dir=target, runs=["sealed"])),
        "export folder": lambda target: export_parquet(copy, target, duckdb.connect()),
    }


def test_no_library_writer_writes_over_the_log_or_into_its_live_folder(log_path, tmp_path):
    """The commands checked their paths, the functions behind them did not: from Python,
    `build_report(log, run, log.path)` wrote its HTML over the archive, `materialize_run(...,
    replace=True)` at the log's place moved the archive aside and deleted it, and
    `export_parquet` into the live folder left `events/` there as a run."""
    from eviscene.exports.run_dir import materialize_run

    work = tmp_path / "work"
    work.mkdir()
    copy = sandbox_log.copy(log_path, work)
    log = EventLog(copy)
    before = sandbox_log.fingerprint(work)
    live = work / "log.duckdb.live"
    writers = library_writers(log, copy)
    for name, write in writers.items():
        for target in (copy, str(copy), work / "log.duckdb.wal", live, live / "live" / "out"):  # str as Path
            with pytest.raises(EvisceneError) as refused:
                write(target)
            assert str(refused.value) == f"{name} {target}: that is the log's own file; results never overwrite the log"
    with pytest.raises(EvisceneError) as refused:  # replacing the folder that holds the log would delete it
        materialize_run(log, "sealed", work, replace=True, unfinished_as_errors=True)
    assert str(refused.value) == f"run directory {work}: holds the log {copy}; a folder holding the log is never replaced"
    assert sandbox_log.fingerprint(work) == before


def test_columns_of_one_name_and_non_finite_numbers_keep_every_value_in_every_format(log_path, tmp_path):
    """Rows are written by column name: two columns `a` showed the second's value twice (table)
    or kept one (JSON). JSON has no NaN or Infinity: null there, as pandas writes them, and in
    the JSON text of a csv or table cell (a number of its own stays `nan`, as DuckDB writes it)."""
    query = ("SELECT 1 AS a, 2 AS a, 3 AS A, 'nan'::DOUBLE AS x, '-inf'::DOUBLE AS y, [0.5, 'inf'::DOUBLE] AS l, "
             "to_json({'z': 'nan'::DOUBLE}) AS j")
    out = {fmt: eviscene("--db", str(log_path), "sql", query, "--format", fmt, cwd=tmp_path).stdout for fmt in ("jsonl", "csv", "table")}
    assert out["jsonl"] == '{"a":1,"a_1":2,"A_2":3,"x":null,"y":null,"l":[0.5,null],"j":{"z":null}}\n'
    assert out["csv"] == 'a,a_1,A_2,x,y,l,j\n1,2,3,nan,-inf,"[0.5,null]","{""z"":null}"\n'
    assert out["table"].splitlines()[2] == '1  2    3    nan  -inf  [0.5,null]  {"z":null}'
    as_json = eviscene("--db", str(log_path), "sql", query, "--format", "json", cwd=tmp_path).stdout
    assert json.loads(as_json, parse_constant=pytest.fail) == [
        {"a": 1, "a_1": 2, "A_2": 3, "x": None, "y": None, "l": [0.5, None], "j": {"z": None}}]
    target = tmp_path / "rows.parquet"
    assert eviscene("--db", str(log_path), "sql", query, "--output", str(target), cwd=tmp_path).returncode == 0
    assert pq.read_table(target).column_names == ["a", "a_1", "A_2", "x", "y", "l", "j"]


def test_a_refused_query_leaves_no_output_file(log_path, tmp_path):
    result = eviscene("--db", str(log_path), "sql", "SELECT * FROM read_text('/etc/passwd')", "--output", str(tmp_path / "x.csv"), cwd=tmp_path)
    assert result.returncode == 2
    assert list(tmp_path.iterdir()) == []


def test_json_columns_are_json_and_integers_are_integers(log_path, tmp_path):
    query = (
        "SELECT run_id, sum(step) AS step_total, count(*) AS n, 1.5::DECIMAL(4, 2) AS ratio, any_value(payload) FILTER (WHERE seq = 2) AS payload "
        "FROM events WHERE run_id = 'sealed' GROUP BY run_id"
    )
    as_json = eviscene("--db", str(log_path), "sql", query, "--format", "json", cwd=tmp_path)
    assert as_json.returncode == 0, as_json.stderr
    # Steps 0..39 sum to 780; sum() of integers is a HUGEINT, printed as an integer.
    assert json.loads(as_json.stdout) == [{"run_id": "sealed", "step_total": 780, "n": 41, "ratio": 1.5, "payload": expected_payload(0)}]
    assert '"step_total": 780,' in as_json.stdout
    as_jsonl = eviscene("--db", str(log_path), "sql", query, "--format", "jsonl", cwd=tmp_path)
    assert json.loads(as_jsonl.stdout) == json.loads(as_json.stdout)[0]
    table = eviscene("--db", str(log_path), "sql", query, cwd=tmp_path)
    assert table.stdout.splitlines()[2].split()[:4] == ["sealed", "780", "41", "1.50"]  # a DECIMAL(4, 2), as DuckDB writes it


def test_tables_wrap_to_the_terminal_width_and_lose_nothing(log_path, tmp_path):
    query = "SELECT seq, payload FROM events WHERE run_id = 'live' AND seq = 2"
    piped = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env = {**piped, "COLUMNS": "40"}
    narrow = eviscene("--db", str(log_path), "sql", query, cwd=tmp_path, env=env)
    assert narrow.returncode == 0, narrow.stderr
    lines = narrow.stdout.splitlines()
    assert max(len(line) for line in lines) <= 40
    payload = json.dumps(expected_payload(0), separators=(",", ":"))
    body = "".join(line[len("seq  "):].strip() if i else line[len("2    "):].strip() for i, line in enumerate(lines[2:]))
    assert body.replace(" ", "") == payload.replace(" ", "")  # every character is there, wrapped
    # Piped with no width given, lines are whole; views too.
    whole = eviscene("--db", str(log_path), "sql", query, cwd=tmp_path, env=piped)
    assert payload in whole.stdout
    views = eviscene("views", cwd=tmp_path, env=env)
    assert views.returncode == 0 and max(len(line) for line in views.stdout.splitlines()) <= 40
    from eviscene.views import view_definitions  # nothing cut at 60 characters: only the meanings' own ellipses
    assert eviscene("views", cwd=tmp_path, env=piped).stdout.count("…") == sum(d.meaning.count("…") for d in view_definitions())


def test_a_table_too_wide_to_fit_even_wrapped_prints_each_row_on_one_line(log_path, tmp_path):
    """`eviscene runs` (14 columns) at 80 columns wrapped every cell to 8 characters and still
    overflowed the terminal: a row took four lines of fragments."""
    columns = ", ".join(f"'value {i}' AS column_number_{i}" for i in range(10))
    env = {**{k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}, "COLUMNS": "40"}
    wide = eviscene("--db", str(log_path), "sql", f"SELECT {columns} FROM range(2)", cwd=tmp_path, env=env)
    assert wide.returncode == 0, wide.stderr
    header, _rule, *rows = wide.stdout.splitlines()
    assert header.split() == [f"column_number_{i}" for i in range(10)] and len(rows) == 2
    assert rows[0].split() == [word for i in range(10) for word in ("value", str(i))]


def on_a_terminal(*args: str, cwd: Path) -> bytes:
    return written_to_a_terminal([EVISCENE, *args], cwd=cwd)


def test_csv_on_a_terminal_writes_control_characters_out_and_keeps_them_in_a_pipe(log_path, tmp_path):
    """A case id from a hostile release set a terminal's title and cleared it through `--csv`."""
    query = "SELECT chr(27) || ']0;PWNED' || chr(7) || chr(27) || '[2J' || chr(8238) || 'x' AS case_id"
    shown = on_a_terminal("--db", str(log_path), "sql", query, "--csv", cwd=tmp_path)
    assert shown == b"case_id\r\n\\x1b]0;PWNED\\x07\\x1b[2J\\u202ex\r\n"  # the terminal turns \n into \r\n
    piped = eviscene("--db", str(log_path), "sql", query, "--csv", cwd=tmp_path)
    assert piped.stdout == "case_id\n\x1b]0;PWNED\x07\x1b[2J\u202ex\n"


def test_db_is_accepted_after_the_subcommand(log_path, tmp_path):
    before = eviscene("--db", str(log_path), "sql", "SELECT count(*) AS n FROM events", "--format", "csv", cwd=tmp_path)
    after = eviscene("sql", "--db", str(log_path), "SELECT count(*) AS n FROM events", "--format", "csv", cwd=tmp_path)
    assert before.stdout == after.stdout == "n\n62\n"
    runs = eviscene("runs", "--db", str(log_path), "--format", "csv", cwd=tmp_path)
    assert runs.returncode == 0 and runs.stdout.count("\n") == 3
    verify = eviscene("log", "verify", "--db", str(log_path), cwd=tmp_path)
    assert verify.returncode == 1 and "2 unfinished run(s) in 2 run(s), 62 events; every chain intact" in verify.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_reader_that_stops_early_ends_the_command_quietly(log_path, tmp_path):
    """`eviscene sql ... | head -n 1`: the closed pipe ends the command without an error line."""
    query = "SELECT range AS i FROM range(200000)"
    piped = subprocess.run(f"'{EVISCENE}' --db '{log_path}' sql '{query}' --format csv | head -n 1",
                           shell=True, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert piped.stdout == "i\n"
    assert piped.stderr == ""


PEAK_RSS = """
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def peak_rss_mb(*command: str, cwd: Path) -> float:
    """The peak resident memory of one real `eviscene` process (measured by a parent of its own)."""
    result = subprocess.run([sys.executable, "-c", PEAK_RSS, *command], capture_output=True, text=True, timeout=600, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return int(result.stdout) / 1024


def test_a_large_result_streams_in_bounded_memory(log_path, tmp_path):
    # A million rows of ~300 bytes: about 300 MB as Arrow, several times that as Python rows.
    rows = 1_000_000
    query = f"SELECT range AS i, repeat('x', 290) || range::VARCHAR AS s FROM range({rows})"
    one_row = "SELECT 1 AS i, 'x' AS s"

    def peak(sql: str, *output: str) -> float:
        return peak_rss_mb(EVISCENE, "--db", str(log_path), "sql", sql, *output, cwd=tmp_path)

    # Each form against the same form of a one-row result: writing Parquet loads pyarrow,
    # text output does not, so they start from different floors.
    target = tmp_path / "big.parquet"
    parquet = (peak(one_row, "--output", str(tmp_path / "one.parquet")), peak(query, "--output", str(target)))
    assert pq.ParquetFile(target).metadata.num_rows == rows
    csv = (peak(one_row, "--format", "csv"), peak(query, "--format", "csv"))
    for floor, large in (parquet, csv):
        assert large < 400 and large - floor < 150, (parquet, csv)


def test_a_date_or_time_python_cannot_hold_prints_as_duckdb_names_it(log_path, tmp_path):
    """Python's dates end at year 9999 and have no infinity: such a value stopped the command
    with an OverflowError traceback (after a json format's opening `[`)."""
    query = ("SELECT 'infinity'::DATE AS d, DATE '20000-01-01' AS far, '-infinity'::TIMESTAMPTZ AS t, "
             "DATE '2020-01-02' AS near, INTERVAL 1 DAY AS i")  # the interval reads the rows as Arrow
    result = eviscene("--db", str(log_path), "sql", query, "--format", "jsonl", cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    row = json.loads(result.stdout)
    assert (row["d"], row["far"], row["t"], row["near"]) == ("infinity", "20000-01-01", "-infinity", "2020-01-02")
    # a time of day, which json could not write (a TypeError traceback)
    assert eviscene("--db", str(log_path), "sql", "SELECT TIME '23:00' AS t", "--format", "jsonl", cwd=tmp_path).stdout == '{"t":"23:00:00"}\n'


def test_a_json_number_past_a_doubles_range_is_null_in_json_output(log_path, tmp_path):
    result = eviscene("--db", str(log_path), "sql", """SELECT '{"x": 1e400, "y": 1.5}'::JSON AS j""", "--format", "jsonl", cwd=tmp_path)
    assert result.stdout == '{"j":{"x":null,"y":1.5}}\n'  # not `Infinity`, which no JSON reader takes


# A column of a type DuckDB's Python rows cannot carry: the result is read as Arrow instead.
ARROW_PATH = {False: ("", "", ""), True: (", INTERVAL 1 DAY AS i", ",i", ",1 day")}


@pytest.mark.parametrize("as_arrow", [False, True], ids=["rows", "arrow"])
def test_json_text_in_a_csv_or_table_cell_holds_null_for_a_non_finite_number(log_path, tmp_path, as_arrow):
    """The README says JSON holds null for NaN and Infinity: --csv, --output x.csv and the table
    wrote a JSON column, a list or a struct as `{"a":Infinity}` and `[1.5,NaN]`, which no JSON
    reader but Python's takes."""
    extra_column, extra_name, extra_cell = ARROW_PATH[as_arrow]
    query = """SELECT '{"a": 1e400, "b": 1.5}'::JSON AS j, [1.5, 'nan'::DOUBLE] AS l, {'x': '-inf'::DOUBLE} AS s""" + extra_column
    expected_csv = f'j,l,s{extra_name}\n"{{""a"":null,""b"":1.5}}","[1.5,null]","{{""x"":null}}"{extra_cell}\n'
    piped = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    assert eviscene("--db", str(log_path), "sql", query, "--csv", cwd=tmp_path, env=piped).stdout == expected_csv
    target = tmp_path / "x.csv"
    assert eviscene("--db", str(log_path), "sql", query, "--output", str(target), cwd=tmp_path).returncode == 0
    assert target.read_text(encoding="utf-8") == expected_csv
    table = eviscene("--db", str(log_path), "sql", query, cwd=tmp_path, env=piped).stdout
    assert table == ("j                   l           s" + ("           i" if as_arrow else "") + "\n"
                     "------------------  ----------  ----------" + ("  -----" if as_arrow else "") + "\n"
                     '{"a":null,"b":1.5}  [1.5,null]  {"x":null}' + ("  1 day" if as_arrow else "") + "\n")


@pytest.mark.parametrize("as_arrow", [False, True], ids=["rows", "arrow"])
def test_an_infinite_date_prints_as_infinity_whatever_the_other_columns_and_a_last_real_date_as_itself(log_path, tmp_path, as_arrow):
    """DuckDB's Python rows clamp an infinite DATE or TIMESTAMP to 9999-12-31 or 0001-01-01: it
    printed as a real date when every column's type read as rows, `infinity` when another
    column's type made the result Arrow."""
    extra_column, extra_name, extra_cell = ARROW_PATH[as_arrow]
    query = ("SELECT 'infinity'::DATE AS d, '-infinity'::TIMESTAMP AS t, 'infinity'::TIMESTAMPTZ AS tz, "
             "['-infinity'::DATE] AS l, {'e': 'infinity'::TIMESTAMP_MS} AS s, DATE '9999-12-31' AS last, "
             "TIMESTAMP '0001-01-01' AS first" + extra_column)
    csv_text = eviscene("--db", str(log_path), "sql", query, "--csv", cwd=tmp_path).stdout
    assert csv_text == (f"d,t,tz,l,s,last,first{extra_name}\n"
                        f'infinity,-infinity,infinity,"[""-infinity""]","{{""e"":""infinity""}}",9999-12-31,0001-01-01T00:00:00{extra_cell}\n')
    jsonl = eviscene("--db", str(log_path), "sql", query, "--jsonl", cwd=tmp_path).stdout
    assert jsonl.startswith('{"d":"infinity","t":"-infinity","tz":"infinity","l":["-infinity"],"s":{"e":"infinity"},'
                            '"last":"9999-12-31","first":"0001-01-01T00:00:00"')


@pytest.mark.parametrize("as_arrow", [False, True], ids=["rows", "arrow"])
def test_bits_and_times_with_a_time_zone_print_as_duckdb_writes_them(log_path, tmp_path, as_arrow):
    """Read as Arrow, a BIT printed its stored bytes in hex (`05fd` for 101) and a TIMETZ lost its offset."""
    extra_column, extra_name, extra_cell = ARROW_PATH[as_arrow]
    query = "SELECT '101'::BIT AS b, '12:00:00.5+05:30'::TIMETZ AS t, '23:59:59-08'::TIMETZ AS w" + extra_column
    assert eviscene("--db", str(log_path), "sql", query, "--csv", cwd=tmp_path).stdout == (
        f"b,t,w{extra_name}\n101,12:00:00.5+05:30,23:59:59-08{extra_cell}\n")


def test_a_tables_column_names_are_written_out_not_obeyed(log_path, tmp_path):
    """A name comes from the query or from a file's header (`--read`): its escape sequences
    recoloured or retitled the terminal; cells were escaped already."""
    result = eviscene("--db", str(log_path), "sql", 'SELECT 1 AS "\x1b]0;TITLE\x07name"', cwd=tmp_path)
    assert result.stdout.splitlines()[0] == "\\x1b]0;TITLE\\x07name"


def test_a_batch_of_no_rows_is_refused(log_path):
    with pytest.raises(ValueError, match="batch_rows must be a positive number of rows, got 0"), \
            EventLog(log_path).query("SELECT 1", batch_rows=0, as_rows=True):
        pass


def test_csv_json_jsonl_and_table_are_shorthands_for_format_and_two_that_disagree_are_refused(log_path, tmp_path):
    query = "SELECT 1 AS n, 'x,y' AS s"
    for flag, expected in [("--csv", 'n,s\n1,"x,y"\n'), ("--json", '[\n  {\n    "n": 1,\n    "s": "x,y"\n  }\n]\n'),
                           ("--jsonl", '{"n":1,"s":"x,y"}\n'), ("--table", "n  s\n-  ---\n1  x,y\n")]:
        result = eviscene("--db", str(log_path), "sql", query, flag, cwd=tmp_path)
        assert (result.returncode, result.stdout) == (0, expected), flag
        assert eviscene("--db", str(log_path), "sql", query, "--format", flag[2:], cwd=tmp_path).stdout == expected
    assert eviscene("--db", str(log_path), "runs", "--jsonl", cwd=tmp_path).stdout == \
        eviscene("--db", str(log_path), "runs", "--format", "jsonl", cwd=tmp_path).stdout
    assert eviscene("--db", str(log_path), "sql", query, "--csv", "--format", "csv", cwd=tmp_path).returncode == 0
    for conflicting in [("--csv", "--json"), ("--csv", "--format", "json")]:
        result = eviscene("--db", str(log_path), "sql", query, *conflicting, cwd=tmp_path)
        assert result.returncode == 2 and result.stderr.endswith("Error: choose one output format, not csv and json\n")
    result = eviscene("--db", str(log_path), "sql", query, "--csv", "--output", str(tmp_path / "rows.jsonl"), cwd=tmp_path)
    assert result.returncode == 2 and "--format csv and --output" in result.stderr and not (tmp_path / "rows.jsonl").exists()


def test_a_table_into_a_pipe_keeps_each_row_on_one_line_past_the_preview(log_path, tmp_path):
    """Columns are sized by the first 1,000 rows: a wider value after them was wrapped, even into
    a pipe (10000 printed as `1000` and `0` on two lines); now it overflows its column."""
    piped = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    table = eviscene("--db", str(log_path), "sql", "SELECT i * 10 AS n, 'x' AS s FROM range(1001) t(i)", cwd=tmp_path, env=piped)
    assert table.stdout.splitlines()[-2:] == ["9990  x", "10000  x"]


def test_wide_characters_take_two_columns_and_combining_marks_none(log_path, tmp_path):
    query = ("SELECT * FROM (VALUES ('日本語', 1), ('abc', 2), ('🔥🔥', 3), ('e' || chr(769), 4), ('ที่นี่', 5), "
             "('a' || chr(8205) || 'b', 6)) t(name, n)")  # Thai vowel and tone marks, a zero-width joiner: none
    piped = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    table = eviscene("--db", str(log_path), "sql", query, cwd=tmp_path, env=piped)
    assert table.stdout.splitlines()[2:] == ["日本語  1", "abc     2", "🔥🔥    3", "e\u0301       4", "ที่นี่      5", "a\u200db      6"]
    narrow = eviscene("--db", str(log_path), "sql", "SELECT '日本語テキスト' AS t", cwd=tmp_path, env={**piped, "COLUMNS": "8"})
    assert narrow.stdout.splitlines()[2:] == ["日本語テ", "キスト"]  # wrapped by columns, not characters


def test_decimals_keep_every_digit_and_intervals_read_as_duckdb_writes_them_in_every_format(log_path, tmp_path):
    """A DECIMAL went through a double (12345678901234567.89 printed as 1.2345678901234568e+16);
    an INTERVAL printed as `MonthDayNano(months=0, …)` or a list of three numbers."""
    query = ("SELECT 12345678901234567.89::DECIMAL(38,2) AS big, 0.00000001::DECIMAL(18,8) AS small, "
             "INTERVAL '1 year 2 months 3 days 04:05:06.789' AS span, INTERVAL '-1 second' AS back, INTERVAL 0 SECOND AS none")
    span = "1 year 2 months 3 days 04:05:06.789"

    piped = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}

    def printed(fmt: str) -> str:
        result = eviscene("--db", str(log_path), "sql", query, f"--{fmt}", cwd=tmp_path, env=piped)
        assert result.returncode == 0, result.stderr
        return result.stdout

    assert printed("csv") == f"big,small,span,back,none\n12345678901234567.89,0.00000001,{span},-00:00:01,00:00:00\n"
    assert printed("table").splitlines()[2].split("  ") == ["12345678901234567.89", "0.00000001", span, "-00:00:01", "00:00:00"]
    assert printed("jsonl") == (f'{{"big":12345678901234567.89,"small":0.00000001,"span":"{span}",'
                                f'"back":"-00:00:01","none":"00:00:00"}}\n')
    from decimal import Decimal
    assert json.loads(printed("json"), parse_float=Decimal)[0]["big"] == Decimal("12345678901234567.89")
    # a text that looks like the mark is text still
    look_alike = eviscene("--db", str(log_path), "sql", "SELECT chr(57344) || '00:1.5' AS t", "--jsonl", cwd=tmp_path)
    assert json.loads(look_alike.stdout) == {"t": "\ue00000:1.5"}


def test_a_query_of_dash_is_read_from_standard_input(log_path, tmp_path):
    """A file of SQL starting with a `--` comment could not be passed: click took it for an option."""
    result = subprocess.run([EVISCENE, "--db", str(log_path), "sql", "-", "--csv"], input="-- how many\nSELECT count(*) AS n FROM events;\n",
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "n\n62\n")


def test_a_query_on_standard_input_that_is_not_utf8_is_said_in_one_line(log_path, tmp_path):
    """It was a UnicodeDecodeError traceback; a byte-order mark an editor put first is no SQL and goes."""
    result = subprocess.run([EVISCENE, "--db", str(log_path), "sql", "-"], input=b"SELECT \xff 1", capture_output=True, timeout=300,
                            cwd=tmp_path)
    assert (result.returncode, result.stderr) == (2, b"Error: the query on standard input is not UTF-8 text: byte 0xff at offset 7\n")
    marked = subprocess.run([EVISCENE, "--db", str(log_path), "sql", "-", "--csv"], input="\ufeffSELECT 1 AS n".encode(),
                            capture_output=True, timeout=300, cwd=tmp_path)
    assert (marked.returncode, marked.stdout) == (0, b"n\n1\n")


@pytest.mark.parametrize("command", [["report", "sealed", "--out", "out.html"], ["sql", "SELECT 1", "--output", "out.csv"],
                                     ["log", "verify", "--save-heads", "out.jsonl"]], ids=lambda c: c[-2])
def test_an_output_file_that_is_a_pipe_is_refused_not_replaced(log_path, tmp_path, command):
    """The result, written whole under a temporary name, was renamed over a named pipe (as
    root, over `/dev/full` itself): the pipe was gone and the command said it wrote a file."""
    pipe = tmp_path / command[-1]
    os.mkfifo(pipe)
    result = eviscene("--db", str(log_path), *command, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (
        2, f"Error: {command[-2]} {command[-1]}: is a named pipe (FIFO), not a regular file: the output, written whole, would replace it\n")
    assert pipe.is_fifo() and sorted(p.name for p in tmp_path.iterdir()) == [pipe.name]


def test_no_writer_writes_into_the_results_filed_beside_the_log(log_path, tmp_path):
    """`<log>.results/` holds the viewer's signed numbers of sealed runs; `sql --output` wrote
    its rows over one of them (exit 0), which only `.live/` and the log itself were kept from."""

    work = tmp_path / "work"
    work.mkdir()
    copy = sandbox_log.copy(log_path, work)
    results = work / "log.duckdb.results"
    results.mkdir()
    filed = results / "run-sealed.json"
    filed.write_text("signature\n{}", encoding="utf-8")
    before = sandbox_log.fingerprint(work)
    refusal = f"that is where the viewer's numbers are filed beside the log ({results}); results never overwrite them"
    for command, target in ((["sql", "SELECT 1 AS a", "--output"], filed), (["sql", "SELECT 1 AS a", "--output"], results / "new.json"),
                            (["report", "sealed", "--out"], results / "report.html"),
                            (["log", "verify", "--save-heads"], results / "heads.jsonl"), (["log", "export-parquet"], results),
                            (["materialize", "sealed", "--out"], results / "run"), (["dataset", "export", "--run", "sealed", "--out"], results),
                            (["eval", "run", "--benchmark", BENCHMARK, "--output-dir"], results / "run"),
                            (["eval", "resume", "sealed", "--output-dir"], results)):
        option = "DIRECTORY" if command[-1] == "export-parquet" else command[-1]
        result = eviscene("--db", str(copy), *command, str(target), cwd=work)
        assert (result.returncode, result.stdout, result.stderr) == (2, "", f"Error: {option} {target}: {refusal}\n"), command
    log = EventLog(copy)
    writers = library_writers(log, copy)
    for name, write in writers.items():
        for target in (results, results / "out"):
            with pytest.raises(EvisceneError) as refused:
                write(target)
            assert str(refused.value) == f"{name} {target}: {refusal}"
    assert sandbox_log.fingerprint(work) == before


def test_a_subcommands_help_on_a_full_standard_output_names_it(tmp_path):
    """The top-level --help said `cannot write standard output`, every subcommand's
    `cannot write ?`: click's help option wrote it bare, and its OSError reached the command
    group's handler with no path."""
    for args in (["sql", "--help"], ["log", "verify", "--help"], ["runs", "compare", "-h"], ["profiles", "--help"],
                 ["eval", "run", "--help"], ["log", "-h"]):
        with open("/dev/full", "w") as full:
            result = subprocess.run([EVISCENE, *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=300, cwd=tmp_path)
        assert (result.returncode, result.stderr) == (2, "Error: cannot write standard output: No space left on device\n"), args
    helped = eviscene("sql", "-h", cwd=tmp_path)
    assert (helped.returncode, helped.stderr) == (0, "") and helped.stdout.startswith("Usage: eviscene sql [OPTIONS] QUERY\n")
    assert "  -h, --help " in helped.stdout and helped.stdout.rstrip().endswith("Show this message and exit.")
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader gone before a word is written
    try:
        gone = subprocess.run([EVISCENE, "log", "verify", "--help"], stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=300,
                              cwd=tmp_path)
    finally:
        os.close(write_end)
    assert (gone.returncode, gone.stderr) == (141, "")


def test_closed_or_full_standard_output_is_said_in_one_line(log_path, tmp_path):
    """`>&-` gave an AttributeError traceback; `> /dev/full` said `cannot write ?`, and for
    --help or --version a traceback."""
    closed = subprocess.run(f"'{EVISCENE}' --db '{log_path}' sql 'SELECT 1 AS a' >&-", shell=True, capture_output=True,
                            text=True, timeout=300, cwd=tmp_path)
    assert (closed.returncode, closed.stderr) == (2, "Error: standard output is closed; send it somewhere (`> FILE`, `> /dev/null`)\n")
    for args in (["--db", str(log_path), "sql", "SELECT 1 AS a"], ["--db", str(log_path), "runs"], ["--help"], ["--version"],
                 ["profiles", "--template"]):
        with open("/dev/full", "w") as full:
            result = subprocess.run([EVISCENE, *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=300, cwd=tmp_path)
        assert (result.returncode, result.stderr) == (2, "Error: cannot write standard output: No space left on device\n"), args


def test_a_reader_that_stops_early_exits_as_a_unix_tool_killed_by_sigpipe(log_path, tmp_path):
    """Exit 1 said a problem was found (as `log verify`'s); a reader gone is 141, as for `yes | head`,
    --help's reader too."""
    script = f"'{EVISCENE}' --db '{log_path}' sql 'SELECT range AS i FROM range(200000)' --csv | head -n 1; echo ${{PIPESTATUS[0]}}"
    piped = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert (piped.stdout, piped.stderr) == ("i\n141\n", "")
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader gone before a word is written
    try:
        helped = subprocess.run([EVISCENE, "--help"], stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=300, cwd=tmp_path)
    finally:
        os.close(write_end)
    assert (helped.returncode, helped.stderr) == (141, "")


def test_a_full_disk_under_an_output_file_names_that_file_not_standard_output(log_path, tmp_path):
    out = tmp_path / "out.csv"
    query = "SELECT range, repeat('x', 100) AS s FROM range(200000)"
    script = f"trap '' XFSZ; ulimit -f 20; '{EVISCENE}' --db '{log_path}' sql \"{query}\" --output '{out}'"
    limited = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert (limited.returncode, limited.stderr) == (2, f"Error: cannot write {out}: File too large\n")
    assert not out.exists() and list(tmp_path.iterdir()) == []  # the pending file went too


def test_runs_compare_takes_its_own_db_and_a_format_before_it_is_refused(log_path, tmp_path):
    """`runs compare A B --db X` and `runs compare --help` failed on a missing ./eviscene.duckdb;
    `runs --json compare` printed a table."""
    helped = eviscene("runs", "compare", "--help", cwd=tmp_path)
    assert helped.returncode == 0 and "Paired accuracy difference" in helped.stdout
    compared = eviscene("runs", "compare", "a", "b", "--db", str(log_path), cwd=tmp_path)
    assert (compared.returncode, compared.stderr) == (2, f"Error: no run 'a' in {log_path}; `eviscene --db {log_path} runs` lists the runs\n")
    misplaced = eviscene("runs", "--json", "compare", "a", "b", "--db", str(log_path), cwd=tmp_path)
    assert misplaced.returncode == 2 and "the output format goes after `compare`" in misplaced.stderr
    assert eviscene("runs", cwd=tmp_path).stderr.startswith("Error: no log at")  # the listing still checks
    empty = eviscene("--db", "", "runs", cwd=tmp_path)
    assert empty.returncode == 2 and "an empty path names no log" in empty.stderr


def test_a_killed_writes_temporary_file_goes_at_the_next_write_and_a_live_ones_stays(log_path, tmp_path):
    """`sql --output` killed mid-write left its hidden temporary file (up to the whole result)
    for good. Its name now says which process wrote it; the next write to the same file
    removes those whose process is gone, and leaves a concurrent write's."""
    host = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout.strip()
    killed = tmp_path / f".rows.csv.{host}-{gone}-ab_cd123.tmp"
    running = tmp_path / f".rows.csv.{host}-{os.getpid()}-ef_gh456.tmp"
    for path in (killed, running):
        path.write_text("seq\n1\n")
    result = eviscene("--db", str(log_path), "sql", "SELECT 1 AS x", "--output", "rows.csv", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([running.name, "rows.csv"])


def test_memory_and_spill_limits_bound_a_query_and_running_out_is_said_with_the_flags(log_path, tmp_path):
    """`eviscene sql` took DuckDB's defaults (80% of RAM, then 90% of the spill disk's free
    space) with no way to lower them: `SET` is refused in the sandbox."""
    settings = "SELECT current_setting('memory_limit') AS memory, current_setting('max_temp_directory_size') AS spill"
    result = eviscene("--db", str(log_path), "sql", settings, "--csv", "--memory-limit", "2GiB", "--spill-limit", "0.5GB", cwd=tmp_path)
    assert result.stdout == "memory,spill\n2.0 GiB,476.8 MiB\n", result.stderr  # 0.5 GB = 500,000,000 bytes
    assert EventLog(log_path).sql(settings, memory_limit="1GiB").to_pylist() == [{"memory": "1.0 GiB", "spill": "90% of available disk space"}]
    # No spill at all is a limit too: a query that fits in memory still answers.
    result = eviscene("--db", str(log_path), "sql", "SELECT count(*) AS n FROM range(1000000)", "--csv", "--spill-limit", "0", cwd=tmp_path)
    assert result.stdout == "n\n1000000\n", result.stderr

    # A library caller's size reaches DuckDB as a number of bytes only: text after a quote was a
    # statement of its own, run before the sandbox closed (a COPY wrote a file).
    written = tmp_path / "written.csv"
    with pytest.raises(EvisceneError) as refused:
        EventLog(log_path).sql("SELECT 1", spill_limit=f"1GB'; COPY (SELECT 42) TO '{written}'; SET memory_limit='1GB")
    assert str(refused.value).startswith("spill_limit: \"1GB'; COPY") and str(refused.value).endswith(" is not a size (e.g. 4GB, 500MB, 2GiB)")
    assert not written.exists()

    for flag, value, why in [("--memory-limit", "10MB", "'10MB' is less than 64MB, too little for DuckDB to answer any query"),
                             ("--spill-limit", "lots", "'lots' is not a size (e.g. 4GB, 500MB, 2GiB)"),
                             ("--spill-limit", "1iB", "'1iB' is not a size (e.g. 4GB, 500MB, 2GiB)"),
                             ("--memory-limit", "99999999999T", "'99999999999T' is outside what DuckDB takes (0 to 9,223,372,036,854,775,807 bytes)")]:
        refused = eviscene("--db", str(log_path), "sql", "SELECT 1", flag, value, cwd=tmp_path)
        assert refused.returncode == 2 and refused.stderr.endswith(f"Error: Invalid value for '{flag}': {why}\n")

    distinct = "SELECT count(DISTINCT i::VARCHAR || '-' || j::VARCHAR) FROM range(4000) a(i), range(4000) b(j)"
    out = eviscene("--db", str(log_path), "sql", distinct, "--memory-limit", "64MB", "--spill-limit", "64MB", cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("Error: the query ran out of disk to spill to (Out of Memory Error: ")
    assert out.stderr.endswith("); narrow it, or raise --memory-limit or --spill-limit\n")


def test_a_size_given_as_bytes_is_held_to_the_same_minimum():
    """A size already in bytes (a default, a caller's `convert`) passed through unchecked."""
    with pytest.raises(click.BadParameter, match="is less than 64MB"):
        MEMORY_SIZE.convert(10 * 10**6, None, None)
    assert MEMORY_SIZE.convert(64 * 10**6, None, None) == 64 * 10**6
