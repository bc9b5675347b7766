"""Crash tests with real processes, in the style of SQLite's: a writer, a seal and a merge are
killed with SIGKILL at each named step of their commit (EVISCENE_FAULT, eviscene/store/faults.py)
and at seeded random moments. After each kill the log verifies (a killed run is reported
unfinished, nothing else), nothing committed is lost or counted twice, and a resume, seal or
merge afterwards completes. The seal race is provoked deterministically (EVISCENE_PAUSE)."""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from eviscene.errors import LogLockedError
from eviscene.events import GateDecided, RunFinished
from eviscene.log import EventLog
from eviscene.store import EventDraft

WRITER = Path(__file__).with_name("writer_process.py")
EVISCENE = str(Path(sys.executable).with_name("eviscene"))
SEED = 20261201


def run_writer(log_path: Path, run_id: str, batches: int, per_batch: int, pause: float = 0.0, fault: str | None = None,
               kill_after: float | None = None) -> tuple[int, int]:
    """Run writer_process.py; returns (exit code, events it reported committed)."""
    env = {**os.environ, **({"EVISCENE_FAULT": fault} if fault else {})}
    process = subprocess.Popen(
        [sys.executable, str(WRITER), str(log_path), run_id, str(batches), str(per_batch), str(pause)],
        stdout=subprocess.PIPE, text=True, env=env, cwd=log_path.parent,
    )
    if kill_after is not None:
        time.sleep(kill_after)
        process.send_signal(signal.SIGKILL)
    out, _ = process.communicate(timeout=120)
    committed = [int(line.split()[1]) for line in out.splitlines() if line.startswith("committed")]
    return process.returncode, 1 + committed[-1] if committed else 0  # run.started comes first


