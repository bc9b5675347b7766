"""A log's own files tampered with outside its events: a table of the archive dropped, a run's
sealed records deleted, an unreadable segment dropped beside a run's, a run killed before its
first commit was recorded: `log verify` names each (BROKEN or UNFINISHED, exit 1, one line),
and merge takes in no batch on disk only. A run folder or lock file made a link (or a FIFO):
every command refuses the log at once, naming it (exit 2), as it refuses a manifest naming a
file elsewhere; nothing follows the link."""

import os
import re
import shutil
import subprocess
import sys

import anyio
import duckdb
import pytest
from click.testing import CliRunner

from eviscene.cli.main import cli
from eviscene.errors import EvisceneError, LogIntegrityError
from eviscene.events import GateDecided, RunFinished
from eviscene.log import EventLog
from eviscene.store import EventDraft


def gates(first: int, last: int) -> list[EventDraft]:
    return [EventDraft(GateDecided(gate="g", subject=f"s{i}", passed=True), episode_id="e", attempt=1, step=i) for i in range(first, last)]


def finished() -> EventDraft:
    return EventDraft(RunFinished(status="completed", completed_at="2026-11-30T01:00:00+00:00", num_episodes=1, num_errors=0))


def live_log(path, run_id: str = "r1") -> EventLog:
    """`run_id` in two committed segments (seq 1..4, 5..8, the last ending the run) and a blob
    segment, not sealed."""
    log = EventLog(path)

    async def write() -> None:
        async with log.writer(run_id, flush_seconds=30) as writer:
            await writer.put_blob(b"gold", "text/plain")
            for batch in (gates(0, 4), gates(4, 7) + [finished()]):
                for draft in batch:
                    await writer.emit(draft)
                await writer.sync()

    anyio.run(write)
    return log


def folder_of(log: EventLog, run_id: str = "r1"):
    return log.path.with_name(log.path.name + ".live") / run_id


def verify_cli(log: EventLog):
    return CliRunner().invoke(cli, ["--db", str(log.path), "log", "verify"])


def tamper(log: EventLog, *statements: str) -> None:
    con = duckdb.connect(str(log.path))
    for sql in statements:
        con.execute(sql)
    con.close()


@pytest.fixture
def sealed(tmp_path) -> EventLog:
    log = live_log(tmp_path / "sealed.duckdb")
    log.seal()
    return log


def test_an_archive_without_its_sealed_segments_table_is_damaged_not_empty(sealed):
    # Readers take an archive without that table for one never sealed: its 8 events would vanish.
    tamper(sealed, "DROP TABLE sealed_segments")
    result = verify_cli(sealed)
    message = (f"{sealed.path} is damaged: its archive lacks the table sealed_segments, which every log has from its first "
               "migration (dropped?); restore the log from a copy; nothing was read")
    assert result.exit_code == 1 and result.stdout == f"BROKEN {message}\n"
    with pytest.raises(LogIntegrityError, match="lacks the table sealed_segments"):
        sealed.sql("SELECT count(*) FROM events")
    with pytest.raises(LogIntegrityError, match="lacks the table sealed_segments"):
        live_log(sealed.path, "r2")  # nothing is written beside it either


@pytest.mark.parametrize("deleted", ["", " WHERE starts_with(file_name, 'events-')"])  # all, or the events segments' (blobs' have no range)
def test_archived_rows_of_a_run_whose_records_were_all_deleted_are_named(sealed, deleted):
    tamper(sealed, "DELETE FROM sealed_segments" + deleted)
    assert [str(p) for p in sealed.verify().problems] == ["run r1, seq 1..8: in the archive but in no sealed-segment record"]


def test_an_archive_of_a_newer_schema_is_named_newer_not_damaged(sealed):
    tamper(sealed, "INSERT INTO schema_migrations VALUES (999, '999_renamed.sql', now())", "DROP TABLE sealed_segments")
    with pytest.raises(EvisceneError, match="its schema version is 999, newer than this EviScene's .*: upgrade EviScene to read it"):
        sealed.verify()


def test_a_run_folder_that_is_a_link_is_named_and_the_folder_it_leads_to_is_left_alone(tmp_path):
    victim = live_log(tmp_path / "victim.duckdb")
    files = sorted(os.listdir(folder_of(victim)))
    other = EventLog(tmp_path / "other.duckdb")
    folder_of(other).parent.mkdir()
    folder_of(other).symlink_to(folder_of(victim))
    refused = f"run folder {folder_of(other)} is a link (to {folder_of(victim)}); a log's folders are its own: remove the link"
    assert (verify_cli(other).exit_code, verify_cli(other).output) == (2, f"Error: {refused}\n")
    for refuses in (other.seal, lambda: other.sql("SELECT count(*) FROM events")):  # nor is it read as this log's
        with pytest.raises(LogIntegrityError, match="is a link"):
            refuses()
    assert sorted(os.listdir(folder_of(victim))) == files and victim.verify().ok


