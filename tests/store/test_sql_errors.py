"""A query over the sandbox names the log's views as SQL names anything: in any case."""

import subprocess
import sys
from pathlib import Path

import pytest

import sandbox_log

EVISCENE = str(Path(sys.executable).with_name("eviscene"))


@pytest.fixture(scope="module")
def log_path(tmp_path_factory) -> Path:
    return sandbox_log.build(tmp_path_factory.mktemp("log"))


def sql(log_path: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([EVISCENE, "--db", str(log_path), "sql", *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_view_names_match_in_any_case(log_path, tmp_path):
    result = sql(log_path, "SELECT run_id FROM RUNS ORDER BY run_id", "--format", "csv", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "run_id\nlive\nsealed\n"