def eviscene(log_path: Path, *args: str, fault: str | None = None, pause: str | None = None, wait: bool = True):
    env = dict(os.environ)
    if fault:
        env["EVISCENE_FAULT"] = fault
    if pause:
        env["EVISCENE_PAUSE"] = pause
    command = [EVISCENE, "--db", str(log_path), *args]
    if not wait:
        return subprocess.Popen(command, env=env, cwd=log_path.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(command, env=env, cwd=log_path.parent, capture_output=True, text=True, timeout=120)


def events_of(log: EventLog, run_id: str) -> tuple[int, int]:
    row = log.sql("SELECT count(*) AS n, count(DISTINCT event_id) AS d FROM events WHERE run_id = ?", [run_id]).to_pylist()[0]
    return row["n"], row["d"]


def assert_sound(log: EventLog, unfinished: set[str] = frozenset()) -> None:
    report = log.verify()
    assert report.intact, [str(p) for p in report.problems]
    assert {n.run_id for n in report.unfinished} <= set(unfinished), [str(n) for n in report.unfinished]
    assert not report.running


# --- writer commit ------------------------------------------------------------------------

WRITER_POINTS = ["writer.tmp_written", "writer.renamed", "writer.before_manifest", "writer.committed"]


@pytest.mark.parametrize("point", WRITER_POINTS + ["writer.compacted", "random"])
def test_writer_killed_during_commit_loses_nothing_committed(tmp_path, point):
    rng = random.Random(f"{SEED}-{point}")
    batches, per_batch = (35, 2) if point == "writer.compacted" else (12, 5)
    total = 1 + batches * per_batch + 1  # run.started, the gates, run.finished
    for iteration in range(2 if point == "random" else 1):
        log = EventLog(tmp_path / f"w{iteration}.duckdb")
        if point == "random":
            code, committed = run_writer(log.path, "r1", batches, per_batch, pause=0.05, kill_after=rng.uniform(0.3, 2.5))
        else:
            nth = 1 if point == "writer.compacted" else rng.randint(2, batches)
            code, committed = run_writer(log.path, "r1", batches, per_batch, fault=f"{point}@{nth}")
            assert code == -signal.SIGKILL
        assert_sound(log, unfinished={"r1"})
        stored, distinct = events_of(log, "r1")
        assert stored == distinct >= committed  # nothing committed lost, nothing stored twice
        unfinished = log.verify().unfinished
        if unfinished or not stored:  # killed before its run.finished was committed: a resume completes it
            assert not unfinished or unfinished[0].verified_seq == stored
            # It re-emits every event: the stored ones are recognised, the rest appended.
            assert run_writer(log.path, "r1", batches, per_batch) == (0, 1 + batches * per_batch)
        assert events_of(log, "r1") == (total, total) and log.verify().ok
        assert log.seal() == ["r1"]
        assert events_of(log, "r1") == (total, total) and log.verify().ok


# --- seal -------------------------------------------------------------------------------------

def write_run(log: EventLog, run_id: str, batches: int, per_batch: int, gate: str = "g") -> int:
    import anyio

    async def write() -> None:
        async with log.writer(run_id, flush_seconds=30) as writer:
            for batch in range(batches):
                await writer.put_blob(f"{run_id} page {batch}".encode(), "text/plain")  # a blob segment beside each batch's
                for i in range(per_batch):
                    step = batch * per_batch + i
                    await writer.emit(EventDraft(GateDecided(gate=gate, subject=f"s{step}", passed=True), episode_id="e", attempt=1, step=step))
                await writer.sync()
            await writer.emit(EventDraft(RunFinished(status="completed", completed_at="2026-11-30T01:00:00+00:00", num_episodes=1, num_errors=0)))

    anyio.run(write)
    return batches * per_batch + 1


@pytest.mark.parametrize("point", ["seal.checked", "seal.copied", "seal.removing", "seal.removed", "random"])
def test_seal_killed_midway_is_completed_by_the_next_seal(tmp_path, point):
    rng = random.Random(f"{SEED}-{point}")
    for iteration in range(3 if point == "random" else 1):
        log = EventLog(tmp_path / f"s{iteration}.duckdb")
        earlier = write_run(log, "r0", 3, 10)
        log.seal()
        total = write_run(log, "r1", 20, 50)
        if point == "random":
            process = eviscene(log.path, "log", "seal", "r1", wait=False)
            time.sleep(rng.uniform(0.5, 3.0))
            process.send_signal(signal.SIGKILL)
            process.communicate(timeout=60)
        else:
            assert eviscene(log.path, "log", "seal", "r1", fault=point).returncode == -signal.SIGKILL
        assert_sound(log)
        assert events_of(log, "r1") == (total, total) and events_of(log, "r0") == (earlier, earlier)
        again = eviscene(log.path, "log", "seal")
        assert again.returncode == 0, again.stderr
        assert not (tmp_path / f"s{iteration}.duckdb.live" / "r1").exists()
        assert events_of(log, "r1") == (total, total) and log.verify().ok


def test_a_resume_after_a_seal_killed_before_removal_counts_nothing_twice(tmp_path):
    """The killed seal leaves sealed segments in the folder; the resume's compaction (over 32
    segments) merges only its own, so no sealed event comes back under a new file name."""
    log = EventLog(tmp_path / "s.duckdb")
    first = write_run(log, "r1", 5, 4)
    assert eviscene(log.path, "log", "seal", "r1", fault="seal.copied").returncode == -signal.SIGKILL
    second = write_run(log, "r1", 34, 1, gate="resumed")
    assert events_of(log, "r1") == (first + second, first + second)
    assert log.verify().ok
    assert log.seal() == ["r1"]
    assert events_of(log, "r1") == (first + second, first + second) and log.verify().ok


# --- merge ------------------------------------------------------------------------------------

@pytest.mark.parametrize("point", ["merge.verified", "merge.before_commit", "merge.committed", "random"])
def test_merge_killed_midway_is_completed_by_the_next_merge(tmp_path, point):
    rng = random.Random(f"{SEED}-{point}")
    for iteration in range(3 if point == "random" else 1):
        shard = EventLog(tmp_path / f"shard{iteration}.duckdb")
        sealed_events = write_run(shard, "run-a", 10, 50)
        shard.seal()
        live_events = write_run(shard, "run-b", 10, 50)
        target = EventLog(tmp_path / f"all{iteration}.duckdb")
        own = write_run(target, "mine", 2, 5)
        target.seal()
        if point == "random":
            process = eviscene(target.path, "log", "merge", str(shard.path), wait=False)
            time.sleep(rng.uniform(0.5, 3.0))
            process.send_signal(signal.SIGKILL)
            process.communicate(timeout=60)
        else:
            assert eviscene(target.path, "log", "merge", str(shard.path), fault=point).returncode == -signal.SIGKILL
        assert_sound(target)
        merged = target.sql("SELECT count(*) AS n FROM events WHERE run_id <> 'mine'").to_pylist()[0]["n"]
        assert merged in (0, sealed_events + live_events)  # one transaction: all or nothing
        again = eviscene(target.path, "log", "merge", str(shard.path))
        assert again.returncode == 0, again.stderr
        for run_id, count in [("run-a", sealed_events), ("run-b", live_events), ("mine", own)]:
            assert events_of(target, run_id) == (count, count)
        assert target.verify().ok and shard.verify().ok


# --- the seal race ------------------------------------------------------------------------------

def paused_seal(log: EventLog, point: str, barrier: Path) -> subprocess.Popen:
    barrier.mkdir()
    process = eviscene(log.path, "log", "seal", "r1", pause=f"{point}:{barrier}", wait=False)
    deadline = time.monotonic() + 60
    while not (barrier / "reached").exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return process


def resume_like(log: EventLog, run_id: str) -> int:
    """What a resume writes after the run's end: an event of a new attempt (through the
    writer, as `eval resume` does: `append` refuses a finished run)."""

    async def write() -> int:
        async with log.writer(run_id) as writer:
            await writer.emit(EventDraft(GateDecided(gate="g", subject="late", passed=True), episode_id="e", attempt=2, step=0))
        return writer.committed_events

    return anyio.run(write)


def test_a_resume_during_the_seal_waits_until_the_folder_is_gone(tmp_path):
    """Between the archive commit and the removal of the run folder the seal still holds the
    lock: a resume is refused (naming the seal), then runs once the seal is done."""
    log = EventLog(tmp_path / "race.duckdb")
    total = write_run(log, "r1", 3, 10)
    seal = paused_seal(log, "seal.copied", tmp_path / "barrier")
    with pytest.raises(LogLockedError, match=f"run r1 is being written by pid {seal.pid}"):
        resume_like(log, "r1")
    (tmp_path / "barrier" / "go").touch()
    assert seal.wait(timeout=60) == 0
    assert resume_like(log, "r1") == 1
    assert events_of(log, "r1") == (total + 1, total + 1)
    assert log.verify().intact
    log.seal()
    assert events_of(log, "r1") == (total + 1, total + 1) and log.verify().intact


def test_a_resume_right_after_the_folder_is_removed_keeps_its_segments(tmp_path):
    """The seal removed the folder (lock file included) and still holds its lock: a resume in
    that gap makes a new folder and lock file, and the seal's exit takes nothing of it."""
    log = EventLog(tmp_path / "race.duckdb")
    total = write_run(log, "r1", 3, 10)
    seal = paused_seal(log, "seal.removed", tmp_path / "barrier")
    folder = tmp_path / "race.duckdb.live" / "r1"
    assert not folder.exists()
    assert resume_like(log, "r1") == 1
    (tmp_path / "barrier" / "go").touch()
    assert seal.wait(timeout=60) == 0
    assert sorted(p.name for p in folder.iterdir()) == ["events-000000000032-000000000032.parquet", "segments.jsonl", "writer.lock"]
    assert events_of(log, "r1") == (total + 1, total + 1) and log.verify().intact
    assert log.seal() == ["r1"]
    assert events_of(log, "r1") == (total + 1, total + 1) and log.verify().intact


def test_a_writer_that_opened_the_lock_file_before_the_seal_removed_it_locks_the_new_one(tmp_path):
    """A resume opens the lock file while the seal holds it, and takes the lock only after the
    seal removed the file: a lock on a removed file guards nothing, so it takes the new one
    (else it would write into a folder that no longer exists)."""
    log = EventLog(tmp_path / "race.duckdb")
    total = write_run(log, "r1", 3, 10)
    seal = paused_seal(log, "seal.copied", tmp_path / "seal-barrier")
    writer_barrier = tmp_path / "writer-barrier"
    writer_barrier.mkdir()
    writer = subprocess.Popen(
        [sys.executable, str(WRITER), str(log.path), "r1", "2", "5", "0"], stdout=subprocess.PIPE, text=True,
        env={**os.environ, "EVISCENE_PAUSE": f"lock.opened:{writer_barrier}"}, cwd=tmp_path,
    )
    deadline = time.monotonic() + 60
    while not (writer_barrier / "reached").exists():
        assert writer.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    (tmp_path / "seal-barrier" / "go").touch()
    assert seal.wait(timeout=60) == 0
    (writer_barrier / "go").touch()
    assert writer.wait(timeout=60) == 0
    added = 1 + 2 * 5 + 1
    assert events_of(log, "r1") == (total + added, total + added)
    assert log.verify().ok
    assert log.seal() == ["r1"] and events_of(log, "r1") == (total + added, total + added) and log.verify().ok


HOLD_A_SNAPSHOT = """
import sys, time
from eviscene.log import EventLog
con = EventLog(sys.argv[1]).connect(views=False)  # a reader, as a long `eviscene sql` is
print("ready", flush=True)
time.sleep(60)
"""


def test_a_seal_kept_out_by_a_reader_names_the_reader_and_does_not_call_it_a_writer(tmp_path, monkeypatch):
    """A reader shares the archive with other readers and keeps a writer (a seal) out: the
    seal's refusal named it "held for writing by pid N", sending the user after a writer that
    was not there."""
    from eviscene.store import snapshot

    log = EventLog(tmp_path / "log.duckdb")
    write_run(log, "r1", 1, 3)
    log.seal(["r1"])
    write_run(log, "r2", 1, 3)
    script = tmp_path / "long_query.py"
    script.write_text(HOLD_A_SNAPSHOT)
    reader = subprocess.Popen([sys.executable, str(script), str(log.path)], stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout.readline() == "ready\n"
        monkeypatch.setattr(snapshot, "LOCK_WAIT_SECONDS", 0.3)
        with pytest.raises(LogLockedError) as refused:
            log.seal(["r2"])
        assert str(refused.value) == f"log {log.path} is in use by pid {reader.pid} (long_query.py)"
    finally:
        reader.kill()
        reader.wait()
    assert log.seal(["r2"]) == ["r2"] and log.verify().ok


def test_a_seal_kept_out_by_this_process_s_own_open_query_says_so(tmp_path, monkeypatch):
    """A notebook iterating a query (or keeping `log.connect()`) and sealing in the same
    process: DuckDB's own "Unique file handle conflict" came out raw, naming no holder, and
    `start_run` lost its summary to it. Now it is a LogLockedError naming this process."""
    import os

    from eviscene.store import snapshot

    log = EventLog(tmp_path / "log.duckdb")
    write_run(log, "r1", 1, 3)
    log.seal(["r1"])
    write_run(log, "r2", 1, 3)
    monkeypatch.setattr(snapshot, "LOCK_WAIT_SECONDS", 0.3)
    con = log.connect()
    try:
        assert con.sql("SELECT count(*) FROM events").fetchall() == [(8,)]
        with pytest.raises(LogLockedError) as refused:
            log.seal(["r2"])
        assert str(refused.value) == (f"log {log.path} is in use by this process (pid {os.getpid()}: another of its connections, "
                                      "a query still being read or a `log.connect()` kept open, or its seal in another thread)")
    finally:
        con.close()
    assert log.seal(["r2"]) == ["r2"] and log.verify().ok


@pytest.mark.parametrize("step", ["attach_archive", "apply_migrations"])
def test_a_ctrl_c_in_the_first_seal_leaves_the_log_readable_by_the_same_process(tmp_path, monkeypatch, step):
    """`eval run` interrupted while its seal made the archive file: the seal's connection,
    left open to the traceback, kept the archive attached, and the interrupt's own report
    (which reads the log) failed with DuckDB's "already attached", exit 2."""
    from eviscene.store import seal

    log = EventLog(tmp_path / "log.duckdb")
    write_run(log, "r1", 1, 3)
    real = getattr(seal, step)

    def interrupted(*args, **kwargs):
        real(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(seal, step, interrupted)
    with pytest.raises(KeyboardInterrupt) as caught:
        log.seal(["r1"])
    assert log.sql("SELECT count(*) AS n FROM events WHERE run_id = 'r1'").to_pylist() == [{"n": 4}]
    del caught  # the traceback, and whatever its frames hold
    monkeypatch.undo()
    assert log.seal(["r1"]) == ["r1"] and log.verify().ok
