"""What `log verify` calls broken is not exported: `dataset export` and `materialize` check the
chains and files they read, and a dataset records the heads it computed, not the stored ones.

The bug: both read the events and blobs as stored. An edited verdict, an edited gold file or
two swapped events were exported with exit 0 (the gold edit made one of three episodes
`incorrect_result`), and the `dataset.exported` event recorded the stored hash of the run's
last event: the head a user had saved from the genuine log, so an audit against saved heads
passed. Real offline runs of three cases of the bundled release."""

import json
import shutil
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from eviscene.cli.main import cli
from eviscene.log import EventLog

CASES = Path(__file__).resolve().parents[2] / "examples" / "eviscene-demo-v1" / "runtime_input" / "cases.jsonl"


@pytest.fixture(scope="module")
def genuine(tmp_path_factory) -> Path:
    """A sealed log of run `a` (three cases), and the heads `log verify` saved from it."""
    folder = tmp_path_factory.mktemp("genuine")
    ran = CliRunner().invoke(cli, ["--db", str(folder / "log.duckdb"), "eval", "run", "--benchmark", str(CASES), "--limit", "3",
                                   "--no-progress", "--no-materialize", "--run-id", "a"])
    assert ran.exit_code == 0, ran.output
    assert not (folder / "log.duckdb.live").exists() or not any((folder / "log.duckdb.live").iterdir())  # all in the archive
    return folder / "log.duckdb"


@pytest.fixture
def log_path(genuine, tmp_path) -> Path:
    copy = tmp_path / "log.duckdb"
    shutil.copyfile(genuine, copy)
    return copy


def edit(log_path: Path, sql: str, params: list | None = None) -> None:
    con = duckdb.connect(str(log_path))
    con.execute(sql, params or [])
    con.close()


def cli_run(log_path: Path, *words: str):
    return CliRunner().invoke(cli, ["--db", str(log_path), *words])


def refusal(log_path: Path, problem: str) -> str:
    return (f"Error: {problem}: the log fails verification (`eviscene --db {log_path} log verify` names every problem); "
            "nothing is written from it until it is restored\n")


def refused_by_both(log_path: Path, tmp_path: Path, problem: str) -> None:
    """`dataset export` and `materialize` each refuse the log, naming `problem`, and write nothing."""
    exported = cli_run(log_path, "dataset", "export", "--run", "a", "--out", str(tmp_path / "ds"), "--allow-training-prohibited")
    assert (exported.exit_code, exported.stderr) == (2, refusal(log_path, problem))
    materialized = cli_run(log_path, "materialize", "a", "--out", str(tmp_path / "runs" / "a"))
    assert (materialized.exit_code, materialized.stderr) == (2, refusal(log_path, problem))
    assert not (tmp_path / "ds").exists() and not (tmp_path / "runs" / "a").exists()


def exported_events(log_path: Path) -> int:
    return EventLog(log_path).sql("SELECT count(*) AS n FROM events WHERE type = 'dataset.exported'")["n"][0].as_py()


def test_the_heads_a_dataset_records_are_those_log_verify_saves(log_path, tmp_path):
    saved = tmp_path / "heads.jsonl"
    assert cli_run(log_path, "log", "verify", "--save-heads", str(saved)).exit_code == 0
    (head,) = [json.loads(line) for line in saved.read_text().splitlines()]
    last = EventLog(log_path).sql("SELECT seq, hash FROM events WHERE run_id = 'a' AND type = 'run.finished'").to_pylist()
    assert [head["seq"], head["hash"]] == [last[0]["seq"], last[0]["hash"]]  # the run's last event
    exported = cli_run(log_path, "dataset", "export", "--run", "a", "--out", str(tmp_path / "ds"), "--allow-training-prohibited")
    assert exported.exit_code == 0, exported.output
    (recorded,) = EventLog(log_path).sql("SELECT payload->'inputs'->'source_heads' AS h FROM events "
                                         "WHERE type = 'dataset.exported'")["h"].to_pylist()
    assert json.loads(recorded) == {"a": [head["seq"], head["hash"]]}


