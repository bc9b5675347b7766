"""Real processes: analysts read a log while runs write it, and two runs write at once."""

import json
import subprocess
import sys
from pathlib import Path

WRITER = Path(__file__).with_name("writer_process.py")
EVISCENE = str(Path(sys.executable).with_name("eviscene"))  # the installed console script


def start_writer(log_path: Path, run_id: str, batches: int, per_batch: int = 20, pause: float = 0.1):
    process = subprocess.Popen(
        [sys.executable, str(WRITER), str(log_path), run_id, str(batches), str(per_batch), str(pause)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=log_path.parent,
    )
    assert process.stdout.readline().startswith("committed")  # something is committed
    return process


def eviscene(log_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [EVISCENE, "--db", str(log_path), *args], capture_output=True, text=True, timeout=60, cwd=log_path.parent
    )


def count(log_path: Path) -> int:
    result = eviscene(log_path, "sql", "SELECT count(*) AS n FROM events", "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)[0]["n"]


def test_queries_see_committed_events_while_a_run_writes(tmp_path):
    log_path = tmp_path / "live.duckdb"
    writer = start_writer(log_path, "r1", batches=300)
    try:
        seen = [count(log_path)]
        runs = eviscene(log_path, "runs", "--format", "json")
        assert runs.returncode == 0 and json.loads(runs.stdout)[0]["run_id"] == "r1"
        verify = eviscene(log_path, "log", "verify")
        assert verify.returncode == 0 and f"RUNNING run r1: running (pid {writer.pid}" in verify.stdout
        assert "ok: 1 run(s)" in verify.stdout
        seen.append(count(log_path))
        assert writer.poll() is None, "the writer should still be running during the reads"
        assert 0 < seen[0] <= seen[1] < 6002
    finally:
        writer.wait(timeout=120)
    assert writer.returncode == 0
    assert count(log_path) == 6002  # run.started, 6000 events, run.finished


def test_a_second_writer_of_a_run_gets_one_line_naming_the_holder(tmp_path):
    log_path = tmp_path / "locked.duckdb"
    writer = start_writer(log_path, "r1", batches=100)
    try:
        result = eviscene(log_path, "log", "seal", "r1")
        assert result.returncode == 2
        assert result.stderr.strip().count("\n") == 0, result.stderr
        assert f"run r1 is being written by pid {writer.pid}" in result.stderr
        assert "Traceback" not in result.stderr
    finally:
        writer.kill()
        writer.wait(timeout=60)


def test_two_runs_write_at_once(tmp_path):
    log_path = tmp_path / "two.duckdb"
    first = start_writer(log_path, "r1", batches=40)
    second = start_writer(log_path, "r2", batches=40)
    assert first.poll() is None and second.poll() is None
    assert first.wait(timeout=60) == 0 and second.wait(timeout=60) == 0
    assert count(log_path) == 1604
    assert eviscene(log_path, "log", "seal").stdout.startswith("sealed 2 run(s)")
    assert count(log_path) == 1604
    verify = eviscene(log_path, "log", "verify")
    assert verify.returncode == 0 and "2 run(s), 1604 events" in verify.stdout


def test_a_query_whose_segment_is_sealed_under_it_reads_a_newer_snapshot(tmp_path, monkeypatch):
    """The snapshot lists run r1's live segment, then a seal moves it into the archive before
    the query reads it: the query opens a newer snapshot and sees every row once."""
    from eviscene.events import GateDecided
    from eviscene.log import EventLog
    from eviscene.store import EventDraft, EventStore

    log = EventLog(tmp_path / "race.duckdb")
    log.append("r1", [EventDraft(GateDecided(gate="g", subject=f"s{i}", passed=True), episode_id="e", attempt=1, step=i) for i in range(5)])
    listed = EventStore.connect
    snapshots = []

    def seal_after_the_listing(self, **options):
        con = listed(self, **options)
        snapshots.append(con)
        if len(snapshots) == 1:
            log.seal(["r1"])  # the listed segment is gone before the query reads it
        return con

    monkeypatch.setattr(EventStore, "connect", seal_after_the_listing)
    table = log.sql("SELECT count(*) AS n, count(DISTINCT seq) AS seqs FROM events")
    assert table.to_pylist() == [{"n": 5, "seqs": 5}]
    assert len(snapshots) == 2


def test_a_listing_that_races_a_compaction_reads_the_compacted_segment(tmp_path, monkeypatch):
    """A reader reads the run's manifest; the writer then compacts its segments (a new line
    naming the one file that replaces them, then the old files deleted). The listing reads the
    manifest again and finds every event, not a snapshot missing the deleted files' seqs."""
    import anyio

    from eviscene.events import GateDecided
    from eviscene.log import EventLog
    from eviscene.store import EventDraft, layout
    from eviscene.store.manifest import read_manifest
    from eviscene.store.writer import COMPACT_AFTER_SEGMENTS

    log = EventLog(tmp_path / "race.duckdb")
    folder = layout.run_folder(log.path, "r1")

    async def write_segments():
        async with log.writer("r1", flush_seconds=0.05) as writer:
            for step in range(COMPACT_AFTER_SEGMENTS):
                await writer.emit(EventDraft(GateDecided(gate="g", subject=f"s{step}", passed=True), episode_id="e", attempt=1, step=step))
                await writer.sync()
            return read_manifest(folder)  # what a reader read before the writer closed

    before = anyio.run(write_segments)
    assert len(before) == COMPACT_AFTER_SEGMENTS and not any((folder / e.file).exists() for e in before)
    reads = []

    def manifest_read_before_the_compaction(path):
        reads.append(path)
        return before if len(reads) == 1 else read_manifest(path)

    monkeypatch.setattr(layout, "read_manifest", manifest_read_before_the_compaction)
    (segment,) = layout.list_segments(folder)
    assert (segment.first_seq, segment.last_seq) == (1, COMPACT_AFTER_SEGMENTS) and len(reads) == 2
    reads.clear()
    counted = log.sql("SELECT count(*) AS n, count(DISTINCT seq) AS seqs FROM events").to_pylist()
    assert counted == [{"n": COMPACT_AFTER_SEGMENTS, "seqs": COMPACT_AFTER_SEGMENTS}]
