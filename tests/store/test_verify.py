"""`log verify` names each edited, deleted, reordered or cut-off part of a run, and whether a
run is unfinished or still running; seal and merge refuse what verify would call broken."""

import fcntl
import hashlib
import json
import os
import random
import re
import shutil
import subprocess

import anyio
import duckdb
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from eviscene.cli.main import cli
from eviscene.errors import LogIntegrityError, LogLockedError
from eviscene.events import ArtifactImported, DatasetExported, GateDecided, RunFinished
from eviscene.imports import import_path
from eviscene.log import EventLog
from eviscene.store import EventDraft
from eviscene.store.chain import GENESIS_HASH, content_digest, event_hash
from eviscene.store.locks import RunLock


def gates(first: int, last: int) -> list[EventDraft]:
    return [EventDraft(GateDecided(gate="g", subject=f"s{i}", passed=True), episode_id="e", attempt=1, step=i) for i in range(first, last)]


def finished() -> EventDraft:
    return EventDraft(RunFinished(status="completed", completed_at="2026-11-30T01:00:00+00:00", num_episodes=1, num_errors=0))


def write_batches(log: EventLog, run_id: str, batches: list[list[EventDraft]]) -> None:
    """One committed segment per batch."""

    async def write() -> None:
        async with log.writer(run_id, flush_seconds=30) as writer:
            for batch in batches:
                for draft in batch:
                    await writer.emit(draft)
                await writer.sync()

    anyio.run(write)


def run_folder(log: EventLog, run_id: str = "r1"):
    return log.path.with_name(log.path.name + ".live") / run_id


def segments(log: EventLog, run_id: str = "r1"):
    return sorted(run_folder(log, run_id).glob("events-*.parquet"))


def verify_cli(log: EventLog, *options: str):
    return CliRunner().invoke(cli, ["--db", str(log.path), "log", "verify", *options])


