"""The run writer: numbering, idempotency, the chain, blobs, backpressure, sealing."""

import hashlib
import json
import threading

import anyio
import pyarrow.parquet as pq
import pytest

from eviscene.errors import DuplicateEventError, EvisceneError, InvalidRunIdError, LogIntegrityError
from eviscene.events import GateDecided, JudgmentMade, RunFinished
from eviscene.log import EventLog
from eviscene.redaction import MASK
from eviscene.store import EventDraft
from eviscene.store import writer as writer_module
from eviscene.store.chain import GENESIS_HASH
from eviscene.store.layout import blob_segment_name
from eviscene.store.manifest import ManifestEntry, append_lines, read_manifest, write_segment


def gate(i: int) -> GateDecided:
    return GateDecided(gate="g", subject=f"s{i}", passed=i % 2 == 0)


def drafts(n: int, episode: str = "e1"):
    return [EventDraft(gate(i), episode_id=episode, attempt=1, step=i) for i in range(n)]


def test_seq_is_gapless_and_payload_round_trips(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    assert log.append("r1", drafts(5)) == 5
    rows = log.sql("SELECT seq, type, step, payload->>'subject' AS subject FROM events ORDER BY seq").to_pylist()
    assert [r["seq"] for r in rows] == [1, 2, 3, 4, 5]
    assert [r["subject"] for r in rows] == ["s0", "s1", "s2", "s3", "s4"]
    assert {r["type"] for r in rows} == {"gate.decided"}


def test_same_event_twice_is_stored_once(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    log.append("r1", drafts(3))
    assert log.append("r1", drafts(3)) == 0
    assert log.append("r1", drafts(4)) == 1  # only the new fourth event
    assert log.sql("SELECT count(*) AS n, max(seq) AS m FROM events").to_pylist() == [{"n": 4, "m": 4}]


def test_explicit_event_id_reused_with_other_content_is_refused(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    log.append("r1", [EventDraft(gate(1), event_id="fixed-1")])
    with pytest.raises(DuplicateEventError, match="fixed-1"):
        log.append("r1", [EventDraft(gate(2), event_id="fixed-1")])


def test_an_explicit_event_id_another_run_holds_is_refused_and_the_log_stays_sealable(tmp_path):
    """Ids were checked within the run only: run r2 stored `fixed-1`, which r1 holds, then every
    `log seal` failed on the archive's key (`Constraint Error: Duplicate key "event_id:
    fixed-1"`) and `log verify` called r1 broken."""
    log = EventLog(tmp_path / "log.duckdb")
    log.append("r1", drafts(2) + [EventDraft(gate(2), episode_id="e1", attempt=1, step=2, event_id="fixed-1")])
    with pytest.raises(DuplicateEventError) as refused:
        log.append("r2", [EventDraft(gate(0), event_id="mine-1"), EventDraft(gate(5), event_id="fixed-1")])
    assert str(refused.value) == (
        "event_id fixed-1 is run r1's (seq 3); an event id names one event of the whole log, not appended to run r2")
    assert log.seal() == ["r1"]
    assert log.verify().intact
    assert log.sql("SELECT run_id, seq, event_id FROM events ORDER BY run_id, seq").to_pylist()[-1] == (
        {"run_id": "r1", "seq": 3, "event_id": "fixed-1"})


def test_a_seal_that_meets_an_event_id_of_another_run_names_the_run_and_moves_nothing(tmp_path, monkeypatch):
    """Two writers naming one id at the same moment both pass the writer's look-up (faked
    here); the seal then said only DuckDB's `Constraint Error: Duplicate key ...`."""
    log = EventLog(tmp_path / "log.duckdb")
    log.append("r1", [EventDraft(gate(0), event_id="fixed-1")])
    log.seal()
    monkeypatch.setattr(writer_module, "held_by_other_runs", lambda *args: [])
    log.append("r2", [EventDraft(gate(1), event_id="fixed-1")])
    before = log.path.read_bytes()
    with pytest.raises(LogIntegrityError) as refused:
        log.seal(["r2"])
    assert str(refused.value) == (
        'run r2 not sealed: Constraint Error: Duplicate key "event_id: fixed-1" violates primary key constraint. '
        "(an event id another run holds); the archive is unchanged and the run's live segments are kept and readable")
    assert log.path.read_bytes() == before


def test_derived_event_id_and_chain_match_a_hand_computation(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    log.append("r1", [EventDraft(gate(0), episode_id="e1", attempt=1, step=0, ts=1_700_000_000_000_000)])
    row = log.sql("SELECT event_id, prev_hash, hash, payload::VARCHAR AS payload FROM events").to_pylist()[0]
    payload = '{"type":"gate.decided","gate":"g","subject":"s0","passed":true,"reasons":[]}'
    assert row["payload"] == payload
    content = hashlib.sha256(f"r1\x1fe1\x1f1\x1fgate.decided\x1f0\x1f{payload}".encode()).hexdigest()
    assert row["event_id"] == "ev-" + content[:32]
    assert row["prev_hash"] == "0" * 64 == GENESIS_HASH
    expected = hashlib.sha256(f"{'0' * 64}\x1f1\x1f{row['event_id']}\x1f1700000000000000\x1f{content}".encode()).hexdigest()
    assert row["hash"] == expected


def test_non_ascii_payload_and_null_columns_chain_as_hand_computed(tmp_path):
    # The writer hashes pydantic's UTF-8 bytes and builds Arrow columns from buffers: a
    # multi-byte character and NULL episode/attempt/step must give the text-defined chain.
    log = EventLog(tmp_path / "log.duckdb")
    log.append("r1", [EventDraft(GateDecided(gate="g", subject="café ✓", passed=False), ts=1_700_000_000_000_001)])
    row = log.sql("SELECT event_id, hash, episode_id, attempt, step, payload::VARCHAR AS payload FROM events").to_pylist()[0]
    payload = '{"type":"gate.decided","gate":"g","subject":"café ✓","passed":false,"reasons":[]}'
    assert row["payload"] == payload
    assert (row["episode_id"], row["attempt"], row["step"]) == (None, None, None)
    content = hashlib.sha256(f"r1\x1f\x1e\x1f\x1e\x1fgate.decided\x1f\x1e\x1f{payload}".encode()).hexdigest()
    assert row["event_id"] == "ev-" + content[:32]
    expected = hashlib.sha256(f"{'0' * 64}\x1f1\x1f{row['event_id']}\x1f1700000000000001\x1f{content}".encode()).hexdigest()
    assert row["hash"] == expected


def test_a_known_secret_in_an_event_is_masked_before_it_is_chained(tmp_path, monkeypatch):
    monkeypatch.setenv("SOME_SERVICE_TOKEN", 'tok"en-0123456789')  # its JSON form escapes the quote
    log = EventLog(tmp_path / "log.duckdb")
    log.append("r1", [EventDraft(GateDecided(gate="g", subject="s", passed=False, reasons=['quoted tok"en-0123456789']))])
    [row] = log.sql("SELECT payload->'reasons' AS reasons FROM events").to_pylist()
    assert json.loads(row["reasons"]) == [f"quoted {MASK}"]
    assert log.verify().intact


def test_runs_write_independent_chains(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    log.append("r1", drafts(3))
    log.append("r2", drafts(2))
    counts = log.sql("SELECT run_id, max(seq) AS m FROM events GROUP BY run_id ORDER BY run_id").to_pylist()
    assert counts == [{"run_id": "r1", "m": 3}, {"run_id": "r2", "m": 2}]
    assert log.verify().intact


@pytest.mark.anyio
async def test_many_producers_with_a_tiny_queue_lose_nothing(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    async with log.writer("r1", queue_size=4, batch_rows=7, flush_seconds=0.01) as writer:

        async def produce(p: int) -> None:
            for i in range(50):
                await writer.emit(EventDraft(gate(i), episode_id=f"e{p}", attempt=1, step=i))

        async with anyio.create_task_group() as tg:
            for p in range(16):
                tg.start_soon(produce, p)
    result = log.sql("SELECT count(*) AS n, count(DISTINCT seq) AS d, min(seq) AS lo, max(seq) AS hi FROM events")
    assert result.to_pylist() == [{"n": 800, "d": 800, "lo": 1, "hi": 800}]
    assert log.verify().intact


@pytest.mark.anyio
async def test_sync_commits_and_blobs_are_stored_once(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    async with log.writer("r1", flush_seconds=30) as writer:
        first = await writer.put_blob(b"page text", "text/plain")
        again = await writer.put_blob(b"page text", "text/plain")
        await writer.emit(EventDraft(gate(0), episode_id="e", attempt=1, step=0))
        await writer.sync()  # flush_seconds is long: only sync() can have committed it
        assert log.sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 1}]
    assert first == again == hashlib.sha256(b"page text").hexdigest()
    assert log.sql("SELECT sha256, size, content FROM blobs").to_pylist() == [
        {"sha256": first, "size": 9, "content": b"page text"}
    ]


@pytest.mark.anyio
async def test_blob_segments_index_every_column_but_the_content(tmp_path):
    # Min/max statistics and a dictionary of kilobyte contents cost most of a blob segment's write.
    log = EventLog(tmp_path / "log.duckdb")
    async with log.writer("r1") as writer:
        await writer.put_blob(b"page text", "text/plain")
    folder = tmp_path / "log.duckdb.live" / "r1"
    [segment] = [entry for entry in read_manifest(folder) if not entry.is_events]
    group = pq.ParquetFile(folder / segment.file).metadata.row_group(0)
    columns = {group.column(i).path_in_schema: group.column(i) for i in range(group.num_columns)}
    assert columns["sha256"].statistics.min == hashlib.sha256(b"page text").hexdigest()
    assert columns["media_type"].statistics.max == "text/plain"
    assert "RLE_DICTIONARY" in columns["media_type"].encodings
    assert columns["content"].statistics is None
    assert "RLE_DICTIONARY" not in columns["content"].encodings


@pytest.mark.anyio
async def test_seal_stores_a_blob_two_live_segments_hold_once(tmp_path):
    # The seal deduplicates only when the segments repeat a sha256: here a second writer
    # session committed a blob the first one already had.
    log = EventLog(tmp_path / "log.duckdb")
    async with log.writer("r1") as writer:
        await writer.put_blob(b"page text", "text/plain")
        await writer.put_blob(b"other", "text/plain")
        await writer.emit(EventDraft(gate(0), episode_id="e", attempt=1, step=0))
    folder = tmp_path / "log.duckdb.live" / "r1"
    [written] = [entry for entry in read_manifest(folder) if not entry.is_events]
    again = blob_segment_name("0" * 16, 1)
    append_lines(folder, [ManifestEntry(again, 2, write_segment(folder, again, pq.read_table(folder / written.file)))])
    assert log.seal(["r1"]) == ["r1"]
    assert log.sql("SELECT content, size FROM blobs ORDER BY content").to_pylist() == [
        {"content": b"other", "size": 5}, {"content": b"page text", "size": 9}
    ]


@pytest.mark.anyio
async def test_sync_returns_once_every_earlier_batch_is_committed_in_order(tmp_path):
    # Batches are prepared while the one before is written; sync() still means all before it.
    log = EventLog(tmp_path / "log.duckdb")
    async with log.writer("r1", batch_rows=3, flush_seconds=30) as writer:
        for i in range(10):
            await writer.emit(EventDraft(gate(i), episode_id="e", attempt=1, step=i))
        await writer.sync()
        assert log.sql("SELECT count(*) AS n, max(seq) AS m FROM events").to_pylist() == [{"n": 10, "m": 10}]
        lines = read_manifest(tmp_path / "log.duckdb.live" / "r1")
        # Three full batches of 3, then the tenth event with the sync that ends its batch.
        assert [(line.first_seq, line.last_seq) for line in lines] == [(1, 3), (4, 6), (7, 9), (10, 10)]
    assert log.verify().intact


@pytest.mark.anyio
async def test_commits_do_not_wait_for_the_shared_worker_threads(tmp_path):
    # Every token of anyio's shared thread pool is held (as by tool calls of many episodes):
    # a sync() still returns, its batch written in the writer's own thread.
    log = EventLog(tmp_path / "log.duckdb")
    release = threading.Event()
    shared = anyio.to_thread.current_default_thread_limiter()
    async with anyio.create_task_group() as tools:
        for _ in range(int(shared.total_tokens)):
            tools.start_soon(anyio.to_thread.run_sync, release.wait)
        await anyio.wait_all_tasks_blocked()
        assert shared.available_tokens == 0
        safety = threading.Timer(60, release.set)  # a writer that waited for the pool gets on after a minute
        safety.start()
        try:
            async with log.writer("r1", flush_seconds=30) as writer:
                await writer.emit(EventDraft(gate(0), episode_id="e", attempt=1, step=0))
                await writer.sync()
                assert not release.is_set()  # opened and committed while every shared thread was held
                assert log.sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 1}]
        finally:
            safety.cancel()
            release.set()


def test_events_queue_while_the_writer_reads_where_the_run_stands(tmp_path, monkeypatch):
    # The run's state (where its chain ends, which events it holds) is read in the writer's
    # thread while the first events queue: emitting does not wait for it, and nothing is
    # numbered before it is known (the three events already stored are not stored again).
    log = EventLog(tmp_path / "log.duckdb")
    log.append("r1", drafts(3))
    state_may_load = threading.Event()
    real_run_state = writer_module.run_state
    loaded = []

    def held_run_state(*args):
        state_may_load.wait(30)
        loaded.append(True)
        return real_run_state(*args)

    async def write() -> None:
        async with log.writer("r1") as writer:
            for draft in drafts(5):
                await writer.emit(draft)
            assert not loaded  # the five were queued while the state was still unknown
            state_may_load.set()
            await writer.sync()

    monkeypatch.setattr(writer_module, "run_state", held_run_state)
    anyio.run(write)
    rows = log.sql("SELECT seq, payload->>'subject' AS subject FROM events ORDER BY seq").to_pylist()
    assert [(r["seq"], r["subject"]) for r in rows] == [(1, "s0"), (2, "s1"), (3, "s2"), (4, "s3"), (5, "s4")]
    assert log.verify().intact


def test_a_state_that_cannot_be_read_fails_the_writer_and_frees_the_run(tmp_path, monkeypatch):
    log = EventLog(tmp_path / "log.duckdb")

    def unreadable(*args):
        raise OSError("the archive cannot be read")

    async def write() -> None:
        async with log.writer("r1") as writer:
            await writer.emit(EventDraft(gate(0), episode_id="e", attempt=1, step=0))
            await writer.sync()  # cancelled: nothing can be numbered

    monkeypatch.setattr(writer_module, "run_state", unreadable)
    with pytest.raises(OSError, match="the archive cannot be read"):
        anyio.run(write)
    monkeypatch.undo()
    assert log.append("r1", drafts(1)) == 1  # the run's lock was released, and nothing was written
    assert log.sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 1}]


def test_sealing_keeps_every_event_and_resume_continues_the_chain(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    log.append("r1", drafts(4))
    assert log.seal() == ["r1"]
    assert not (tmp_path / "log.duckdb.live" / "r1").exists()
    assert log.append("r1", drafts(6)) == 2
    assert log.sql("SELECT count(*) AS n, max(seq) AS m FROM events").to_pylist() == [{"n": 6, "m": 6}]
    assert log.verify().intact
    log.seal()
    assert log.verify().intact
    assert log.sql("SELECT max(version) AS v FROM archive.schema_migrations").to_pylist() == [{"v": 2}]


def test_compaction_keeps_order_and_count(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")

    async def write() -> None:
        async with log.writer("r1", flush_seconds=0) as writer:
            for i in range(40):
                await writer.emit(EventDraft(gate(i), episode_id="e", attempt=1, step=i))
                await writer.sync()  # 40 one-event segments, compacted at close

    anyio.run(write)
    segments = list((tmp_path / "log.duckdb.live" / "r1").glob("events-*.parquet"))
    assert len(segments) == 1
    assert log.sql("SELECT count(*) AS n, max(seq) AS m FROM events").to_pylist() == [{"n": 40, "m": 40}]
    assert log.verify().intact


def test_payload_models_reject_unknown_fields():
    with pytest.raises(ValueError):
        JudgmentMade(verdict="authentic", confidence=1.5)


def test_events_come_back_as_typed_rows(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    log.append("r1", drafts(2))
    rows = log.events("r1", episode_id="e1")
    assert [r.seq for r in rows] == [1, 2]
    assert rows[1].typed_payload() == gate(1)


def test_shards_merge_into_one_log_once(tmp_path):
    shard0, shard1 = EventLog(tmp_path / "s0.duckdb"), EventLog(tmp_path / "s1.duckdb")
    shard0.append("run-shard0", drafts(3))
    shard1.append("run-shard1", drafts(4))
    shard1.seal()  # one sealed, one still live: both merge
    merged = EventLog(tmp_path / "all.duckdb")
    assert (merged.merge(shard0.path).events, merged.merge(shard1.path).events) == (3, 4)
    assert merged.merge(shard0.path).events == 0  # idempotent
    assert merged.sql("SELECT run_id, count(*) AS n FROM events GROUP BY run_id ORDER BY run_id").to_pylist() == [
        {"run_id": "run-shard0", "n": 3}, {"run_id": "run-shard1", "n": 4}
    ]
    assert merged.verify().intact


def test_a_run_that_differs_between_logs_is_not_merged(tmp_path):
    from eviscene.errors import EvisceneError

    first, second = EventLog(tmp_path / "a.duckdb"), EventLog(tmp_path / "b.duckdb")
    first.append("same-run", drafts(2))
    second.append("same-run", drafts(2, episode="other"))
    with pytest.raises(EvisceneError, match="same-run exists in both logs with different events"):
        first.merge(second.path)


def test_a_blob_two_runs_wrote_at_once_reads_as_one_row_once_one_of_them_is_sealed(tmp_path):
    """Two runs at once each store the release's gold file; when one is sealed, the archive
    holds it and the other's live segment too: `blobs` still shows it once, or every join on
    it (the SFT rows, the scores) counts it twice."""
    log = EventLog(tmp_path / "log.duckdb")

    async def write_both() -> None:
        async with log.writer("a", flush_seconds=30) as first, log.writer("b", flush_seconds=30) as second:
            for writer in (first, second):  # each has read what the log stores before either writes (else, on a
                await writer.sync()          # loaded machine, b could read a's copy first and rightly store none)
            for writer in (first, second):
                await writer.put_blob(b"gold", "text/plain")
                await writer.emit(EventDraft(GateDecided(gate="g", subject="s", passed=True)))
                await writer.sync()

    anyio.run(write_both)
    assert log.seal(["a"]) == ["a"]
    gold = hashlib.sha256(b"gold").hexdigest()
    assert log.sql("SELECT sha256, decode(content) AS content FROM blobs").to_pylist() == [{"sha256": gold, "content": "gold"}]
    assert log.sql("SELECT count(*) AS n FROM blob_copies").to_pylist() == [{"n": 2}]  # verify still sees both copies
    assert not log.verify().problems


def test_append_from_synchronous_code_inside_a_running_event_loop(tmp_path):
    """A notebook cell runs inside an event loop: `log.append` there failed with anyio's
    "Already running asyncio in this thread"."""
    import asyncio

    log = EventLog(tmp_path / "log.duckdb")

    async def cell() -> int:
        return log.append("notes", [EventDraft(GateDecided(gate="review", subject="s", passed=True, reasons=[]))])

    assert asyncio.run(cell()) == 1
    assert log.sql("SELECT type FROM events WHERE run_id = 'notes'").to_pylist() == [{"type": "gate.decided"}]
    # a run id that cannot name a folder is the user's mistake, as start_run says (it was a bare ValueError)
    for refused_by in (lambda: log.append("a/b", []), lambda: log.seal(["a/b"])):
        with pytest.raises(InvalidRunIdError, match="invalid run id 'a/b'"):
            refused_by()


def test_append_refuses_a_run_that_has_finished(tmp_path):
    """Events after a run's run.finished left `runs` saying completed and `log verify` saying
    UNFINISHED, exit 1."""
    log = EventLog(tmp_path / "log.duckdb")
    log.append("r1", [EventDraft(RunFinished(status="completed", completed_at="2026-12-06T08:00:00+00:00", num_episodes=0, num_errors=0))])
    note = EventDraft(GateDecided(gate="review", subject="s", passed=True, reasons=[]))
    with pytest.raises(EvisceneError, match="^run 'r1' has finished, so it takes no more events; append to a run of your own "):
        log.append("r1", [note])
    assert log.append("r1-notes", [note]) == 1
    report = log.verify()  # r1 still ends at its run.finished; the notes run, with none, reads as unfinished
    assert not report.problems and [n.run_id for n in report.unfinished] == ["r1-notes"]
