"""Ctrl-C and SIGTERM outside the episodes (the episodes' own are in test_resume.py and
test_model_servers.py): real `eviscene` processes held at a named point (EVISCENE_PAUSE,
eviscene/store/faults.py) get the signal there. Each ends with exit 130 and one line on stderr
saying what was cut short and what finishes it, never a traceback; nothing half written looks
finished, and the command the line names finishes the job."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from eviscene.events import GateDecided, RunFinished
from eviscene.log import EventLog
from eviscene.store import EventDraft

EVISCENE = str(Path(sys.executable).with_name("eviscene"))
SIGNALS = pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])


def eviscene(log_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([EVISCENE, "--db", str(log_path), *args], capture_output=True, text=True, timeout=600,
                          cwd=log_path.parent, check=False)


def interrupted_at(point: str, signum: int, log_path: Path, *args: str, running_for: float | None = None,
                   again_after: float | None = None) -> subprocess.CompletedProcess:
    """Run `eviscene … args` until it reaches `point`, then send `signum` there (or, with
    `running_for`, that many seconds after letting it go on), and with `again_after` once more
    that many seconds later."""
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
    if running_for is not None:
        (barrier / "go").touch()
        time.sleep(running_for)
    process.send_signal(signum)
    if again_after is not None:
        time.sleep(again_after)
        process.send_signal(signum)
    try:
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()  # one that ignored the signal runs no longer than the test
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


def test_a_run_interrupted_before_its_first_commit_leaves_its_name_free(release, tmp_path):
    log_path = tmp_path / "log.duckdb"
    result = interrupted_at("lock.opened", signal.SIGINT, log_path, *eval_run(release, "r"))
    assert_interrupted(result, "interrupted before the run recorded anything")
    rerun = eviscene(log_path, *eval_run(release, "r"))
    assert rerun.returncode == 0, rerun.stderr


@SIGNALS
def test_an_interrupt_after_the_episodes_fails_no_run_and_resume_finishes_it(signum, release, tmp_path):
    log_path = tmp_path / "log.duckdb"
    result = interrupted_at("run.episodes_ended", signum, log_path, *eval_run(release, "r"))
    assert_interrupted(result, f"interrupted; `eviscene --db {log_path} eval resume r` finishes it")
    # `log verify` names the run directory where it is not the default of the folder it runs in
    for folder, words in ((tmp_path, ""), (release, f" --output-dir {tmp_path / 'runs' / 'r'}")):
        verified = subprocess.run([EVISCENE, "--db", str(log_path), "log", "verify"], capture_output=True, text=True, timeout=600,
                                  cwd=folder, check=False)
        assert f"an interrupted run: `eviscene --db {log_path} eval resume r{words}` finishes it" in verified.stdout, verified.stdout
    log = EventLog(log_path)
    assert log.sql("SELECT status FROM runs").to_pylist() == [{"status": "running_or_interrupted"}]
    assert log.sql("SELECT count(*) AS n FROM episodes WHERE finished").to_pylist() == [{"n": 2}]
    resumed = eviscene(log_path, "eval", "resume", "r", "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    assert "0 of 2 episodes ran" in resumed.stdout and "status completed" in resumed.stdout
    assert (tmp_path / "runs" / "r" / "run_manifest.json").is_file()


@SIGNALS
def test_an_interrupted_seal_leaves_the_run_for_resume(signum, release, tmp_path):
    log_path = tmp_path / "log.duckdb"
    result = interrupted_at("seal.checked", signum, log_path, *eval_run(release, "r"))
    assert_interrupted(result, f"interrupted; `eviscene --db {log_path} eval resume r` finishes it")
    assert not (tmp_path / "runs" / "r").exists()
    assert EventLog(log_path).sql("SELECT status FROM runs").to_pylist() == [{"status": "completed"}]  # not failed
    resumed = eviscene(log_path, "eval", "resume", "r", "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    assert (tmp_path / "runs" / "r" / "run_manifest.json").is_file()
    assert not (tmp_path / "log.duckdb.live" / "r").exists()  # sealed
    assert eviscene(log_path, "log", "verify").returncode == 0


def test_an_interrupted_run_directory_is_not_kept_and_materialize_writes_it(release, tmp_path):
    log_path = tmp_path / "log.duckdb"
    result = interrupted_at("staging.filled", signal.SIGINT, log_path, *eval_run(release, "r"))
    assert_interrupted(
        result, f"interrupted while writing runs/r (nothing kept there); `eviscene --db {log_path} materialize r --out runs/r` writes it"
    )
    assert os.listdir(tmp_path / "runs") == []  # neither the run directory nor its temporary folder
    written = eviscene(log_path, "materialize", "r", "--out", "runs/r")
    assert written.returncode == 0, written.stderr
    assert (tmp_path / "runs" / "r" / "run_manifest.json").is_file()


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("point", ["staging.filled", "staging.set_aside"])
def test_a_resume_interrupted_while_it_replaces_the_run_directory_keeps_the_earlier_one(point, release, tmp_path):
    """While the new directory is written, and between setting the earlier one aside and
    renaming the new one in: the earlier one is back in place, byte for byte."""
    log_path = tmp_path / "log.duckdb"
    assert eviscene(log_path, *eval_run(release, "r")).returncode == 0
    out = tmp_path / "runs" / "r"
    (out / "summary.json").write_text('{"marked": "the earlier directory"}')
    earlier = files_of(out)
    result = interrupted_at(point, signal.SIGINT, log_path, "eval", "resume", "r", "--no-progress", "--output-dir", "runs/r")
    assert_interrupted(result, "interrupted while writing runs/r (the earlier one kept as it was); "
                               f"`eviscene --db {log_path} eval resume r --output-dir runs/r` writes it")
    assert files_of(out) == earlier
    assert os.listdir(tmp_path / "runs") == ["r"]  # no temporary folder beside it
    resumed = eviscene(log_path, "eval", "resume", "r", "--no-progress", "--output-dir", "runs/r")
    assert resumed.returncode == 0, resumed.stderr
    assert (out / "run_manifest.json").is_file() and "marked" not in (out / "summary.json").read_text()


EXPORTS = {
    "materialize": lambda run_id, out: ["materialize", run_id, "--out", out],
    "dataset export": lambda run_id, out: ["dataset", "export", "--run", run_id, "--out", out, "--allow-training-prohibited"],
}


@pytest.mark.parametrize("command", EXPORTS)
def test_an_export_cut_short_leaves_nothing_and_a_rerun_writes_it(command, run_log):
    log_path, run_id = run_log
    args = EXPORTS[command](run_id, "out")
    result = interrupted_at("staging.filled", signal.SIGINT, log_path, *args)
    assert_interrupted(result, "interrupted while writing out (nothing kept there); the same command writes it")
    assert not [p for p in os.listdir(log_path.parent) if p.startswith((".out", "out"))]
    rerun = eviscene(log_path, *args)
    assert rerun.returncode == 0, rerun.stderr


@pytest.mark.parametrize("command", EXPORTS)
def test_an_export_interrupted_once_written_says_it_is_whole(command, run_log):
    log_path, run_id = run_log
    result = interrupted_at("staging.renamed", signal.SIGINT, log_path, *EXPORTS[command](run_id, "out"))
    assert_interrupted(result, "interrupted; out was written whole")
    assert os.listdir(log_path.parent / "out")
    if command == "dataset export":  # and recorded: a rerun could not record it, the folder is not new
        assert exports_recorded(log_path) == [str(log_path.parent / "out")]


def exports_recorded(log_path: Path) -> list[str]:
    query = "SELECT payload->>'out_dir' AS out FROM events WHERE type = 'dataset.exported' ORDER BY run_id"
    return [row["out"] for row in EventLog(log_path).sql(query).to_pylist()]


def test_a_dataset_export_cut_short_after_its_record_is_recorded_once_by_the_rerun(run_log):
    log_path, run_id = run_log
    args = EXPORTS["dataset export"](run_id, "out")
    result = interrupted_at("staging.filled", signal.SIGKILL, log_path, *args)
    assert result.returncode == -signal.SIGKILL
    out = log_path.parent / "out"
    assert exports_recorded(log_path) == [str(out)] and not out.exists()
    rerun = eviscene(log_path, *args)
    assert rerun.returncode == 0, rerun.stderr
    assert exports_recorded(log_path) == [str(out)] and EventLog(log_path).verify().ok


@SIGNALS
def test_a_second_signal_while_the_command_stops_changes_nothing(signum, run_log):
    """A second Ctrl-C, or `timeout` signalling the process group as well as the process."""
    log_path, run_id = run_log
    result = interrupted_at("staging.filled", signum, log_path, *EXPORTS["materialize"](run_id, "out"), again_after=0.05)
    assert_interrupted(result, "interrupted while writing out (nothing kept there); the same command writes it")


@SIGNALS
def test_a_long_query_stops_at_once_with_one_quiet_line(signum, run_log):
    """DuckDB alone notices a signal in a query only now and then (the query runs on to its
    end, here hours); the CLI stops it."""
    log_path, _ = run_log
    hours = "SELECT count(*) FROM range(1000000000) a, range(1000) b WHERE a.range * b.range % 7 = 3"
    result = interrupted_at("query.connected", signum, log_path, "sql", hours, running_for=1.0)
    assert_interrupted(result, "interrupted")
    assert result.stdout == ""


@pytest.mark.parametrize("earlier", [None, "the earlier answer\n"], ids=["new", "over-an-earlier-file"])
def test_a_query_stopped_while_it_writes_its_output_file_says_what_is_kept(earlier, run_log):
    """`sql --output` said only `interrupted`; it now says, as the exports do, that the file is
    not there (or is the earlier one, byte for byte) and that the same command writes it."""
    log_path, _ = run_log
    out = log_path.parent / "rows.csv"
    if earlier is not None:
        out.write_text(earlier)
    rows = "SELECT a.range AS a, b.range AS b FROM range(1000000000) a, range(1000) b"
    result = interrupted_at("query.connected", signal.SIGINT, log_path, "sql", rows, "--output", "rows.csv", running_for=1.0)
    kept = "the earlier one kept as it was" if earlier is not None else "nothing kept there"
    assert_interrupted(result, f"interrupted while writing rows.csv ({kept}); the same command writes it")
    assert (out.read_text() if out.exists() else None) == earlier
    assert not [p.name for p in log_path.parent.iterdir() if p.name.startswith(".rows.csv")]  # no half file beside it


def write_run(log: EventLog, run_id: str) -> None:
    """A finished run of 10 events, live (not sealed)."""
    steps = [EventDraft(GateDecided(gate="g", subject=f"s{i}", passed=True), episode_id="e", attempt=1, step=i) for i in range(9)]
    end = EventDraft(RunFinished(status="completed", completed_at="2026-11-30T01:00:00+00:00", num_episodes=1, num_errors=0))
    log.append(run_id, [*steps, end])


@SIGNALS
def test_an_interrupted_seal_moves_nothing_and_sealing_again_finishes(signum, tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    write_run(log, "r1")
    result = interrupted_at("seal.checked", signum, log.path, "log", "seal")
    assert_interrupted(result, "interrupted; nothing half done is kept: the same command finishes the job")
    assert (tmp_path / "log.duckdb.live" / "r1").is_dir()
    assert eviscene(log.path, "log", "seal").stdout == "sealed 1 run(s): r1\n"
    assert log.sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 10}]


def test_an_interrupted_import_is_finished_by_importing_again(run_log, tmp_path):
    log_path, run_id = run_log
    run_dir = tmp_path / "run_dir"
    assert eviscene(log_path, "materialize", run_id, "--out", str(run_dir)).returncode == 0
    target = tmp_path / "imports.duckdb"
    result = interrupted_at("lock.opened", signal.SIGINT, target, "import", str(run_dir))
    assert_interrupted(result, "interrupted; nothing half done is kept: the same command finishes the job")
    imported = eviscene(target, "import", str(run_dir))
    assert imported.returncode == 0, imported.stderr
    assert " imported" in imported.stdout and "already" not in imported.stdout


def test_an_interrupted_merge_takes_nothing_in_and_merging_again_finishes(tmp_path):
    shard = EventLog(tmp_path / "shard.duckdb")
    write_run(shard, "r1")
    shard.seal()
    target = tmp_path / "all.duckdb"
    result = interrupted_at("merge.before_commit", signal.SIGINT, target, "log", "merge", str(shard.path))
    assert_interrupted(result, "interrupted; nothing half done is kept: the same command finishes the job")
    merged = eviscene(target, "log", "merge", str(shard.path))
    assert merged.returncode == 0, merged.stderr
    assert "10 events" in merged.stdout
    assert EventLog(target).sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 10}]


def test_the_resume_an_interrupt_names_finishes_the_run_pasted_as_printed_from_another_folder(release, tmp_path):
    """The line named the run only: pasted elsewhere it opened ./eviscene.duckdb (`no run`), and
    pasted where it ran it wrote the run directory to runs/RUN, not the --output-dir given.
    It now names the log and the folder, each quoted for the shell."""
    log_path = tmp_path / "my logs" / "sweep.duckdb"
    log_path.parent.mkdir()
    out = tmp_path / "elsewhere" / "r"
    result = interrupted_at("run.episodes_ended", signal.SIGINT, log_path, "eval", "run", "--benchmark",
                            str(release / "runtime_input" / "cases.jsonl"), "--limit", "2", "--no-progress", "--output-dir", str(out))
    printed = f"eviscene --db '{log_path}' eval resume r --output-dir {out}"
    assert_interrupted(result, f"interrupted; `{printed}` finishes it")
    # `log verify` names the same resume, run directory included (it named none: pasted, the
    # run was written to runs/r wherever it was pasted).
    verified = subprocess.run([EVISCENE, "--db", str(log_path), "log", "verify"], capture_output=True, text=True, timeout=600,
                              cwd=tmp_path, check=False)
    assert verified.returncode == 1 and f"an interrupted run: `{printed}` finishes it" in verified.stdout, verified.stdout
    elsewhere = tmp_path / "another folder"
    elsewhere.mkdir()
    pasted = subprocess.run([EVISCENE, *shlex.split(printed)[1:]], capture_output=True, text=True, timeout=600, cwd=elsewhere, check=False)
    assert pasted.returncode == 0, pasted.stderr
    assert (out / "run_manifest.json").is_file() and not (elsewhere / "runs").exists()
    assert EventLog(log_path).sql("SELECT status FROM runs").to_pylist() == [{"status": "completed"}]