@pytest.fixture
def sealed_log(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    log.append("r1", gates(0, 6) + [finished()])
    log.seal()
    return log


@pytest.fixture
def live_log(tmp_path):
    """r1 in three segments, seq 1..4, 5..8, 9..12 (9..12 ends with run.finished), not sealed."""
    log = EventLog(tmp_path / "live.duckdb")
    write_batches(log, "r1", [gates(0, 4), gates(4, 8), gates(8, 11) + [finished()]])
    return log


def tamper(log: EventLog, sql: str) -> None:
    con = duckdb.connect(str(log.path))
    con.execute(sql)
    con.close()


def rewrite_and_rehash(log: EventLog, run_id: str, seq: int, payload: dict, restamp: bool = True) -> None:
    """What someone who can write the archive can do: replace one event's payload, then hash it
    and every later event again (run.finished's stamp, unless not `restamp`, and the sealed
    records included), so that the chain holds together."""
    con = duckdb.connect(str(log.path))
    rows = con.execute(
        "SELECT seq, event_id, epoch_us(ts), episode_id, attempt, type, step, payload::VARCHAR, prev_hash "
        "FROM events WHERE run_id = ? ORDER BY seq", [run_id]).fetchall()
    prev = GENESIS_HASH
    for row_seq, event_id, ts, episode_id, attempt, type_, step, text, _prev_hash in rows:
        if row_seq < seq:
            prev = con.execute("SELECT hash FROM events WHERE run_id = ? AND seq = ?", [run_id, row_seq]).fetchone()[0]
            continue
        if row_seq == seq:
            text = orjson.dumps(payload).decode()
        if type_ == "run.finished" and restamp:
            stamp = json.loads(text)
            stamp["last_hash"] = prev
            text = orjson.dumps(stamp).decode()
        new_hash = event_hash(prev, row_seq, event_id, ts, content_digest(run_id, episode_id, attempt, type_, step, text))
        con.execute("UPDATE events SET payload = ?, prev_hash = ?, hash = ? WHERE run_id = ? AND seq = ?",
                    [text, prev, new_hash, run_id, row_seq])
        prev = new_hash
    con.execute("UPDATE sealed_segments SET last_hash = (SELECT hash FROM events WHERE run_id = ? AND seq = last_seq) "
                "WHERE run_id = ? AND last_seq IS NOT NULL", [run_id, run_id])
    con.close()


def test_intact_log_verifies(sealed_log):
    report = sealed_log.verify()
    assert report.ok and report.runs == 1 and report.events == 7
    result = verify_cli(sealed_log)
    assert result.exit_code == 0 and result.output == "ok: 1 run(s), 7 events, every chain intact and complete\n"


def test_run_finished_names_the_chain_head_it_closes(sealed_log):
    rows = sealed_log.sql("SELECT seq, hash, payload::VARCHAR AS payload FROM events ORDER BY seq").to_pylist()
    end = json.loads(rows[-1]["payload"])
    assert (end["last_seq"], end["last_hash"]) == (6, rows[5]["hash"])


def test_edited_payload_is_named(sealed_log):
    tamper(sealed_log, """UPDATE events SET payload = '{"type":"gate.decided","gate":"g","subject":"forged","passed":true,"reasons":[]}' WHERE seq = 3""")
    problems = sealed_log.verify().problems
    assert [(p.seq, "edited" in p.problem) for p in problems] == [(3, True)]


def test_deleted_event_is_named(sealed_log):
    tamper(sealed_log, "DELETE FROM events WHERE seq = 4")
    problems = sealed_log.verify().problems
    assert len(problems) == 1 and problems[0].seq == 5 and "4..4 missing" in problems[0].problem


def test_reordered_events_are_named(sealed_log):
    tamper(sealed_log, "UPDATE events SET seq = CASE seq WHEN 2 THEN 102 WHEN 3 THEN 2 END WHERE seq IN (2, 3)")
    tamper(sealed_log, "UPDATE events SET seq = 3 WHERE seq = 102")
    problems = sealed_log.verify().problems
    assert len(problems) == 1 and problems[0].seq == 2


def test_an_event_inserted_before_the_first_is_named_so(sealed_log):
    tamper(sealed_log, "INSERT INTO events SELECT * REPLACE (0 AS seq, 'ev-forged' AS event_id) FROM events WHERE seq = 1")
    assert [str(p) for p in sealed_log.verify().problems] == ["run r1, seq 0 (ev-forged): seq 0 comes before the run's first, seq 1 (an inserted event)"]


def test_renumbered_deletion_is_caught_by_the_chain(sealed_log):
    tamper(sealed_log, "DELETE FROM events WHERE seq = 2")
    tamper(sealed_log, "UPDATE events SET seq = seq - 1 WHERE seq > 2")
    problems = sealed_log.verify().problems
    assert len(problems) == 1 and problems[0].seq == 2 and "prev_hash" in problems[0].problem


def test_run_finished_stamped_with_another_hash_at_its_seq_is_named_by_the_hashes_not_as_moved(sealed_log):
    # Seq 3 rewritten and the chain hashed again, but not run.finished's stamp: its seq still holds, its hash not.
    stamped = sealed_log.sql("SELECT hash FROM events WHERE seq = 6").to_pylist()[0]["hash"]
    rewrite_and_rehash(sealed_log, "r1", 3, {"gate": "g", "subject": "forged", "passed": True, "reasons": []}, restamp=False)
    chain = sealed_log.sql("SELECT hash FROM events WHERE seq = 6").to_pylist()[0]["hash"]
    assert [(p.run_id, p.seq, p.problem) for p in sealed_log.verify().problems] == [(
        "r1", 7, f"run.finished closes the chain at seq 6 with hash {stamped}, but the chain's hash there is {chain} "
        "(events up to seq 6 changed, the chain hashed again)")]


def test_run_finished_after_another_seq_than_its_stamp_is_named_as_moved(sealed_log):
    tamper(sealed_log, "DELETE FROM events WHERE seq = 6")
    tamper(sealed_log, "UPDATE events SET seq = 6 WHERE seq = 7")
    tamper(sealed_log, "UPDATE sealed_segments SET last_seq = 6 WHERE last_seq = 7")
    rewrite_and_rehash(sealed_log, "r1", 6, json.loads(sealed_log.sql("SELECT payload::VARCHAR AS p FROM events WHERE seq = 6")
                                                       .to_pylist()[0]["p"]), restamp=False)
    assert [(p.run_id, p.seq, p.problem) for p in sealed_log.verify().problems] == [
        ("r1", 6, "run.finished closes the chain at seq 6, but follows seq 5 (events moved or removed)")]


def test_cli_verify_exits_1_and_names_the_event(sealed_log):
    tamper(sealed_log, "UPDATE events SET step = 99 WHERE seq = 5")
    result = verify_cli(sealed_log)
    assert result.exit_code == 1
    assert "BROKEN run r1, seq 5" in result.output


def test_verify_writes_a_run_id_from_the_log_out_not_obeyed(sealed_log):
    """A log from elsewhere names its runs as it likes: `log verify`, run on exactly such a log,
    shows an escape sequence or bidi override in a run id written out."""
    tamper(sealed_log, "UPDATE events SET run_id = 'evil\x1b]0;PWNED\x07\u202e' WHERE run_id = 'r1'")
    result = verify_cli(sealed_log)
    assert result.exit_code == 1
    assert "BROKEN run evil\\x1b]0;PWNED\\x07\\u202e" in result.stdout, result.stdout
    assert not {"\x1b", "\x07", "\u202e"} & set(result.output)


def test_cut_off_tail_of_a_sealed_run_is_named(tmp_path):
    log = EventLog(tmp_path / "tail.duckdb")
    log.append("r1", gates(0, 99) + [finished()])
    log.seal()
    tamper(log, "DELETE FROM events WHERE seq > 60")  # the last 40 events; what is left chains perfectly
    result = verify_cli(log)
    assert result.exit_code == 1
    assert result.output.splitlines()[0] == (
        "BROKEN run r1, seq 61..100: missing: cut-off tail (the log committed this run up to seq 100)"
    )


def record_streams(log: EventLog) -> None:
    """What `dataset export` and `eviscene import` write: streams of records, no run.finished."""
    log.append("dataset-1", [EventDraft(DatasetExported(out_dir="/tmp/ds", manifest={"rows": 3}))])
    log.append("import-1", [EventDraft(ArtifactImported(kind="seed_trace", path=f"t{i}.json", sha256=f"{i:064x}")) for i in range(3)])


def test_a_dataset_export_and_an_import_are_complete_without_run_finished_and_counted_as_streams_not_runs(tmp_path):
    log = EventLog(tmp_path / "records.duckdb")
    log.append("r1", gates(0, 6) + [finished()])
    record_streams(log)
    log.append("import-2", [EventDraft(ArtifactImported(kind="case_split", path="split.jsonl", sha256="f" * 64))])
    # r1: 7 events; dataset-1: 1; import-1: 3; import-2: 1.
    assert verify_cli(log).output == "ok: 1 run(s), 2 import stream(s), 1 export stream(s), 12 events, every chain intact and complete\n"
    log.seal()
    report = log.verify()
    assert report.ok and not report.unfinished
    assert (report.runs, report.imports, report.exports, report.events) == (1, 2, 1, 12)


def test_a_cut_off_record_stream_is_still_named(tmp_path):
    log = EventLog(tmp_path / "records.duckdb")
    record_streams(log)
    log.seal()
    tamper(log, "DELETE FROM events WHERE run_id = 'import-1' AND seq = 3")
    assert verify_cli(log).output.splitlines()[0] == (
        "BROKEN run import-1, seq 3..3: missing: cut-off tail (the log committed this run up to seq 3)"
    )


def import_run_dir(log: EventLog, root) -> str:
    """`eviscene import` of a run directory of four files: its source record (seq 1, `rows`: 4)
    and one event per file (seq 2..5), sealed."""
    root.mkdir()
    (root / "run_manifest.json").write_text('{"run_id": "seed"}')
    for name in ("a.txt", "b.txt", "c.txt"):
        (root / name).write_text(name)
    return import_path(log, root).import_id


def event_hash_at(log: EventLog, run_id: str, seq: int) -> str:
    return log.sql("SELECT hash FROM events WHERE run_id = ? AND seq = ?", [run_id, seq])["hash"][0].as_py()


def test_an_import_cut_down_with_its_commit_records_is_named_by_its_source_record(tmp_path):
    """Deleting an import's file events and the stream's sealed records leaves a chain that
    agrees with every record left; the source record (inside the chain) still counts the files."""
    log = EventLog(tmp_path / "records.duckdb")
    stream = import_run_dir(log, tmp_path / "run")
    assert verify_cli(log).output == "ok: 0 run(s), 1 import stream(s), 5 events, every chain intact and complete\n"
    tamper(log, f"DELETE FROM events WHERE run_id = '{stream}' AND seq > 1")
    tamper(log, f"DELETE FROM sealed_segments WHERE run_id = '{stream}'")
    result = verify_cli(log)
    assert (result.exit_code, result.output.splitlines()[0]) == (1, (
        f"BROKEN run {stream}, seq 2..5: missing: its first event announces 4 file(s), the log holds 0 "
        "(cut off after seq 1; an interrupted import is finished by importing its source again)"
    ))


def test_an_import_whose_sealed_record_was_moved_back_to_its_cut_tail_is_named(tmp_path):
    log = EventLog(tmp_path / "records.duckdb")
    stream = import_run_dir(log, tmp_path / "run")
    tamper(log, f"DELETE FROM events WHERE run_id = '{stream}' AND seq > 2")
    tamper(log, f"UPDATE sealed_segments SET last_seq = 2, last_hash = '{event_hash_at(log, stream, 2)}' WHERE run_id = '{stream}'")
    assert [str(p) for p in log.verify().problems] == [
        (f"run {stream}, seq 3..5: missing: its first event announces 4 file(s), the log holds 1 "
         "(cut off after seq 2; an interrupted import is finished by importing its source again)")
    ]


def test_a_dataset_export_stream_holding_more_than_its_one_event_is_named(tmp_path):
    log = EventLog(tmp_path / "records.duckdb")
    log.append("dataset-1", [EventDraft(DatasetExported(out_dir="/tmp/ds", manifest={"rows": 3}))] + gates(0, 2))
    assert [str(p) for p in log.verify().problems] == [
        "run dataset-1, seq 2..3: its first event announces 0 event(s) after it, the log holds 2 (events past seq 1)"
    ]


def test_an_import_cut_down_in_a_parquet_export_is_named(tmp_path):
    """A `log export-parquet` folder has no sealed records: its file names hold each stream's end."""
    log = EventLog(tmp_path / "records.duckdb")
    stream = import_run_dir(log, tmp_path / "run")
    out = tmp_path / "history"
    assert CliRunner().invoke(cli, ["--db", str(log.path), "log", "export-parquet", str(out)]).exit_code == 0
    [path] = (out / "events").glob(f"*{stream}*/*.parquet")
    table = pq.read_table(path)
    pq.write_table(table.filter(pc.less_equal(table.column("seq"), 3)), path)
    result = CliRunner().invoke(cli, ["--db", str(out), "log", "verify"])
    assert (result.exit_code, result.output.splitlines()[0]) == (1, (
        f"BROKEN run {stream}, seq 4..5: missing: cut-off tail (its export file's name says it ends at seq 5)"
    ))


def test_an_eval_run_that_stopped_early_is_still_unfinished(tmp_path):
    log = EventLog(tmp_path / "records.duckdb")
    log.append("r1", gates(0, 6))
    record_streams(log)
    assert [n.run_id for n in log.verify().unfinished] == ["r1"]
    assert verify_cli(log).stderr == (
        "incomplete: 1 unfinished run(s) in 1 run(s), 1 import stream(s), 1 export stream(s), 10 events; every chain intact\n"
    )


def test_an_unfinished_run_in_a_parquet_export_is_not_sent_to_a_resume_the_folder_refuses(tmp_path):
    log = EventLog(tmp_path / "records.duckdb")
    log.append("r1", gates(0, 6))
    out = tmp_path / "history"
    assert CliRunner().invoke(cli, ["--db", str(log.path), "log", "export-parquet", str(out)]).exit_code == 0
    result = CliRunner().invoke(cli, ["--db", str(out), "log", "verify"])
    assert (result.exit_code, result.stdout) == (1, (
        "UNFINISHED run r1: unfinished: no run.finished after seq 6 (1..6 verified) and no writer holds it; read only here: "
        "finish the run in its log, then `eviscene log export-parquet` it again\n"
    ))


def exported_run(tmp_path, run_id: str = "r1"):
    """`run_id` (seq 1..7, the last run.finished) exported by `log export-parquet`; its file's path."""
    log = EventLog(tmp_path / "records.duckdb")
    log.append(run_id, gates(0, 6) + [finished()])
    out = tmp_path / "history"
    assert CliRunner().invoke(cli, ["--db", str(log.path), "log", "export-parquet", str(out)]).exit_code == 0
    [path] = (out / "events").glob("run_id=*/events-*.parquet")
    return out, path


@pytest.mark.parametrize("run_id", ["r1", "shard:1+a=b@c"])  # the folder name percent-encodes the last one
def test_a_run_cut_short_in_a_parquet_export_is_broken_by_its_file_name_not_unfinished(tmp_path, run_id):
    out, path = exported_run(tmp_path, run_id)
    assert path.name.startswith("events-000000000007-")
    table = pq.read_table(path)
    pq.write_table(table.slice(0, 4), path)  # the file keeps its name: it ends at seq 7
    result = CliRunner().invoke(cli, ["--db", str(out), "log", "verify"])
    assert (result.exit_code, result.output) == (1, (
        f"BROKEN run {run_id}, seq 5..7: missing: cut-off tail (its export file's name says it ends at seq 7)\n"
        "1 problem(s) in 1 run(s), 4 events\n"
    ))


def test_a_parquet_export_s_last_event_must_carry_the_hash_its_file_name_holds(tmp_path):
    out, path = exported_run(tmp_path)
    path.rename(path.with_name("events-000000000007-0123456789abcdef.parquet"))  # another chain's head
    problems = [str(p) for p in EventLog(out).verify().problems]
    assert problems == ["run r1, seq 7..7: the last event's hash differs from the one its export file's name holds"]


def test_a_parquet_export_file_grown_past_its_name_is_named(tmp_path):
    out, path = exported_run(tmp_path)
    path.rename(path.with_name("events-000000000005-" + path.name.split("-")[2]))
    problems = [str(p) for p in EventLog(out).verify().problems]
    assert problems == ["run r1, seq 6..7: events past the end its export file's name holds (seq 5)"]


def test_a_parquet_export_emptied_of_a_run_s_events_is_named(tmp_path):
    out, path = exported_run(tmp_path)
    table = pq.read_table(path)
    pq.write_table(table.slice(0, 0), path)
    result = CliRunner().invoke(cli, ["--db", str(out), "log", "verify"])
    assert (result.exit_code, result.output) == (1, (
        "BROKEN run r1, seq 1..7: missing: cut-off tail (its export file's name says it ends at seq 7)\n"
        "1 problem(s) in 1 run(s), 0 events\n"
    ))


def test_archive_rows_outside_every_sealed_record_are_named(tmp_path):
    log = EventLog(tmp_path / "records.duckdb")
    write_batches(log, "r1", [gates(0, 4), gates(4, 7) + [finished()]])
    log.seal()
    tamper(log, "DELETE FROM sealed_segments WHERE file_name = 'events-000000000001-000000000004.parquet'")
    problems = log.verify().problems
    assert [str(p) for p in problems] == ["run r1, seq 1..4: in the archive but in no sealed-segment record"]


def test_a_sealed_record_that_moved_is_named(tmp_path):
    log = EventLog(tmp_path / "records.duckdb")
    write_batches(log, "r1", [gates(0, 4), gates(4, 7) + [finished()]])
    log.seal()
    tamper(log, "UPDATE sealed_segments SET first_seq = 4, last_seq = 7 WHERE file_name = 'events-000000000005-000000000008.parquet'")
    assert [str(p) for p in log.verify().problems] == ["run r1, seq 8..8: in the archive but in no sealed-segment record"]


def test_deleted_last_live_segment_is_named_with_its_range(live_log):
    segments(live_log)[-1].unlink()
    result = verify_cli(live_log)
    assert result.exit_code == 1
    assert result.output.splitlines()[0] == "BROKEN run r1, seq 9..12: segment events-000000000009-000000000012.parquet is missing"


def test_deleted_middle_live_segment_is_named(live_log):
    segments(live_log)[1].unlink()
    assert [str(p) for p in live_log.verify().problems] == [
        "run r1, seq 9 (ev-c17935731361e4434934f4c8b0f7bea1): seq 5..8 missing (deleted events)",
        "run r1, seq 5..8: segment events-000000000005-000000000008.parquet is missing",
    ]


def test_altered_live_segment_is_named(live_log):
    path = segments(live_log)[0]
    table = pq.read_table(path)
    pq.write_table(table.slice(0, 3), path)  # the segment's last event cut out of the file
    problems = live_log.verify().problems
    assert [str(p) for p in problems][-1] == "run r1, seq 1..4: segment events-000000000001-000000000004.parquet was altered (sha256 differs from its manifest line)"


def test_reordered_live_segments_are_caught(live_log):
    first, second, _ = segments(live_log)
    swap = first.with_suffix(".swap")
    first.rename(swap)
    second.rename(first)
    swap.rename(second)
    assert [str(p) for p in live_log.verify().problems] == [
        "run r1, seq 1..4: segment events-000000000001-000000000004.parquet was altered (sha256 differs from its manifest line)"
    ]


def test_truncated_live_segment_is_named(live_log):
    path = segments(live_log)[2]
    path.write_bytes(path.read_bytes()[:-200])
    result = verify_cli(live_log)
    assert result.exit_code == 1
    assert result.output.splitlines()[0] == (
        "BROKEN run r1, seq 9..12: segment events-000000000009-000000000012.parquet was altered (sha256 differs from its manifest line)"
    )


def test_a_tail_cut_with_its_manifest_lines_shows_as_an_unfinished_run(live_log):
    folder = run_folder(live_log)
    segments(live_log)[-1].unlink()
    lines = (folder / "segments.jsonl").read_text().splitlines(keepends=True)
    (folder / "segments.jsonl").write_text("".join(lines[:-1]))
    report = live_log.verify()
    assert report.intact and not report.ok
    assert [str(n) for n in report.unfinished] == [
        "run r1: unfinished: no run.finished after seq 8 (1..8 verified) and no writer holds it; "
        f"an interrupted run: `eviscene --db {live_log.path} eval resume r1` finishes it"
    ]
    result = verify_cli(live_log)
    assert result.exit_code == 1 and result.output.startswith("UNFINISHED run r1: unfinished: no run.finished after seq 8")
    # For a script: one JSON object on stdout (there was no machine-readable output), the same exit
    as_json = CliRunner().invoke(cli, ["--db", str(live_log.path), "log", "verify", "--format", "json"])
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout) == {
        "ok": False, "intact": True, "runs": 1, "imports": 0, "exports": 0, "events": 8, "problems": [], "running": [],
        "unfinished": [{"kind": "unfinished", "run_id": "r1", "verified_seq": 8, "unrecorded": False, "note": report.unfinished[0].note,
                        "message": str(report.unfinished[0])}],
    }