def test_a_live_folder_that_is_a_link_is_refused_and_the_log_it_leads_to_is_left_alone(tmp_path):
    victim = live_log(tmp_path / "victim.duckdb")
    other = EventLog(tmp_path / "other.duckdb")
    folder_of(other).parent.symlink_to(folder_of(victim).parent)
    refused = f"live folder {folder_of(other).parent} is a link (to {folder_of(victim).parent}); a log's folders are its own: remove the link"
    for refuses in (other.seal, other.verify, lambda: other.sql("SELECT count(*) FROM events"), lambda: live_log(other.path, "r2")):
        with pytest.raises(LogIntegrityError, match=re.escape(refused)):
            refuses()
    assert victim.verify().ok and victim.sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 8}]


def test_a_dangling_link_in_place_of_a_run_folder_is_named_not_an_os_error(tmp_path):
    log = live_log(tmp_path / "log.duckdb")
    (folder_of(log).parent / "r2").symlink_to(tmp_path / "nowhere")
    with pytest.raises(LogIntegrityError, match=r"run folder .*/r2 is a link \(to .*/nowhere\)"):
        live_log(log.path, "r2")


def test_a_lock_file_that_is_a_link_is_named_and_the_file_it_leads_to_is_never_written(tmp_path):
    log = live_log(tmp_path / "log.duckdb")
    precious = tmp_path / "precious.txt"
    precious.write_text("precious\n")
    lock = folder_of(log) / "writer.lock"
    lock.unlink()
    lock.symlink_to(precious)
    result = verify_cli(log)
    assert (result.exit_code, result.output) == (2, f"Error: lock file {lock} is a link; a lock file is a plain file: remove the link\n")
    with pytest.raises(LogIntegrityError, match="is a link"):
        log.seal()
    assert precious.read_text() == "precious\n"


def test_a_lock_file_that_is_a_fifo_is_named_at_once(tmp_path):
    log = live_log(tmp_path / "log.duckdb")
    lock = folder_of(log) / "writer.lock"
    lock.unlink()
    os.mkfifo(lock)  # opened for reading as a plain file is, it would block with no writer
    # in a process of its own, so that a verify that blocks fails this test instead of hanging the suite
    result = subprocess.run([sys.executable, "-m", "eviscene", "--db", str(log.path), "log", "verify"],
                            capture_output=True, text=True, timeout=60, check=False)
    assert (result.returncode, result.stderr) == (2, f"Error: lock file {lock} is not a plain file; remove it\n")
    with pytest.raises(LogIntegrityError, match="not a plain file"):
        log.seal()


@pytest.mark.parametrize("what", ["a segment made a link out of the log", "a segment made a FIFO", "the manifest made a FIFO",
                                  "an unlisted segment made a link"])
def test_a_live_segment_or_manifest_that_is_no_plain_file_is_refused_at_once(tmp_path, what):
    """A segment replaced by a link to a file outside the log was read by every reader, the SQL
    sandbox included, and copied into the archive by a seal; a FIFO in place of a segment or of
    the manifest blocked verify and `sql "SELECT 1"` for good. Every command now refuses it."""
    log = live_log(tmp_path / "log.duckdb")
    folder = folder_of(log)
    segment = sorted(folder.glob("events-*.parquet"))[-1]
    elsewhere = tmp_path / "elsewhere.parquet"
    target = segment
    if what == "a segment made a link out of the log":
        segment.rename(elsewhere)
        segment.symlink_to(elsewhere)
    elif what == "a segment made a FIFO":
        segment.unlink()
        os.mkfifo(segment)
    elif what == "the manifest made a FIFO":
        target = folder / "segments.jsonl"
        target.unlink()
        os.mkfifo(target)
    else:
        shutil.copyfile(segment, elsewhere)
        target = folder / "events-000000000009-000000000009.parquet"
        target.symlink_to(elsewhere)
    kind = "a link" if target.is_symlink() else "not a plain file"
    refusal = f"{target} is {kind}: a run's manifest and segments are plain files in its folder; put the file back"

    def eviscene(*command: str) -> subprocess.CompletedProcess:
        # in a process of its own: one that blocks fails this test instead of hanging the suite
        return subprocess.run([sys.executable, "-m", "eviscene", "--db", str(log.path), *command],
                              capture_output=True, text=True, timeout=60, check=False)

    if what == "an unlisted segment made a link":  # reads never open an unlisted file; verify names it, a seal refuses it
        assert eviscene("sql", "SELECT count(*) AS n FROM events", "--csv").stdout == "n\n8\n"
        verified = eviscene("log", "verify")
        assert verified.returncode == 1 and f"BROKEN run r1: {refusal}\n" in verified.stdout, verified.stdout
        commands = [["log", "seal"]]
    else:
        commands = [["log", "verify"], ["sql", "SELECT count(*) AS n FROM events"], ["runs"], ["log", "seal"]]
    for command in commands:
        result = eviscene(*command)
        assert (result.returncode, result.stderr) == (2, f"Error: {refusal}\n"), command
    assert not log.path.exists() or not duckdb.connect(str(log.path), read_only=True).execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'events'").fetchone()[0]  # nothing was sealed


