"""A command that only reads the log starts without the heavy libraries: `runs`, `sql` printed
as text and `views` load no pyarrow, numpy, pandas, pydantic/sqlmodel, image or HTTP library
(each would add a tenth of a second or more to every command; see bench/cli.py). The commands
run in a fresh interpreter, on a log with a sealed and a live run."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import sandbox_log

HEAVY = ("pyarrow", "numpy", "pandas", "pydantic", "sqlmodel", "PIL", "cv2", "httpx", "aiohttp", "anyio")

# Runs the CLI in this interpreter, then reports which heavy top-level modules it loaded.
PROBE = """
import json, sys
from eviscene.cli.main import cli
try:
    cli.main(sys.argv[1:], prog_name="eviscene")
except SystemExit as exc:
    code = exc.code
else:
    code = 0
heavy = sorted(name for name in {HEAVY} if name in sys.modules)
sys.stderr.write("\\nPROBE " + json.dumps({{"exit": code, "heavy": heavy}}) + "\\n")
""".format(HEAVY=repr(HEAVY))


@pytest.fixture(scope="module")
def log_path(tmp_path_factory) -> Path:
    return sandbox_log.build(tmp_path_factory.mktemp("log"))


def loaded(*args: str, cwd: Path) -> tuple[dict, str]:
    result = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=300, cwd=cwd)
    probe = [line for line in result.stderr.splitlines() if line.startswith("PROBE ")]
    assert probe, result.stderr
    return json.loads(probe[-1].removeprefix("PROBE ")), result.stdout


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_runs_loads_no_heavy_library(log_path, tmp_path, fmt):
    report, stdout = loaded("--db", str(log_path), "runs", "--format", fmt, cwd=tmp_path)
    assert report == {"exit": 0, "heavy": []}
    if fmt == "json":
        assert sorted(row["run_id"] for row in json.loads(stdout)) == ["live", "sealed"]


def test_sql_printed_as_text_loads_no_heavy_library(log_path, tmp_path):
    report, stdout = loaded("--db", str(log_path), "sql", "SELECT run_id, count(*) AS n FROM events GROUP BY ALL ORDER BY 1",
                            "--format", "csv", cwd=tmp_path)
    assert report == {"exit": 0, "heavy": []}
    assert stdout == f"run_id,n\nlive,{sandbox_log.EVENTS['live']}\nsealed,{sandbox_log.EVENTS['sealed']}\n"


def test_views_loads_no_heavy_library(tmp_path):
    report, stdout = loaded("views", "--format", "csv", cwd=tmp_path)
    assert report == {"exit": 0, "heavy": []}
    assert stdout.startswith("view,grain,key,meaning\n") and "\nruns," in stdout


def test_a_result_arrow_must_carry_still_prints_as_before(log_path, tmp_path):
    """A MAP prints as key-value pairs, as Arrow gives it, and an INTERVAL as DuckDB writes it
    (a month, which DuckDB's Python rows would make 30 days): such a result is read as Arrow."""
    query = "SELECT MAP {'a': 1} AS m, INTERVAL 1 MONTH AS i, [1, 2]::INTEGER[2] AS a"
    report, stdout = loaded("--db", str(log_path), "sql", query, "--format", "jsonl", cwd=tmp_path)
    assert report["exit"] == 0 and "pyarrow" in report["heavy"]
    assert stdout == '{"m":[["a",1]],"i":"1 month","a":[1,2]}\n'


def test_uuids_and_fixed_size_arrays_print_from_duckdb_rows_as_from_arrow(log_path, tmp_path):
    query = "SELECT [1, 2]::INTEGER[2] AS a, '00000000-0000-0000-0000-000000000001'::UUID AS u"
    report, stdout = loaded("--db", str(log_path), "sql", query, "--format", "csv", cwd=tmp_path)
    assert report == {"exit": 0, "heavy": []}
    assert stdout == 'a,u\n"[1,2]",00000000-0000-0000-0000-000000000001\n'


@pytest.mark.parametrize(("typed", "meant"), [("evl", "eval"), ("sqll", "sql")])
def test_a_misspelled_command_is_told_the_closest_one_without_loading_the_commands(tmp_path, typed, meant):
    """`eviscene evl run` said only `No such command 'evl'.`, while `eviscene eval rn` got `Did you
    mean 'run'?`: commands load when they run, and click suggested from those loaded, none."""
    report, _ = loaded(typed, "run", cwd=tmp_path)
    assert report == {"exit": 2, "heavy": []}
    result = subprocess.run([str(Path(sys.executable).with_name("eviscene")), typed, "run"], capture_output=True, text=True,
                            timeout=120, cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.splitlines()[-1] == f"Error: No such command {typed!r}. Did you mean {meant!r}?"