def test_a_broken_run_is_a_problem_with_its_fields_in_json(live_log):
    path = segments(live_log)[2]
    path.write_bytes(path.read_bytes()[:-200])
    as_json = CliRunner().invoke(cli, ["--db", str(live_log.path), "log", "verify", "--format", "json"])
    assert as_json.exit_code == 1
    problem = json.loads(as_json.stdout)["problems"][0]
    assert problem == {"kind": "range", "run_id": "r1", "first_seq": 9, "last_seq": 12, "problem": problem["problem"],
                       "message": "run r1, seq 9..12: segment events-000000000009-000000000012.parquet was altered "
                                  "(sha256 differs from its manifest line)"}


def test_deleted_manifest_is_named(live_log):
    (run_folder(live_log) / "segments.jsonl").unlink()
    assert [str(p) for p in live_log.verify().problems] == ["run r1, seq 1..12: r1/segments.jsonl is missing: its segments are unrecorded"]


def live_files(log: EventLog) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in run_folder(log).iterdir()}


def test_seal_and_resume_refuse_segments_whose_manifest_was_deleted(live_log):
    """The first holder of a run's lock writes its manifest before any segment: segments
    without one were left by a deletion, not a crash, and nothing may be adopted or removed."""
    (run_folder(live_log) / "segments.jsonl").unlink()
    before = live_files(live_log)
    result = CliRunner().invoke(cli, ["--db", str(live_log.path), "log", "seal", "r1"])
    assert result.exit_code == 2
    assert result.output == (
        f"Error: {run_folder(live_log) / 'segments.jsonl'} is missing beside 3 segment file(s) "
        "(events-000000000001-000000000004.parquet, …): the manifest was deleted; nothing was changed (restore it, then run this again)\n"
    )
    with pytest.raises(LogIntegrityError, match="the manifest was deleted"):
        write_batches(live_log, "r1", [gates(11, 12)])  # a resume's writer
    assert live_files(live_log) == before and not live_log.path.exists()


