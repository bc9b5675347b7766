"""A real `eviscene eval run` killed with SIGKILL mid-run, then resumed: every planned
episode finishes exactly once, finished ones never run again, the chain verifies."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from pseudo_terminal import written_to_a_terminal

from eviscene.events import RunStarted
from eviscene.log import EventLog
from eviscene.store import EventDraft
from eviscene.store.layout import run_folder
from eviscene.store.locks import RunLock

EVISCENE = str(Path(sys.executable).with_name("eviscene"))


def eviscene(log_path: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([EVISCENE, "--db", str(log_path), *args], capture_output=True, text=True, timeout=600, cwd=log_path.parent, **kwargs)


def finished_episodes(log: EventLog) -> set[str]:
    return set(log.sql("SELECT episode_id FROM events WHERE type = 'episode.finished'")["episode_id"].to_pylist())


def run_until_an_episode_finished(release: Path, log_path: Path, env: dict | None = None) -> subprocess.Popen:
    """A real `eval run` of six cases, one at a time, once its first episode has finished."""
    process = subprocess.Popen(
        [EVISCENE, "--db", str(log_path), "eval", "run", "--benchmark", str(release / "runtime_input" / "cases.jsonl"),
         "--limit", "6", "--concurrency", "1", "--no-progress", "--no-materialize"],
        cwd=log_path.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    deadline = time.monotonic() + 300
    while not finished_episodes(EventLog(log_path)):
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline, "the run finished no episode in time"
        time.sleep(0.2)
    return process


def test_sigkill_then_resume_finishes_each_episode_exactly_once(release, tmp_path):
    log_path = tmp_path / "resume.duckdb"
    log = EventLog(log_path)
    benchmark = str(release / "runtime_input" / "cases.jsonl")
    process = subprocess.Popen(
        [EVISCENE, "--db", str(log_path), "eval", "run", "--benchmark", benchmark, "--limit", "10",
         "--rollouts-per-case", "2", "--concurrency", "1", "--no-progress", "--no-materialize"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 300
    while len(finished_episodes(log)) < 3:
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline, "the run finished no episode in time"
        time.sleep(0.2)
    # Stopped, it holds the run and goes no further: on a fast machine it had finished all 20
    # while the resume below was refused, and the kill landed after the run.
    os.kill(process.pid, signal.SIGSTOP)
    run_id = log.sql("SELECT DISTINCT run_id FROM events")["run_id"].to_pylist()[0]

    busy = eviscene(log_path, "eval", "resume", run_id, "--no-progress")
    assert busy.returncode == 2 and f"being written by pid {process.pid}" in busy.stderr and "Traceback" not in busy.stderr

    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    before = finished_episodes(log)
    assert 3 <= len(before) < 20

    resumed = eviscene(log_path, "eval", "resume", run_id, "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    assert f"{20 - len(before)} of 20 episodes ran" in resumed.stdout

    per_episode = log.sql(
        "SELECT episode_id, count(*) FILTER (WHERE type = 'episode.finished') AS finished, "
        "count(*) FILTER (WHERE type = 'episode.started') AS started, max(attempt) AS last_attempt "
        "FROM events WHERE episode_id IS NOT NULL GROUP BY episode_id"
    ).to_pylist()
    assert len(per_episode) == 20
    assert all(row["finished"] == 1 for row in per_episode)
    for row in per_episode:
        if row["episode_id"] in before:
            assert row["started"] == 1 and row["last_attempt"] == 1  # never repeated
    assert eviscene(log_path, "log", "verify").returncode == 0
    again = eviscene(log_path, "eval", "resume", run_id, "--no-progress")
    assert again.returncode == 0 and "0 of 20 episodes ran" in again.stdout
    runs = json.loads(eviscene(log_path, "runs", "--format", "json").stdout)
    assert runs[0]["episodes_finished"] == 20 and runs[0]["status"] == "completed"


def test_a_resume_of_a_run_another_process_writes_is_refused_before_any_progress(release, tmp_path):
    log_path = tmp_path / "busy.duckdb"
    ran = eviscene(log_path, "eval", "run", "--benchmark", str(release / "runtime_input" / "cases.jsonl"), "--limit", "3",
                   "--no-progress", "--no-materialize")
    assert ran.returncode == 0, ran.stderr
    run_id = EventLog(log_path).sql("SELECT DISTINCT run_id FROM events")["run_id"].to_pylist()[0]
    other = RunLock(run_folder(log_path, run_id) / "writer.lock", run_id).acquire()  # this test process writes the run
    try:
        busy = eviscene(log_path, "eval", "resume", run_id, "--no-materialize")  # with its progress bar
    finally:
        other.release()
    assert busy.returncode == 2 and busy.stdout == ""
    assert re.fullmatch(rf"Error: run {run_id} is being written by pid {os.getpid()} \(.*\); wait for it or stop it first\n",
                        busy.stderr), busy.stderr


def test_resume_of_an_unknown_run_is_a_clear_error(tmp_path):
    # A log holding another run: where there is no log, that is said instead (tests/store/test_missing_log.py).
    log = EventLog(tmp_path / "other.duckdb")
    log.append("other", [EventDraft(RunStarted(started_at="2026-11-30T00:00:00+00:00", git_commit="", benchmark={}, agent={},
                                               source_access_policy={}))])
    result = eviscene(log.path, "eval", "resume", "no-such-run")
    assert result.returncode == 2 and result.stderr.startswith("Error: no run 'no-such-run'"), result.stderr
    assert result.stderr.count("\n") == 1  # one line, no blank line before it


def test_ctrl_c_names_the_run_to_resume(release, tmp_path):
    log_path = tmp_path / "interrupted.duckdb"
    log = EventLog(log_path)
    process = run_until_an_episode_finished(release, log_path)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    run_id = log.sql("SELECT DISTINCT run_id FROM events")["run_id"].to_pylist()[0]
    assert process.returncode == 130
    assert f"interrupted; `eviscene --db {log_path} eval resume {run_id}` finishes it" in stderr and "Traceback" not in stderr
    resumed = eviscene(log_path, "eval", "resume", run_id, "--no-progress")
    assert resumed.returncode == 0
    assert log.sql("SELECT count(*) FILTER (WHERE finished) AS n FROM episodes").to_pylist() == [{"n": 6}]


def test_a_resume_by_other_code_is_refused_while_episodes_are_left(release, tmp_path):
    """A run resumed after an upgrade ran its remaining episodes with the new agent under the
    old commit's name (its manifest, each rollout group's policy_revision): a group could mix
    two policies unseen. Refused while episodes are left; a resume with nothing to run is not.
    (GIT_DIR hides the checkout, so each process's commit is its GIT_COMMIT.)"""
    log_path = tmp_path / "code.duckdb"
    log = EventLog(log_path)
    first = {**os.environ, "GIT_DIR": str(tmp_path / "no-git"), "GIT_COMMIT": "a" * 40}
    other = {**first, "GIT_COMMIT": "b" * 40}
    process = run_until_an_episode_finished(release, log_path, env=first)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    run_id = log.sql("SELECT DISTINCT run_id FROM events")["run_id"].to_pylist()[0]
    before = finished_episodes(log)
    assert len(before) < 6
    refused = eviscene(log_path, "eval", "resume", run_id, "--no-progress", env=other)
    assert refused.returncode == 2 and refused.stderr == (
        f"Error: run {run_id} was started by EviScene at commit aaaaaaaaaaaa, and this is bbbbbbbbbbbb: its remaining episodes "
        "would run other code under the first commit's name; resume with that commit checked out, or start a new run\n")
    assert finished_episodes(log) == before
    resumed = eviscene(log_path, "eval", "resume", run_id, "--no-progress", env=first)
    assert resumed.returncode == 0, resumed.stderr
    again = eviscene(log_path, "eval", "resume", run_id, "--no-progress", env=other)  # nothing left to run
    assert again.returncode == 0 and "0 of 6 episodes ran" in again.stdout, again.stderr


def test_a_resume_runs_its_episodes_at_the_concurrency_it_is_given(release, tmp_path):
    """`eval resume` had no --concurrency (`No such option`): a run started one episode at a
    time was finished one at a time, whatever the machine it was resumed on."""
    log_path = tmp_path / "resume.duckdb"
    process = run_until_an_episode_finished(release, log_path)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    log = EventLog(log_path)
    run_id = log.sql("SELECT DISTINCT run_id FROM events")["run_id"].to_pylist()[0]
    killed_at = log.sql("SELECT max(seq) AS seq FROM events").to_pylist()[0]["seq"]
    resumed = eviscene(log_path, "eval", "resume", run_id, "--concurrency", "4", "--no-progress", "--no-materialize")
    assert resumed.returncode == 0, resumed.stderr
    # the most of the resume's episodes between their start and their end at once
    in_flight = log.sql(
        "SELECT max(running) AS most FROM (SELECT sum(CASE WHEN type = 'episode.started' THEN 1 ELSE -1 END) OVER (ORDER BY seq) AS running "
        "FROM events WHERE type IN ('episode.started', 'episode.finished') AND seq > ?)", [killed_at],
    ).to_pylist()[0]["most"]
    assert in_flight > 1  # (4 at once in a quiet moment; one at a time before)


def _stderr_on_a_terminal(*args: str, cwd: Path, status: int = 0) -> str:
    return written_to_a_terminal([EVISCENE, *args], cwd=cwd, stream="stderr", status=status).decode("utf-8", "replace")


def test_a_resume_with_nothing_left_draws_no_progress_bar(release, tmp_path):
    """It drew `episodes 0/0 0 errored · 0.00/s`, a bar of nothing to run."""
    log_path = tmp_path / "log.duckdb"
    ran = _stderr_on_a_terminal("--db", str(log_path), "eval", "run", "--benchmark", str(release / "runtime_input" / "cases.jsonl"),
                                "--limit", "1", "--no-materialize", "--run-id", "r", cwd=tmp_path)
    assert "1/1" in ran  # a run with episodes draws its bar
    resumed = _stderr_on_a_terminal("--db", str(log_path), "eval", "resume", "r", "--no-materialize", cwd=tmp_path)
    assert "0/0" not in resumed and "errored" not in resumed, resumed


def test_the_progress_bar_counts_a_timed_out_episode_as_errored(release, tmp_path):
    """The bar said `0 errored` for a run whose one episode timed out, which the run's summary,
    status and exit code count as an error (the seed's rule: error text counts)."""
    drawn = _stderr_on_a_terminal("--db", str(tmp_path / "log.duckdb"), "eval", "run", "--benchmark",
                                  str(release / "runtime_input" / "cases.jsonl"), "--limit", "1", "--timeout", "0.001",
                                  "--no-materialize", cwd=tmp_path, status=1)
    assert "1/1" in drawn and "0 errored" not in drawn.split("1/1")[-1] and "1 errored" in drawn.split("1/1")[-1], drawn
