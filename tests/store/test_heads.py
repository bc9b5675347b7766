"""Heads kept outside the log show what the chain alone cannot: a run rewritten by someone who
hashed every later event again, cut back, or deleted with its records."""

import json

import duckdb
from click.testing import CliRunner

from eviscene.cli.main import cli
from eviscene.log import EventLog
from test_verify import finished, gates, rewrite_and_rehash, write_batches


def verify_cli(log: EventLog, *args: str):
    return CliRunner().invoke(cli, ["--db", str(log.path), "log", "verify", *args])


def sealed_run(tmp_path, run_id: str = "r1") -> EventLog:
    log = EventLog(tmp_path / "log.duckdb")
    write_batches(log, run_id, [gates(1, 4), gates(4, 6) + [finished()]])
    assert log.seal([run_id]) == [run_id]
    return log


def test_a_rewritten_run_whose_chain_was_hashed_again_keeps_its_chain_but_not_its_recorded_head(tmp_path):
    log = sealed_run(tmp_path)
    heads = tmp_path / "heads.jsonl"
    saved = verify_cli(log, "--save-heads", str(heads))
    assert saved.exit_code == 0, saved.output
    line = json.loads(heads.read_text())
    # Five gates and run.finished: the head is seq 6, the hash the log holds there.
    assert line == {"run_id": "r1", "seq": 6, "hash": duckdb.connect(str(log.path), read_only=True).execute(
        "SELECT hash FROM events WHERE run_id = 'r1' AND seq = 6").fetchone()[0]}
    assert f"saved 1 head(s) to {heads}" in saved.output

    rewrite_and_rehash(log, "r1", 2, {"gate": "g", "subject": "s2", "passed": False, "reasons": []})

    plain = verify_cli(log)
    assert plain.exit_code == 0, plain.output  # the chain alone holds together: why heads are kept
    checked = verify_cli(log, "--check-heads", str(heads))
    assert checked.exit_code == 1
    now = duckdb.connect(str(log.path), read_only=True).execute(
        "SELECT hash FROM events WHERE run_id = 'r1' AND seq = 6").fetchone()[0]
    assert (f"BROKEN run r1, seq 6: hash {now} is not the recorded head {line['hash']} "
            "(events up to seq 6 rewritten, the chain hashed again)") in checked.output


def test_a_run_grown_since_its_head_was_saved_still_holds_it(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    write_batches(log, "r1", [gates(1, 4)])
    heads = tmp_path / "heads.jsonl"
    saved = verify_cli(log, "--save-heads", str(heads))
    assert saved.exit_code == 1  # unfinished, but intact: its heads are saved
    assert json.loads(heads.read_text())["seq"] == 3
    write_batches(log, "r1", [gates(4, 6) + [finished()]])
    log.seal(["r1"])
    held = verify_cli(log, "--check-heads", str(heads))
    assert held.exit_code == 0, held.output
    assert f"every recorded head held: 1 of {heads}" in held.output


def test_a_run_cut_back_or_deleted_since_its_head_was_saved_is_named(tmp_path):
    log = sealed_run(tmp_path)
    write_batches(log, "r2", [gates(1, 3) + [finished()]])
    log.seal(["r2"])
    heads = tmp_path / "heads.jsonl"
    assert verify_cli(log, "--save-heads", str(heads)).exit_code == 0
    con = duckdb.connect(str(log.path))
    # r1 cut back to its first three events and closed again; r2 gone with its records.
    con.execute("DELETE FROM events WHERE run_id = 'r1' AND seq BETWEEN 4 AND 5")
    con.execute("UPDATE events SET seq = 4 WHERE run_id = 'r1' AND seq = 6")
    con.execute("DELETE FROM sealed_segments WHERE run_id = 'r1' AND last_seq IS NOT NULL AND first_seq > 3")
    con.execute("DELETE FROM events WHERE run_id = 'r2'")
    con.execute("DELETE FROM sealed_segments WHERE run_id = 'r2'")
    con.close()
    rewrite_and_rehash(log, "r1", 4, {
        "status": "completed", "completed_at": "2026-11-30T01:00:00+00:00", "num_episodes": 1, "num_errors": 0,
        "last_seq": 3, "last_hash": "",
    })
    checked = verify_cli(log, "--check-heads", str(heads))
    assert checked.exit_code == 1, checked.output
    assert "BROKEN run r1, seq 6: the run ends at seq 4, before its recorded head (cut off)" in checked.output
    assert "BROKEN run r2, seq 3: a recorded head's run is not in the log (deleted)" in checked.output


def test_heads_of_a_broken_log_are_not_saved(tmp_path):
    log = sealed_run(tmp_path)
    con = duckdb.connect(str(log.path))
    con.execute("""UPDATE events SET payload = '{"gate":"g","subject":"x","passed":true}' WHERE run_id = 'r1' AND seq = 2""")
    con.close()
    heads = tmp_path / "heads.jsonl"
    result = verify_cli(log, "--save-heads", str(heads))
    assert result.exit_code == 1
    assert f"heads not saved to {heads}" in result.output
    assert not heads.exists()


def test_a_heads_file_that_is_no_heads_file_is_one_line_naming_its_line(tmp_path):
    log = sealed_run(tmp_path)
    heads = tmp_path / "heads.jsonl"
    heads.write_text('{"run_id": "r1", "seq": 6, "hash": "' + "a" * 64 + '"}\n\nnot json\n')
    result = verify_cli(log, "--check-heads", str(heads))
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [f"Error: {heads}:3: not a JSON line"]
    heads.write_text('{"run_id": "r1", "seq": 0, "hash": "' + "a" * 64 + '"}\n')
    result = verify_cli(log, "--check-heads", str(heads))
    assert result.exit_code == 2 and f"{heads}:1: not a head" in result.output
    missing = verify_cli(log, "--check-heads", str(tmp_path / "nope.jsonl"))
    assert missing.exit_code == 2 and "No such file or directory" in missing.output and "Traceback" not in missing.output


def test_a_heads_file_that_records_no_head_is_refused_not_passed(tmp_path):
    # Checking no head would say ok of any log: an empty file is a truncated copy or the wrong file.
    log = sealed_run(tmp_path)
    heads = tmp_path / "heads.jsonl"
    for text in ("", "\n\n"):
        heads.write_text(text)
        result = verify_cli(log, "--check-heads", str(heads))
        assert result.exit_code == 2, result.output
        assert result.output.strip().splitlines() == [f"Error: heads file {heads} records no head: nothing to check the log against"]


def test_a_log_without_runs_saves_no_empty_heads_file(tmp_path):
    """Its heads file would be empty, which --check-heads refuses as checking nothing."""
    log = EventLog(tmp_path / "log.duckdb")
    duckdb.connect(str(log.path)).close()  # a new log: no runs
    heads = tmp_path / "heads.jsonl"
    result = verify_cli(log, "--save-heads", str(heads))
    assert result.exit_code == 0, result.output
    assert result.stderr == f"heads not saved to {heads}: the log holds no run to save a head of\n"
    assert not heads.exists()


def test_heads_are_never_saved_over_the_log(tmp_path):
    log = sealed_run(tmp_path)
    before = log.path.read_bytes()
    result = verify_cli(log, "--save-heads", str(log.path))
    assert result.exit_code == 2
    assert "that is the log's own file" in result.output
    assert log.path.read_bytes() == before