def test_a_segment_stranded_past_a_removed_one_is_named_and_kept(live_log):
    """The middle segment and the manifest lines from it on removed: the last segment no
    longer continues the recorded chain. Before, a seal adopted what chained and deleted it."""
    folder = run_folder(live_log)
    segments(live_log)[1].unlink()
    lines = (folder / "segments.jsonl").read_text().splitlines(keepends=True)
    (folder / "segments.jsonl").write_text(lines[0])
    stranded = "segment events-000000000009-000000000012.parquet (seq 9..12) is on disk but in no manifest line, " \
               "and does not continue the chain after seq 4: a segment before it was removed"
    assert [str(p) for p in live_log.verify().problems] == [f"run r1, seq 9..12: {stranded}"]
    before = live_files(live_log)
    with pytest.raises(LogIntegrityError, match="does not continue the chain after seq 4"):
        live_log.seal(["r1"])
    with pytest.raises(LogIntegrityError, match="does not continue the chain after seq 4"):
        write_batches(live_log, "r1", [gates(11, 12)])
    assert live_files(live_log) == before


def test_a_killed_writer_s_unrecorded_last_segment_is_still_adopted(live_log):
    folder = run_folder(live_log)
    lines = (folder / "segments.jsonl").read_text().splitlines(keepends=True)
    (folder / "segments.jsonl").write_text("".join(lines[:-1]))  # killed before the last line
    assert live_log.seal(["r1"]) == ["r1"]
    assert live_log.verify().ok and live_log.sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 12}]


@pytest.mark.parametrize("field, value, said", [
    ("rows", "nine", "rows 'nine'"), ("first_seq", "5", "first_seq '5'"), ("rows", True, "rows True"),
    ("sha256", None, "sha256 None"), ("replaces", [1], "replaces [1]"),
])
def test_a_manifest_line_with_a_field_of_the_wrong_type_is_named_as_malformed(live_log, field, value, said):
    """A `rows` of "nine" was read on, and refused for the wrong reason ("… is not the name of a
    segment in this folder"), or not at all."""
    manifest = run_folder(live_log) / "segments.jsonl"
    lines = manifest.read_text().splitlines()
    second = json.loads(lines[1])
    manifest.write_text("\n".join([lines[0], json.dumps({**second, field: value}), *lines[2:]]) + "\n")
    malformed = f"{manifest}:2: malformed segment manifest line ({said} is not what a writer records)"
    result = verify_cli(live_log)
    assert (result.exit_code, result.output) == (1, f"BROKEN run r1: {malformed}\n1 problem(s) in 1 run(s), 0 events\n")
    with pytest.raises(LogIntegrityError, match=re.escape(malformed)):
        live_log.sql("SELECT count(*) FROM events")


def test_a_manifest_that_lists_rows_twice_is_refused_by_readers(live_log):
    folder = run_folder(live_log)
    manifest = folder / "segments.jsonl"
    lines = manifest.read_text().splitlines(keepends=True)
    manifest.write_text("".join(lines) + lines[0])  # a line repeated
    with pytest.raises(LogIntegrityError, match=rf"segments.jsonl:{len(lines) + 1}: events-000000000001-000000000004.parquet is listed again \(first on line 1\)"):
        live_log.sql("SELECT count(*) FROM events")
    # A segment copied under another name, with a line for it.
    copy = folder / "events-000000000005-000000000007.parquet"
    copy.write_bytes(segments(live_log)[1].read_bytes())
    [second] = [json.loads(line) for line in lines if json.loads(line).get("first_seq") == 5]
    line = {**second, "file": copy.name}
    manifest.write_text("".join(lines) + json.dumps(line) + "\n")
    result = CliRunner().invoke(cli, ["--db", str(live_log.path), "runs"])
    assert result.exit_code == 2
    assert "events-000000000005-000000000007.parquet and events-000000000005-000000000008.parquet both hold seq 5" in result.output


def test_a_manifest_line_naming_a_file_outside_its_folder_is_refused_and_the_file_not_read(live_log, tmp_path):
    """A log someone hands you whose manifest names `../../elsewhere/events-….parquet`: its
    rows would be read, allowed to the SQL sandbox and taken into the archive by a seal. `log
    verify` refused it too, exit 2 with no report (no JSON under --format json): a script read
    the edit as its own mistake in calling it."""
    folder = run_folder(live_log)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    last = segments(live_log)[-1]
    last.rename(outside / last.name)
    manifest = folder / "segments.jsonl"
    manifest.write_text(manifest.read_text().replace(f'"file":"{last.name}"', f'"file":"../../elsewhere/{last.name}"'))
    refused = f"{manifest}:3: '../../elsewhere/{last.name}' is not the name of a segment in this folder"
    for command in (["sql", "SELECT count(*) FROM events"], ["log", "seal"]):
        result = CliRunner().invoke(cli, ["--db", str(live_log.path), *command])
        assert result.exit_code == 2 and refused in result.output, result.output
    assert not live_log.path.exists()
    # `log verify` reports it as what it is, a log that does not verify (exit 1), not a mistake in the command (exit 2)
    assert (verify_cli(live_log).exit_code, verify_cli(live_log).output) == (1, f"BROKEN run r1: {refused}\n1 problem(s) in 1 run(s), 0 events\n")
    (report,) = [json.loads(verify_cli(live_log, "--format", "json").output)]
    assert (report["ok"], [p["problem"] for p in report["problems"]]) == (False, [refused])


