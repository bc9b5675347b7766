"""`log verify` names each edited, deleted or reordered event."""

import duckdb
import pytest

from eviscene.events import GateDecided
from eviscene.store import EventDraft, EventLog


@pytest.fixture
def sealed_log(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    log.append("r1", [EventDraft(GateDecided(gate="g", subject=f"s{i}", passed=True), episode_id="e", attempt=1, step=i) for i in range(6)])
    log.seal()
    return log


def tamper(log: EventLog, sql: str) -> None:
    con = duckdb.connect(str(log.path))
    con.execute(sql)
    con.close()


def test_intact_log_verifies(sealed_log):
    report = sealed_log.verify()
    assert report.ok and report.runs == 1 and report.events == 6


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


def test_renumbered_deletion_is_caught_by_the_chain(sealed_log):
    tamper(sealed_log, "DELETE FROM events WHERE seq = 2")
    tamper(sealed_log, "UPDATE events SET seq = seq - 1 WHERE seq > 2")
    problems = sealed_log.verify().problems
    assert len(problems) == 1 and problems[0].seq == 2 and "prev_hash" in problems[0].problem


def test_cli_verify_exits_1_and_names_the_event(sealed_log, tmp_path):
    from click.testing import CliRunner

    from eviscene.cli.main import cli

    tamper(sealed_log, "UPDATE events SET step = 99 WHERE seq = 5")
    result = CliRunner().invoke(cli, ["--db", str(sealed_log.path), "log", "verify"])
    assert result.exit_code == 1
    assert "BROKEN run r1, seq 5" in result.output