def test_an_edited_verdict_is_neither_exported_nor_materialized(log_path, tmp_path):
    (judged,) = EventLog(log_path).sql("SELECT seq, event_id FROM events WHERE run_id = 'a' AND type = 'judgment.made' "
                                       "ORDER BY seq LIMIT 1").to_pylist()
    edit(log_path, "UPDATE events SET payload = replace(payload::VARCHAR, '\"verdict\":\"', '\"verdict\":\"x')::JSON "
                   "WHERE run_id = 'a' AND seq = ?", [judged["seq"]])
    problem = f"run a, seq {judged['seq']} ({judged['event_id']}): hash does not match the event's content (edited event)"
    refused_by_both(log_path, tmp_path, problem)
    assert exported_events(log_path) == 0


def test_two_swapped_events_are_not_exported(log_path, tmp_path):
    ids = {r["seq"]: r["event_id"] for r in EventLog(log_path).sql(
        "SELECT seq, event_id FROM events WHERE run_id = 'a' AND seq IN (10, 11)").to_pylist()}
    edit(log_path, "UPDATE events SET seq = CASE seq WHEN 10 THEN 11 ELSE 10 END WHERE run_id = 'a' AND seq IN (10, 11)")
    # walked in seq order, the event stored as 11 now comes 10th: its prev_hash is not the 9th's hash
    problem = f"run a, seq 10 ({ids[11]}): prev_hash does not match the previous event (reordered, inserted or deleted events)"
    exported = cli_run(log_path, "dataset", "export", "--run", "a", "--out", str(tmp_path / "ds"), "--allow-training-prohibited")
    assert (exported.exit_code, exported.stderr) == (2, refusal(log_path, problem))


def test_an_edited_gold_file_is_neither_exported_nor_materialized(log_path, tmp_path):
    (gold,) = EventLog(log_path).sql("SELECT payload->>'blob_sha256' AS sha FROM events WHERE run_id = 'a' "
                                     "AND type = 'artifact.imported' AND payload->>'kind' = 'evaluation_gold'")["sha"].to_pylist()
    edit(log_path, "UPDATE blobs SET content = replace(content::VARCHAR, 'authentic', 'AUTHENTIC')::BLOB WHERE sha256 = ?", [gold])
    problem = f"blob {gold}: its content does not hash to its address (edited)"
    refused_by_both(log_path, tmp_path, problem)


def test_an_edited_model_request_is_neither_exported_nor_materialized(log_path, tmp_path):
    """The SFT transcripts are read from the model requests the log stores as blobs: only the
    release's files were hashed, so an edited request reached the dataset and the run directory."""
    (request,) = EventLog(log_path).sql(
        "SELECT payload->>'request_sha256' AS sha FROM events WHERE run_id = 'a' AND type = 'model.called' "
        "AND payload->>'stage' <> 'perception' ORDER BY seq DESC LIMIT 1")["sha"].to_pylist()
    edit(log_path, "UPDATE blobs SET content = encode(replace(decode(content), 'You are an image', 'You are an EDITED')) "
                   "WHERE sha256 = ?", [request])
    assert "EDITED" in EventLog(log_path).sql("SELECT decode(content) AS c FROM blobs WHERE sha256 = ?", [request])["c"][0].as_py()
    problem = f"blob {request}: its content does not hash to its address (edited)"
    refused_by_both(log_path, tmp_path, problem)


def test_a_run_cut_short_with_its_end_deleted_is_neither_exported_nor_materialized(log_path, tmp_path):
    """What is left of a cut-off tail chains perfectly: only the run's recorded end tells, which
    the walk alone did not read."""
    (last,) = EventLog(log_path).sql("SELECT max(seq) AS seq FROM events WHERE run_id = 'a'")["seq"].to_pylist()
    edit(log_path, "DELETE FROM events WHERE run_id = 'a' AND seq = ?", [last])
    verified = cli_run(log_path, "log", "verify")
    assert verified.exit_code == 1
    (problem,) = [line.removeprefix("BROKEN ") for line in verified.stdout.splitlines() if line.startswith("BROKEN ")]
    assert problem.startswith(f"run a, seq {last}..{last}: ")
    refused_by_both(log_path, tmp_path, problem)