def test_a_run_whose_writer_holds_the_lock_is_verified_up_to_its_last_commit(tmp_path):
    log = EventLog(tmp_path / "running.duckdb")
    write_batches(log, "r1", [gates(0, 5)])
    lock = RunLock(run_folder(log) / "writer.lock", "r1").acquire()
    try:
        report = log.verify()
        assert report.ok and not report.unfinished
        assert [n.verified_seq for n in report.running] == [5]
        result = verify_cli(log)
        assert result.exit_code == 0 and "RUNNING run r1: running (pid " in result.output
        assert "verified up to seq 5" in result.output
    finally:
        lock.release()
    assert [n.verified_seq for n in log.verify().unfinished] == [5]


def test_a_held_run_s_deleted_committed_segment_is_named(tmp_path):
    """A lock held (by the run's writer or any process) lets only what is past the last commit
    be in flight: a committed segment that is gone is named, exit 1, not `running … ok`."""
    log = EventLog(tmp_path / "running.duckdb")
    write_batches(log, "r1", [gates(0, 4), gates(4, 8)])
    segments(log)[-1].unlink()
    lock = RunLock(run_folder(log) / "writer.lock", "r1").acquire()
    try:
        result = verify_cli(log)
        assert (result.exit_code, result.output.splitlines()) == (
            1, ["BROKEN run r1, seq 5..8: segment events-000000000005-000000000008.parquet is missing", "1 problem(s) in 1 run(s), 4 events"]
        )
    finally:
        lock.release()


