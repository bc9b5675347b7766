"""Ctrl-C and SIGTERM outside the episodes (the episodes' own are in test_resume.py and
test_model_servers.py): real `eviscene` processes held at a named point (EVISCENE_PAUSE,
eviscene/store/faults.py) get the signal there. Each ends with exit 130 and one line on stderr
saying what was cut short and what finishes it, never a traceback; nothing half written looks
finished, and the command the line names finishes the job."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from eviscene.log import EventLog

EVISCENE = str(Path(sys.executable).with_name("eviscene"))
SIGNALS = pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])


def eviscene(log_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([EVISCENE, "--db", str(log_path), *args], capture_output=True, text=True, timeout=600,
                          cwd=log_path.parent, check=False)


def interrupted_at(point: str, signum: int, log_path: Path, *args: str) -> subprocess.CompletedProcess:
    """Run `eviscene … args` until it reaches `point`, then send `signum` there."""
    barrier = log_path.parent / f"barrier-{uuid.uuid4().hex[:8]}"
    barrier.mkdir()
    command = [EVISCENE, "--db", str(log_path), *args]
    process = subprocess.Popen(command, env={**os.environ, "EVISCENE_PAUSE": f"{point}:{barrier}"}, cwd=log_path.parent,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not (barrier / "reached").exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{point} never reached"
        time.sleep(0.02)
    process.send_signal(signum)
    out, err = process.communicate(timeout=120)
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def assert_interrupted(result: subprocess.CompletedProcess, line: str) -> None:
    assert (result.returncode, result.stderr) == (130, line + "\n")


@pytest.fixture()
def run_log(offline_run, tmp_path) -> tuple[Path, str]:
    """A private copy of the shared offline run's log."""
    log, summary = offline_run
    copy = tmp_path / "run.duckdb"
    shutil.copyfile(log.path, copy)
    return copy, summary.run_id


def eval_run(release: Path, run_id: str) -> list[str]:
    return ["eval", "run", "--benchmark", str(release / "runtime_input" / "cases.jsonl"), "--limit", "2",
            "--no-progress", "--output-dir", f"runs/{run_id}"]


@SIGNALS
def test_an_interrupted_seal_leaves_the_run_for_resume(signum, release, tmp_path):
    log_path = tmp_path / "log.duckdb"
    result = interrupted_at("seal.checked", signum, log_path, *eval_run(release, "r"))
    assert_interrupted(result, "interrupted; `eviscene eval resume r` finishes it")
    assert not (tmp_path / "runs" / "r").exists()
    assert EventLog(log_path).sql("SELECT status FROM runs").to_pylist() == [{"status": "completed"}]  # not failed
    resumed = eviscene(log_path, "eval", "resume", "r", "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    assert (tmp_path / "runs" / "r" / "run_manifest.json").is_file()
    assert not (tmp_path / "log.duckdb.live" / "r").exists()  # sealed
    assert eviscene(log_path, "log", "verify").returncode == 0


@SIGNALS
def test_an_interrupted_query_is_one_quiet_line(signum, run_log):
    log_path, _ = run_log
    result = interrupted_at("query.connected", signum, log_path, "sql", "SELECT count(*) FROM events")
    assert_interrupted(result, "interrupted")
    assert result.stdout == ""