def test_an_unreadable_segment_no_manifest_line_lists_is_named_in_one_line(tmp_path):
    log = live_log(tmp_path / "log.duckdb")
    (folder_of(log) / "events-000000000009-000000000010.parquet").write_bytes(b"not parquet" * 300)
    result = verify_cli(log)
    assert result.exit_code == 1
    assert result.stdout.startswith("BROKEN run r1: segment events-000000000009-000000000010.parquet is on disk but in no manifest "
                                    "line, and unreadable (") and "Traceback" not in result.output
    assert result.stdout.endswith(f"): no writer leaves such a file; move it out of {folder_of(log)}\n")
    with pytest.raises(LogIntegrityError, match="is on disk but in no manifest line, and unreadable"):
        log.seal()


@pytest.mark.parametrize("manifest", ["as the kill left it", "with the blob segment recorded"])
def test_a_run_folder_holding_blobs_and_no_event_is_named_and_a_seal_clears_it(tmp_path, manifest):
    """A writer killed between its first batch's blob segment and its events segment: `log
    verify` said ok with 0 runs; `log seal` called the folder a sealed run, after which `log
    seal r1` asked "did you mean 'r1'?" of the very name it said was no run. (A refused
    `eval run` of the name recorded the blob segment in the manifest, the second state.)"""
    log = live_log(tmp_path / "log.duckdb")
    folder = folder_of(log)
    lines = (folder / "segments.jsonl").read_text().splitlines(keepends=True)
    for name in os.listdir(folder):
        if name.startswith("events-"):
            os.remove(folder / name)
    (folder / "segments.jsonl").write_text("".join(line for line in lines if '"blobs-' in line) if manifest != "as the kill left it" else "")
    result = verify_cli(log)
    assert result.exit_code == 1 and result.stdout == (
        "UNFINISHED run r1: unfinished: killed before its first event reached the disk (only 1 blob segment(s) did) and no "
        f"writer holds it: nothing of it resumes; its name is free for a new run, or `eviscene --db {log.path} log seal` clears "
        "its folder\n")
    seal = CliRunner().invoke(cli, ["--db", str(log.path), "log", "seal"])
    assert (seal.exit_code, seal.stdout) == (0, "sealed 0 run(s)\n")
    assert not folder.exists() and log.verify().ok
    again = CliRunner().invoke(cli, ["--db", str(log.path), "log", "seal", "r1"])
    assert (again.exit_code, again.stderr) == (2, f"Error: no run 'r1' in {log.path}; `eviscene --db {log.path} runs` lists the runs\n")


def test_a_run_killed_before_its_first_commit_was_recorded_is_unfinished_not_absent(tmp_path):
    log = live_log(tmp_path / "log.duckdb")
    (folder_of(log) / "segments.jsonl").write_text("")  # the writer renamed its first batches, then died
    report = log.verify()
    assert not report.ok and not report.problems
    assert [str(n) for n in report.unfinished] == [(
        "run r1: unfinished: seq 1..8 reached the disk but its first commit was cut short and no writer holds it; "
        f"`eviscene --db {log.path} log seal` records it (then `eviscene --db {log.path} log verify` says how to finish it)"
    )]
    assert verify_cli(log).stderr == "incomplete: 1 unfinished run(s) in 1 run(s), 0 events; every chain intact\n"
    # merged now, seq 1..8 would be in neither log: refused, nothing taken in
    target = EventLog(tmp_path / "target.duckdb")
    with pytest.raises(EvisceneError, match=r"^.*log.duckdb not merged: run r1: unfinished: seq 1..8 reached the disk"):
        target.merge(log.path)
    assert not target.path.exists() or target.sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 0}]
    assert log.seal() == ["r1"] and log.verify().ok
    target.merge(log.path)
    assert target.sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 8}]


def test_an_export_folder_is_not_merged_its_runs_would_lack_their_records(tmp_path):
    log = live_log(tmp_path / "log.duckdb")
    log.seal()
    assert CliRunner().invoke(cli, ["--db", str(log.path), "log", "export-parquet", str(tmp_path / "history")]).exit_code == 0
    target = EventLog(tmp_path / "target.duckdb")
    with pytest.raises(EvisceneError, match="is a folder .*; merge the log it was exported from"):
        target.merge(tmp_path / "history")
    assert not target.path.exists()


def test_seal_of_a_run_folder_its_writer_left_empty_says_there_was_nothing_to_seal(tmp_path):
    log = live_log(tmp_path / "log.duckdb")
    log.seal()
    (folder_of(log, "ghost")).mkdir()  # a writer killed before its first batch
    result = CliRunner().invoke(cli, ["--db", str(log.path), "log", "seal", "ghost", "r1"])
    assert (result.exit_code, result.output) == (0, "sealed 0 run(s); sealed already: r1; nothing to seal: ghost\n")


def test_a_copied_log_s_files_stay_its_own(tmp_path):
    """The checks above refuse links, not copies: a run folder copied whole is a log's own."""
    log = live_log(tmp_path / "a.duckdb")
    copy = EventLog(tmp_path / "b.duckdb")
    shutil.copytree(folder_of(log).parent, folder_of(copy).parent)
    assert copy.verify().ok and copy.seal() == ["r1"] and copy.verify().ok