def test_a_lock_held_by_another_process_than_the_dead_pid_its_file_names_is_not_named_by_that_pid(tmp_path):
    """A killed writer's pid stays in the lock file; a `flock` from a shell holding the lock
    now writes nothing there."""
    log = EventLog(tmp_path / "running.duckdb")
    write_batches(log, "r1", [gates(0, 4)])
    dead = subprocess.Popen(["true"])
    dead.wait()
    path = run_folder(log) / "writer.lock"
    path.write_text(f"pid {dead.pid} (eviscene eval)")
    with path.open("rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        result = verify_cli(log)
        with pytest.raises(LogLockedError, match="run r1 is being written by an unknown process; wait for it"):
            RunLock(path, "r1").acquire()
    assert (result.exit_code, result.output) == (
        0, "RUNNING run r1: running (an unknown process), verified up to seq 4\nok: 1 run(s), 4 events, every chain intact and complete\n"
    )
    # A pid on another host (a log on a shared filesystem) is named: it cannot be looked up here.
    path.write_text(f"pid {dead.pid} (eviscene eval on node-17.cluster)")
    with path.open("rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(LogLockedError, match=rf"run r1 is being written by pid {dead.pid} \(eviscene eval on node-17.cluster\)"):
            RunLock(path, "r1").acquire()


def archive_state(log: EventLog):
    return log.path.read_bytes() if log.path.exists() else None


def test_seal_refuses_a_run_with_a_missing_segment_and_leaves_the_archive_unchanged(live_log):
    live_log.append("other", gates(0, 2) + [finished()])
    live_log.seal(["other"])
    before = archive_state(live_log)
    segments(live_log)[1].unlink()
    result = CliRunner().invoke(cli, ["--db", str(live_log.path), "log", "seal", "r1"])
    assert result.exit_code == 2
    assert result.output == (
        "Error: run r1, seq 5..8 not sealed: segment events-000000000005-000000000008.parquet is missing; "
        "the archive is unchanged\n"
    )
    assert archive_state(live_log) == before
    assert run_folder(live_log).is_dir()


def test_seal_refuses_an_altered_segment_and_a_broken_chain(live_log, tmp_path):
    copy = EventLog(tmp_path / "copy.duckdb")
    shutil.copytree(run_folder(live_log).parent, copy.path.with_name("copy.duckdb.live"))
    path = segments(live_log)[1]
    table = pq.read_table(path)
    pq.write_table(table, path, compression="snappy")  # same rows, other bytes
    with pytest.raises(LogIntegrityError, match="seq 5..8 not sealed: segment events-000000000005-000000000008.parquet was altered"):
        live_log.seal(["r1"])
    # A segment rewritten with its manifest line updated still breaks the chain: refused.
    folder = run_folder(copy)
    path = folder / "events-000000000005-000000000008.parquet"
    table = pq.read_table(path)
    pq.write_table(table.set_column(8, "payload", pa.array(table.column("payload").to_pylist()[:3] + ['{"type":"gate.decided","gate":"g","subject":"x","passed":true,"reasons":[]}'])), path)
    from eviscene.store.manifest import file_sha256

    lines = [json.loads(line) for line in (folder / "segments.jsonl").read_text().splitlines()]
    lines = [{**line, "sha256": file_sha256(path)} if line["file"] == path.name else line for line in lines]
    (folder / "segments.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(LogIntegrityError, match=r"run r1, seq 8..8 not sealed: hash does not match"):
        copy.seal(["r1"])
    assert not copy.path.exists()


def test_seal_refuses_a_segment_holding_another_runs_events(live_log):
    """Seal walks a run's segments a run at a time (`ordered_events`), so another run's chain,
    forged into this run's last segment with its manifest line to match, walked as a chain of
    its own: the seal passed and took it into the archive as that run's, with no record of it.
    Refused: a run's segments hold its own events only."""
    from eviscene.store.manifest import file_sha256

    write_batches(live_log, "y", [gates(0, 3) + [finished()]])
    folder, path = run_folder(live_log), segments(live_log)[-1]
    pq.write_table(pa.concat_tables([pq.read_table(path), pq.read_table(segments(live_log, "y")[0])]), path)
    lines = [json.loads(line) for line in (folder / "segments.jsonl").read_text().splitlines()]
    lines = [{**line, "sha256": file_sha256(path), "rows": line["rows"] + 4} if line["file"] == path.name else line for line in lines]
    (folder / "segments.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    shutil.rmtree(run_folder(live_log, "y"))
    assert [str(p) for p in live_log.verify().problems] == ["run y: its events are in no segment of its own (another run's segment holds them)"]
    before = archive_state(live_log)
    with pytest.raises(LogIntegrityError, match="^run r1 not sealed: its segments hold events of another run: 'y'; the archive is unchanged$"):
        live_log.seal(["r1"])
    assert archive_state(live_log) == before and folder.is_dir()


def test_the_walk_lifts_its_memory_bound_for_payloads_too_large_for_it(tmp_path, monkeypatch):
    """Held to WALK_MEMORY_LIMIT, DuckDB cannot sort (nor even read: a Parquet segment's row
    group is read whole) a slice of large payloads: `log verify`, seal and every export's
    check failed with "Out of Memory Error" on a legitimate log (3,000 events of 200 KiB at
    512 MiB). The walk lifts the bound then, and finds what it finds unbounded."""
    import eviscene.store.verify as verify

    monkeypatch.setattr(verify, "WALK_MEMORY_LIMIT", 16 * 2**20)
    log = EventLog(tmp_path / "log.duckdb")
    log.append("r1", [EventDraft(GateDecided(gate="g", subject=f"{i:03d}" + "x" * 2**20, passed=True), episode_id="e", attempt=1, step=i)
                      for i in range(40)] + [finished()])  # 40 MiB of payloads, live
    assert log.verify().ok
    log.seal()
    assert log.verify().ok
    tamper(log, "UPDATE events SET payload = '{\"gate\":\"g\",\"subject\":\"forged\",\"passed\":true}' WHERE seq = 17")
    assert [f"seq {p.seq}: {p.problem}" for p in log.verify().problems] == ["seq 17: hash does not match the event's content (edited event)"]


def test_seal_of_an_unknown_run_is_an_error(sealed_log):
    for run_id in ["bogus", "r1-typo"]:
        result = CliRunner().invoke(cli, ["--db", str(sealed_log.path), "log", "seal", run_id])
        assert result.exit_code == 2 and result.output == f"Error: no run '{run_id}' in {sealed_log.path}; `eviscene --db {sealed_log.path} runs` lists the runs\n"
    result = CliRunner().invoke(cli, ["--db", str(sealed_log.path), "log", "seal", "r"])  # the sealed run is suggested
    assert result.exit_code == 2 and result.output == (
        f"Error: no run 'r' in {sealed_log.path} (did you mean 'r1'?); `eviscene --db {sealed_log.path} runs` lists the runs\n")
    result = CliRunner().invoke(cli, ["--db", str(sealed_log.path), "log", "seal", "r1"])  # sealed already
    assert result.exit_code == 0 and result.output == "sealed 0 run(s); sealed already: r1\n"


def test_merge_refuses_a_tampered_shard_before_taking_anything_in(live_log, tmp_path):
    target = EventLog(tmp_path / "all.duckdb")
    target.append("mine", gates(0, 2) + [finished()])
    target.seal()
    before = archive_state(target)
    path = segments(live_log)[0]
    pq.write_table(pq.read_table(path), path, compression="snappy")
    result = CliRunner().invoke(cli, ["--db", str(target.path), "log", "merge", str(live_log.path)])
    assert result.exit_code == 2
    assert result.output == (
        f"Error: {live_log.path} not merged: run r1, seq 1..4: segment events-000000000001-000000000004.parquet "
        "was altered (sha256 differs from its manifest line); nothing was taken in\n"
    )
    assert archive_state(target) == before


def test_merge_refuses_a_run_holding_an_event_id_of_another_run_here(tmp_path):
    """A log whose run reuses an event id this log holds in another run verifies on its own
    (the id is only hashed), but merge skipped that event as taken already: `merged 4 events`,
    then `log verify` found the run broken at the gap it left."""
    target = EventLog(tmp_path / "all.duckdb")
    target.append("mine", gates(0, 2) + [finished()])
    target.seal()
    taken = target.sql("SELECT event_id FROM events WHERE run_id = 'mine' AND seq = 2")["event_id"][0].as_py()
    forged = EventLog(tmp_path / "forged.duckdb")
    drafts = gates(0, 3) + [finished()]
    drafts[1].event_id = taken
    forged.append("theirs", drafts)
    assert forged.verify().ok
    before = archive_state(target)
    result = CliRunner().invoke(cli, ["--db", str(target.path), "log", "merge", str(forged.path)])
    assert (result.exit_code, result.output) == (2, (
        f"Error: {forged.path} not merged: run theirs, seq 2 ({taken}): {target.path} holds that event id in run mine, "
        "seq 2; nothing was taken in\n"
    ))
    assert archive_state(target) == before and target.verify().ok


def test_merged_runs_bring_their_segment_records(live_log, tmp_path):
    target = EventLog(tmp_path / "all.duckdb")
    assert target.merge(live_log.path).events == 12
    assert target.verify().ok
    tamper(target, "DELETE FROM events WHERE run_id = 'r1' AND seq > 8")
    assert [str(p) for p in target.verify().problems] == [
        "run r1, seq 9..12: missing: cut-off tail (the log committed this run up to seq 12)"
    ]


def test_events_stored_twice_are_named_as_seq_ranges(live_log, tmp_path):
    """A live folder restored after its seal, its sealed-segment records deleted, is read
    beside the archive: each range of duplicated events is one line, not one line an event."""
    folder = run_folder(live_log)
    shutil.copytree(folder, tmp_path / "before-seal")
    live_log.seal()
    shutil.copytree(tmp_path / "before-seal", folder)
    (folder / "events-000000000005-000000000008.parquet").unlink()
    tamper(live_log, "DELETE FROM sealed_segments")
    lines = [str(p) for p in live_log.verify().problems]
    assert "run r1, seq 1..4: each of these 4 events stored 2 times" in lines
    assert "run r1, seq 9..12: each of these 4 events stored 2 times" in lines
    assert not [line for line in lines if "stored 2 times" in line and "each of these" not in line]


def test_a_seal_removes_only_the_logs_own_files_and_folders(tmp_path):
    """The live folder is the log's, but a file someone put in a run's folder, a backup tool's
    `.snapshot` folder or a folder of notes named as a run could be is not: the seal used to
    stop at `.snapshot` (`invalid run id`) and delete every file of the others."""
    log = EventLog(tmp_path / "log.duckdb")
    log.append("r1", gates(0, 3) + [finished()])
    live = run_folder(log)
    (live / "notes.txt").write_text("mine")
    backup = live.parent / ".snapshot"
    backup.mkdir()
    (backup / "copy").write_text("a backup")
    scratch = live.parent / "scratch"
    scratch.mkdir()
    (scratch / "todo.txt").write_text("to do")
    assert log.seal() == ["r1"]
    assert [p.name for p in live.iterdir()] == ["notes.txt"] and (live / "notes.txt").read_text() == "mine"
    assert (backup / "copy").read_text() == "a backup"
    assert [p.name for p in scratch.iterdir()] == ["todo.txt"] and (scratch / "todo.txt").read_text() == "to do"
    result = verify_cli(log)
    assert result.exit_code == 0 and "ok: 1 run(s), 4 events" in result.output, result.output
    assert log.sql("SELECT count(*) AS n FROM events")["n"].to_pylist() == [4]


def test_a_writer_through_another_name_of_the_log_holds_the_run_for_both_names(tmp_path):
    """The run lock lives beside the name the log is opened by: a writer through a hard link
    held a lock of its own, and two writers of one run wrote side by side. A writer, a seal or
    a resume through either name now sees the other's, named."""
    log = EventLog(tmp_path / "log.duckdb")
    log.append("done", [EventDraft(GateDecided(gate="g", subject="s", passed=True))])
    log.seal(["done"])
    alias = tmp_path / "alias.duckdb"
    os.link(log.path, alias)
    held = RunLock(tmp_path / "alias.duckdb.live" / "R" / "writer.lock", "R").acquire()
    try:
        with pytest.raises(LogLockedError, match=rf"^run R is being written by pid {os.getpid()} \(.*\) through {re.escape(str(alias))}, another name of this log"):
            log.append("R", [EventDraft(GateDecided(gate="g", subject="a second writer", passed=True))])
    finally:
        held.release()
    log.append("R", [EventDraft(GateDecided(gate="g", subject="once it is free", passed=True))])
    assert log.sql("SELECT count(*) AS n FROM events WHERE run_id = 'R'").to_pylist() == [{"n": 1}]


def test_a_live_segment_named_as_a_sealed_one_but_another_is_kept_and_reported_not_deleted(tmp_path):
    """Two writers of one run through two paths to one log (a hard link) each wrote a first
    segment of the same name. The seal skipped the second as sealed already, by its name, and
    deleted it with the folder: a whole execution lost, verify saying ok. Now the seal refuses
    and keeps it, and verify names it."""
    log = EventLog(tmp_path / "log.duckdb")
    log.append("R", [EventDraft(GateDecided(gate="g", subject="one writer", passed=True))])
    assert log.seal(["R"]) == ["R"]
    other = EventLog(tmp_path / "other.duckdb")  # the second writer's segments, moved to where the first's were
    other.append("R", [EventDraft(GateDecided(gate="g", subject="the other writer", passed=True))])
    live = tmp_path / "log.duckdb.live" / "R"
    shutil.move(tmp_path / "other.duckdb.live" / "R", live)
    [segment] = [p.name for p in live.iterdir() if p.name.startswith("events-")]
    with pytest.raises(LogIntegrityError, match=f"^run R not sealed: live segment {segment} is not the segment sealed under its name"):
        log.seal(["R"])
    assert (live / segment).exists()
    problems = [str(p) for p in log.verify().problems]
    assert len(problems) == 1 and f"live segment {segment} is not the segment sealed under its name" in problems[0], problems


@pytest.mark.parametrize("kind", ["events", "blobs"])
def test_a_live_segment_recorded_as_sealed_whose_rows_the_archive_lacks_is_kept(tmp_path, kind):
    """A sealed_segments record for a live segment whose rows the archive does not hold (a
    record made by hand, or its rows deleted): verify named the cut-off tail, yet seal skipped
    the segment as sealed and deleted it with the folder, exit 0: the only copy of the run's
    last events gone. Now the seal refuses and keeps it."""
    log = EventLog(tmp_path / "log.duckdb")
    log.append("A", [EventDraft(GateDecided(gate="g", subject="sealed run", passed=True))])
    log.seal(["A"])

    async def live_run() -> None:
        async with log.writer("R", flush_seconds=30) as writer:
            await writer.put_blob(b"a page", "text/plain")
            await writer.emit(EventDraft(GateDecided(gate="g", subject="only copy", passed=True)))
    anyio.run(live_run)
    folder = run_folder(log, "R")
    [entry] = [json.loads(line) for line in (folder / "segments.jsonl").read_text().splitlines()
               if json.loads(line)["file"].startswith(f"{kind}-")]
    con = duckdb.connect(str(log.path))
    con.execute(
        "INSERT INTO sealed_segments (run_id, file_name, rows, sha256, first_seq, last_seq, first_prev_hash, last_hash, sealed_at) "
        "VALUES ('R', ?, ?, ?, ?, ?, ?, ?, now())",
        [entry["file"], entry["rows"], entry["sha256"], entry.get("first_seq"), entry.get("last_seq"),
         entry.get("first_prev_hash"), entry.get("last_hash")])
    con.close()
    before = sorted(p.name for p in folder.iterdir())
    lacking = "seq 1..1" if kind == "events" else "1 of its blobs"
    with pytest.raises(LogIntegrityError, match=f"^run R not sealed: live segment {entry['file']} is recorded as sealed, but the archive lacks {lacking} "):
        log.seal(["R"])
    assert sorted(p.name for p in folder.iterdir()) == before  # kept: deleting the record lets every reader see it again
    if kind == "events":  # verify named it already (a cut-off tail); a blob no event cites is no problem of the log's
        assert [p.run_id for p in log.verify().problems if hasattr(p, "run_id")] == ["R"]


@pytest.mark.parametrize("damage", ["flip a byte of its header block", "cut it short"])
def test_a_damaged_archive_is_a_log_that_does_not_verify_exit_1(tmp_path, damage):
    """DuckDB's own checks of the archive file (a block's checksum, a file cut short) ended
    `log verify` as a user error, exit 2; they are a log that does not verify."""
    log = EventLog(tmp_path / "log.duckdb")
    log.append("R", [EventDraft(GateDecided(gate="g", subject=f"event {i}", passed=True)) for i in range(2000)])
    log.seal(["R"])
    data = bytearray(log.path.read_bytes())
    if damage == "cut it short":
        data = data[: len(data) // 2]
    else:
        data[100] ^= 0xFF
    log.path.write_bytes(bytes(data))
    result = CliRunner().invoke(cli, ["--db", str(log.path), "log", "verify"])
    assert result.exit_code == 1, result.output
    assert result.output.startswith("BROKEN the archive log.duckdb is damaged: ") and "Traceback" not in result.output


def test_an_episode_id_edited_into_the_chains_null_mark_is_named(tmp_path):
    """The chain hashes a NULL episode_id as U+001E: an event's NULL episode_id edited into that
    one-character string hashed the same, and verify said ok. A stored U+001E or U+001F in
    episode_id or type is now an edit verify names; no writer stores one, and a release whose
    case id holds one is refused as it loads."""
    from eviscene.errors import EvisceneError

    log = EventLog(tmp_path / "log.duckdb")
    log.append("R", [EventDraft(GateDecided(gate="g", subject="run-level", passed=True)), finished()])
    log.seal(["R"])
    assert verify_cli(log).exit_code == 0
    con = duckdb.connect(str(log.path))
    con.execute("UPDATE events SET episode_id = chr(30) WHERE run_id = 'R' AND seq = 1")
    con.close()
    [problem] = log.verify().problems
    assert str(problem).startswith("run R, seq 1 (") and str(problem).endswith(
        "episode_id or type holds U+001E or U+001F, which the hash cannot tell from NULL or a field's end (edited event)")
    with pytest.raises(EvisceneError, match="holds U\\+001E or U\\+001F"):
        EventDraft(GateDecided(gate="g", subject="x", passed=True), episode_id="case\x1f1")


def test_a_blob_stored_twice_is_named(tmp_path):
    """An archive whose blobs table was rebuilt without its key, each row in it twice: verify
    said ok while every view that joins on blobs (the gold labels, the policies) counted each
    row twice."""
    log = EventLog(tmp_path / "log.duckdb")

    async def run_with_a_blob() -> None:
        async with log.writer("R") as writer:
            await writer.put_blob(b"a page", "text/plain")
            await writer.emit(finished())
    anyio.run(run_with_a_blob)
    log.seal(["R"])
    assert log.verify().ok
    tamper(log, "CREATE TABLE copied AS SELECT * FROM blobs; DROP TABLE blobs; "
                "CREATE TABLE blobs (sha256 VARCHAR NOT NULL, media_type VARCHAR NOT NULL, size BIGINT NOT NULL, content BLOB NOT NULL); "
                "INSERT INTO blobs SELECT * FROM copied; INSERT INTO blobs SELECT * FROM copied; DROP TABLE copied")
    address = hashlib.sha256(b"a page").hexdigest()
    assert [str(p) for p in log.verify().problems] == [
        f"blob {address}: stored 2 times (every view that joins on blobs counts it 2 times)"
    ]
    assert verify_cli(log).exit_code == 1


@pytest.mark.parametrize("rows_per_batch", [1, 70, 50_000])
@pytest.mark.parametrize("edit, first_break", [
    ("UPDATE events SET payload = '{\"gate\":\"g\",\"subject\":\"forged\",\"passed\":true}' WHERE run_id = 'r1' AND seq = 12",
     "seq 12: hash does not match the event's content (edited event)"),
    ("UPDATE events SET seq = CASE seq WHEN 9 THEN 10 ELSE 9 END WHERE run_id = 'r1' AND seq IN (9, 10)",
     "seq 9: prev_hash does not match the previous event (reordered, inserted or deleted events)"),
    ("DELETE FROM events WHERE run_id = 'r1' AND seq = 15", "seq 16: seq 15..15 missing (deleted events)"),
    ("UPDATE events SET episode_id = chr(30) WHERE run_id = 'r1' AND seq = 7",
     "seq 7: episode_id or type holds U+001E or U+001F, which the hash cannot tell from NULL or a field's end (edited event)"),
    ("UPDATE events SET payload = '{\"gate\":\"g\",\"subject\":\"forged\",\"passed\":true}' WHERE run_id = 'r1' AND seq = 150",
     "seq 150: hash does not match the event's content (edited event)"),
    ("UPDATE events SET payload = '{\"status\":\"completed\"}' WHERE run_id = 'r1' AND type = 'run.finished'",
     "seq 201: hash does not match the event's content (edited event)"),
])
def test_the_walk_names_the_same_first_break_whatever_its_batches(tmp_path, edit, first_break, rows_per_batch):
    """A long run's events are walked a batch at a time where every one continues the chain
    (their fields joined and hashed by Arrow; stretches of 64 events or more), and one by one
    wherever one does not, a run's first event and its run.finished always: which is taken
    where must not change what is found."""
    from eviscene.store.snapshot import open_snapshot
    from eviscene.store.verify import ordered_events, walk_chains

    log = EventLog(tmp_path / "log.duckdb")
    log.append("r1", gates(0, 200) + [finished()])
    log.append("r2", gates(0, 9) + [finished()])
    log.seal()
    heads = {row["run_id"]: (row["seq"], row["hash"]) for row in log.sql(
        "SELECT run_id, max(seq) AS seq, arg_max(hash, seq) AS hash FROM events GROUP BY run_id").to_pylist()}
    pinned = log.sql("SELECT hash FROM events WHERE run_id = 'r1' AND seq = 6")["hash"][0].as_py()
    tamper(log, edit)
    con = open_snapshot(log.path)
    try:
        walk = walk_chains(ordered_events(con, "events", batch_rows=rows_per_batch), pin={"r1": 6, "r2": 10})
    finally:
        con.close()
    assert [f"seq {p.seq}: {p.problem}" for p in walk.problems] == [first_break]
    assert {p.run_id for p in walk.problems} == {"r1"}
    assert walk.tails["r2"] == (*heads["r2"], "run.finished") and walk.pinned == {"r1": pinned, "r2": heads["r2"][1]}
    assert walk.events == 211 - ("DELETE" in edit)


def test_the_walk_reads_the_events_in_slices_in_the_order_of_one_sort(monkeypatch):
    """The walk read every event through one ORDER BY run_id, seq, which held the whole log's
    payloads in memory at once (3.1 GiB for a 100k-episode run). `ordered_events` reads it a
    slice at a time: short runs together, a long run cut at the quantiles of its seqs (which
    a gap of a billion or a repeated seq must not break), NULL seqs and run_ids last as the
    one sort put them; the order is the same."""
    import eviscene.store.verify as verify

    monkeypatch.setattr(verify, "_WALK_SLICE_ROWS", 4)
    con = duckdb.connect()
    con.execute("CREATE TABLE events (run_id VARCHAR, seq BIGINT, event_id VARCHAR, ts TIMESTAMPTZ, episode_id VARCHAR, attempt INT, "
                "type VARCHAR, step INT, payload JSON, prev_hash VARCHAR, hash VARCHAR)")
    keys = ([("a", s) for s in (1, 2, 3)] + [("b", s) for s in (1, 2)] + [("c", 1)]  # short runs: a and b together, then c
            + [("long", s) for s in (*range(1, 12), 5, 5, 1_000_000_000, 1_000_000_001, None, None)]  # 17 events: cut at quantiles
            + [("z", 2), ("z", None), (None, 3), (None, 1)])
    shuffled = random.Random(7).sample(keys, len(keys))  # stored in no order
    con.executemany("INSERT INTO events VALUES (?, ?, 'ev', TIMESTAMPTZ '2026-01-01 00:00:00+00', NULL, NULL, 't', NULL, '{}', 'p', 'h')",
                    [list(key) for key in shuffled])
    expected = [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 2), ("c", 1), *[("long", s) for s in (1, 2, 3, 4, 5, 5, 5)],
                *[("long", s) for s in range(6, 12)], ("long", 1_000_000_000), ("long", 1_000_000_001), ("long", None), ("long", None),
                ("z", 2), ("z", None), (None, 1), (None, 3)]
    read = [(r, s) for batch in verify.ordered_events(con, "events", batch_rows=3) for r, s in zip(batch["run_id"].to_pylist(), batch["seq"].to_pylist())]
    assert read == expected
    scoped = verify.ordered_events(con, "events", "list_contains($runs, run_id)", {"runs": ["b", "long"]}, batch_rows=100)
    assert [(r, s) for batch in scoped for r, s in zip(batch["run_id"].to_pylist(), batch["seq"].to_pylist())] == expected[3:5] + expected[6:23]


def test_an_event_without_a_run_id_or_a_seq_is_named_not_passed_over():
    """A forged live segment's events with a NULL run_id (hashed as the walk hashed them) were
    walked as a stream of no run, never closed nor reported: `log verify` said ok. One with a
    NULL seq would have stopped the walk with a TypeError. Both are named."""
    from eviscene.store.verify import ordered_events, walk_chains

    con = duckdb.connect()
    con.execute("CREATE TABLE events (run_id VARCHAR, seq BIGINT, event_id VARCHAR, ts TIMESTAMPTZ, episode_id VARCHAR, attempt INT, "
                "type VARCHAR, step INT, payload JSON, prev_hash VARCHAR, hash VARCHAR)")
    rows, prev = [], {}
    for step, (run_id, seq) in enumerate([("x", 1), ("x", 2), ("y", 1), ("y", None), (None, 1), (None, 2)]):
        content = content_digest(run_id, None, None, "gate.decided", step, "{}")
        event_id = "ev-" + content[:32]
        row_hash = event_hash(prev.get(run_id, GENESIS_HASH), seq, event_id, 0, content)
        rows.append([run_id, seq, event_id, "1970-01-01 00:00:00+00", None, None, "gate.decided", step, "{}", prev.get(run_id, GENESIS_HASH), row_hash])
        prev[run_id] = row_hash  # each run's chain as a writer hashes it
    con.executemany("INSERT INTO events VALUES (?, ?, ?, ?::TIMESTAMPTZ, ?, ?, ?, ?, ?, ?, ?)", rows)
    walk = walk_chains(ordered_events(con, "events"))
    assert [str(p) for p in walk.problems] == [
        f"run y, seq None ({rows[3][2]}): seq is NULL, which no writer stores (forged event)",
        f"run None, seq 1 ({rows[4][2]}): run_id is NULL, which no writer stores (forged event)",
    ]
    assert walk.tails["x"][0] == 2 and walk.events == 6


def test_a_run_begun_while_the_log_is_verified_is_not_taken_for_another_runs_events(tmp_path, monkeypatch):
    """The live runs are listed before the snapshot is opened, so a run whose first commit lands
    in between is in the snapshot but not the listing: the check for events in no segment of
    their own called it broken. It is a run that began meanwhile, as the next verify shows."""
    import eviscene.store.verify as verify

    log = EventLog(tmp_path / "log.duckdb")
    log.append("a", gates(0, 10) + [finished()])
    snapshot = verify.open_snapshot

    def begin_b_then_open(path):
        if not (tmp_path / "log.duckdb.live" / "b").exists():
            log.append("b", gates(0, 5))  # its first commit, now
        return snapshot(path)

    monkeypatch.setattr(verify, "open_snapshot", begin_b_then_open)
    report = log.verify()
    assert report.problems == [] and [(note.run_id, note.verified_seq) for note in report.unfinished] == [("b", 5)]
