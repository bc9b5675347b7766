"""A mistaken query over the sandbox gets EviScene's words: a view or table that is not
there suggests one of the log's own relations (never DuckDB's catalog, `pg_index`), names
match in any case as SQL's do, a file outside the log names the `--read` that opens it, and
DuckDB's advice to SET a setting (which the sandbox refuses) is what the query may do instead."""

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
import sandbox_log

from eviscene.errors import QueryRefusedError
from eviscene.log import EventLog

EVISCENE = str(Path(sys.executable).with_name("eviscene"))


@pytest.fixture(scope="module")
def log_path(tmp_path_factory) -> Path:
    return sandbox_log.build(tmp_path_factory.mktemp("log"))


def sql(log_path: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([EVISCENE, "--db", str(log_path), "sql", *args], capture_output=True, text=True, timeout=120, cwd=cwd, check=False)


@pytest.mark.parametrize(("query", "error"), [
    ("SELECT * FROM episode", 'Error: Catalog Error: Table with name episode does not exist! Did you mean "episodes"?\n'),
    ("SELECT * FROM runs JOIN evnts USING (run_id)", 'Error: Catalog Error: Table with name evnts does not exist! Did you mean "events"?\n'),
    ("SELECT * FROM zzqq", "Error: Catalog Error: Table with name zzqq does not exist! (`eviscene views` lists the views)\n"),
])
def test_a_missing_relation_suggests_one_of_the_logs_own(log_path, tmp_path, query, error):
    result = sql(log_path, query, cwd=tmp_path)
    assert result.returncode == 2 and result.stderr == error


def test_a_pivot_without_its_values_is_told_to_list_them(log_path, tmp_path):
    """DuckDB files such a PIVOT as several statements: it was refused as "only a SELECT
    statement runs over the log; SELECT is refused"."""
    result = sql(log_path, "SELECT * FROM (PIVOT (SELECT run_id, type FROM events) ON type USING count(*))", cwd=tmp_path)
    assert result.returncode == 2 and result.stderr == (
        "Error: a PIVOT runs over the log only with its values listed (`PIVOT … ON type IN ('run.started', 'run.finished')`): "
        "without them DuckDB first runs a statement of its own to find them, which the read-only sandbox refuses\n")
    listed = sql(log_path, "SELECT * FROM (PIVOT (SELECT run_id, type FROM events) ON type IN ('gate.decided') USING count(*)) "
                 "ORDER BY run_id", "--format", "csv", cwd=tmp_path)
    assert listed.returncode == 0 and listed.stdout.splitlines()[0] == "run_id,gate.decided", listed.stderr
    # A write around one is refused by its own name, listed values or not.
    copied = sql(log_path, "COPY (PIVOT events ON type) TO 'x.csv'", cwd=tmp_path)
    assert copied.returncode == 2 and copied.stderr.startswith("Error: only a SELECT statement runs over the log; COPY is refused")


@pytest.mark.parametrize(("query", "error"), [
    ("SELECT " + "(" * 1000 + "1" + ")" * 1000,
     "Error: Parser Error: the query nests expressions deeper than DuckDB's limit of 1000 levels; write it as a shallower query.\n"),
    ("SELECT (SELECT * FROM range(2))",
     "Error: Invalid Input Error: More than one row returned by a subquery used as an expression - scalar subqueries can only "
     "return a single row. Give the subquery LIMIT 1 for any one of its rows, or aggregate them (first(…), list(…)).\n"),
    ("SELECT run_id FROM runs ORDER BY 'run_id'",
     "Error: Binder Error: ORDER BY non-integer literal has no effect. Order by a column's name or position, not a string "
     "('a' is a string, \"a\" a column).\n"),
    ("SELECT list_transform([1], x -> x + 1)",
     "Error: Binder Error: Deprecated lambda arrow (->) detected. Please transition to the new lambda syntax, i.e.., "
     "lambda x, i: x + i, before DuckDB's next release. For more information, see "
     "https://duckdb.org/docs/current/sql/functions/lambda.html.\n"),
])
def test_duckdbs_advice_to_set_a_setting_is_what_the_query_may_do_instead(log_path, tmp_path, query, error):
    result = sql(log_path, query, cwd=tmp_path)
    assert result.returncode == 2 and result.stderr == error


def test_a_pivot_over_too_many_values_is_told_to_pivot_on_fewer(log_path):
    values = ", ".join(str(value) for value in range(100_001))  # one over DuckDB's pivot_limit, which no SET raises here
    with pytest.raises(duckdb.BinderException) as raised:
        EventLog(log_path).sql(f"SELECT * FROM (PIVOT (SELECT range AS k, 1 AS v FROM range(3)) ON k IN ({values}) USING sum(v))")
    assert str(raised.value) == "Binder Error: Pivot column limit of 100000 exceeded: pivot on fewer values (list them with ON … IN (…))."


def test_view_names_match_in_any_case(log_path, tmp_path):
    result = sql(log_path, "SELECT run_id FROM RUNS ORDER BY run_id", "--format", "csv", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "run_id\nlive\nsealed\n"


def test_a_file_outside_the_log_names_the_read_that_opens_it(log_path, tmp_path):
    (tmp_path / "labels.csv").write_text("label,meaning\nauthentic,as claimed\n", encoding="utf-8")
    (tmp_path / "my data").mkdir()
    (tmp_path / "my data" / "a.csv").write_text("x\n1\n", encoding="utf-8")
    refused = sql(log_path, "SELECT * FROM 'labels.csv'", cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr == (
        'Error: Permission Error: Cannot access file "labels.csv": a query reads only the log and the files given with '
        "--read (read= in Python); add --read labels.csv\n"
    )
    assert sql(log_path, "SELECT * FROM 'labels.csv'", "--read", "labels.csv", cwd=tmp_path).returncode == 0
    globbed = sql(log_path, "SELECT sum(x) AS s FROM 'my data/*.csv'", cwd=tmp_path)
    assert globbed.returncode == 2 and globbed.stderr.endswith("; add --read 'my data'\n"), globbed.stderr
    read = sql(log_path, "SELECT sum(x) AS s FROM 'my data/*.csv'", "--read", "my data", "--format", "csv", cwd=tmp_path)
    assert read.returncode == 0 and read.stdout == "s\n1\n", read.stderr
    # a URL is no file --read can name: the hint says what to do instead
    url = sql(log_path, "SELECT * FROM read_json_auto('http://127.0.0.1:1/x.json')", cwd=tmp_path)
    assert url.returncode == 2 and url.stderr == (
        'Error: Permission Error: Cannot access file "http://127.0.0.1:1/x.json": a query reads only the log and the files '
        "given with --read (read= in Python); download it and --read the copy\n"
    )


def test_the_python_api_gets_the_same_words(log_path):
    log = EventLog(log_path)
    with pytest.raises(duckdb.CatalogException, match='Did you mean "episodes"\\?$'):
        log.sql("SELECT * FROM episode")
    # a file outside the sandbox is the sandbox's refusal, as its docstring says, not DuckDB's bare error
    with pytest.raises(QueryRefusedError, match="add --read /etc/passwd$"):
        log.sql("SELECT * FROM read_text('/etc/passwd')")


def test_views_lists_the_views_named_and_a_mistyped_name_gets_the_closest(log_path, tmp_path):
    def views(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([EVISCENE, "--db", str(log_path), "views", *args], capture_output=True, text=True, timeout=120,
                              cwd=tmp_path, check=False)

    listed = views("episodes", "TOOL_CALLS", "--columns", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [row["view"] for row in rows] == ["episodes", "tool_calls"] and rows[0]["columns"][:2] == ["run_id", "episode_id"]
    assert rows[1]["key"] == ["run_id", "episode_id", "call_index"]  # arrays in JSON, as a table joins them
    assert views("episode").stderr == "Error: no view 'episode'; did you mean \"episodes\"?\n"
    unknown = views("zzqq")
    assert (unknown.returncode, unknown.stderr) == (2, "Error: no view 'zzqq'; `eviscene views` lists them\n")
