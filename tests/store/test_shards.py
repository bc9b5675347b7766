"""Shards of one run on a scheduler without Ray: a SLURM job array simulated by processes
with SLURM_ARRAY_TASK_ID/COUNT set, each writing its own log, folded by `log merge` into one
run that matches an unsharded run of the same cases, episode by episode."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import duckdb
import pytest
from click.testing import CliRunner

from eviscene.cli.main import cli
from eviscene.events import GateDecided, RunFinished, RunStarted
from eviscene.log import EventLog
from eviscene.store import EventDraft
from eviscene.store.chain import content_digest, event_hash
from eviscene.store.merge import _named

RELEASE = Path(__file__).resolve().parents[2] / "examples" / "eviscene-demo-v1" / "runtime_input" / "cases.jsonl"
EVISCENE = str(Path(sys.executable).with_name("eviscene"))
SHARDS = 2
PER_EPISODE = (
    "SELECT r.case_id, r.rollout_index, r.verdict, r.termination, r.total_tool_calls, p.* EXCLUDE (run_id, episode_id) "
    "FROM run_results r JOIN post_rollout_rewards p USING (run_id, episode_id) WHERE r.run_id = ? ORDER BY r.case_id"
)


def _eval(db: Path, env: dict[str, str], *flags: str) -> subprocess.Popen:
    return subprocess.Popen(
        [EVISCENE, "--db", str(db), "eval", "run", "--benchmark", str(RELEASE), "--no-materialize", "--no-progress", *flags],
        env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


def _sharded_cases(index: int) -> list[str]:
    """What shard `index` selects, by hand: the release's case ids sorted, every SHARDS-th, the first 4."""
    ids = sorted(line.split('"case_id": "')[1].split('"')[0] for line in RELEASE.read_text().splitlines() if line.strip())
    return ids[index::SHARDS][:4]


@pytest.fixture(scope="module")
def shard_logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path], Path]:
    root = tmp_path_factory.mktemp("slurm")
    shards = [root / f"shard-{i}.duckdb" for i in range(SHARDS)]
    cases = [case for i in range(SHARDS) for case in _sharded_cases(i)]
    whole = root / "whole.duckdb"
    jobs = [
        _eval(db, {"SLURM_ARRAY_TASK_ID": str(i), "SLURM_ARRAY_TASK_COUNT": str(SHARDS)}, "--limit", "4", "--output-dir", str(root / "runs" / "exp"))
        for i, db in enumerate(shards)
    ]
    jobs.append(_eval(whole, {}, "--run-id", "whole", *[f"--case-id={c}" for c in cases]))
    for job in jobs:
        output = job.communicate(timeout=900)[0]
        assert job.returncode == 0, output
    return root, shards, whole


def test_slurm_array_shards_merge_into_one_run_with_the_unsharded_results(shard_logs) -> None:
    root, shards, whole = shard_logs
    for i, shard in enumerate(shards):
        started = EventLog(shard).sql("SELECT run_id, payload->>'$.benchmark.shard_index' AS i FROM events WHERE type = 'run.started'")
        assert started.to_pylist() == [{"run_id": "exp", "i": str(i)}]  # one run id, shard from SLURM_ARRAY_TASK_ID
    merged = root / "merged.duckdb"
    result = CliRunner().invoke(cli, ["--db", str(merged), "log", "merge", *map(str, shards)])
    assert result.exit_code == 0, result.output
    assert "every chain intact and complete" in result.output
    log = EventLog(merged)
    assert log.sql("SELECT run_id, status, label, episodes_planned, episodes_finished FROM runs").to_pylist() == [
        {"run_id": "exp", "status": "completed", "label": "rollouts=1 seed=1729 shards=2/2", "episodes_planned": 8, "episodes_finished": 8}
    ]
    expected = EventLog(whole).sql(PER_EPISODE, ["whole"]).to_pylist()
    got = log.sql(PER_EPISODE, ["exp"]).to_pylist()
    assert [row["case_id"] for row in got] == sorted(c for i in range(SHARDS) for c in _sharded_cases(i))
    assert got == expected
    # Exactly one copy of each shared import (gold, protocols, policy), one shard record per folded shard.
    kinds = log.sql("SELECT payload->>'kind' AS kind, count(*) AS n FROM events WHERE type = 'artifact.imported' GROUP BY 1 ORDER BY 1").to_pylist()
    assert {k["kind"]: k["n"] for k in kinds}["log_shard"] == SHARDS - 1
    assert all(k["n"] == 1 for k in kinds)

    # Merging the shards again, in either order, changes nothing.
    before = log.sql("SELECT seq, hash FROM events ORDER BY seq").to_pylist()
    again = CliRunner().invoke(cli, ["--db", str(merged), "log", "merge", *map(str, reversed(shards))])
    assert again.exit_code == 0, again.output
    assert again.output.count(": 0 events, 0 blobs merged") == SHARDS
    assert log.sql("SELECT seq, hash FROM events ORDER BY seq").to_pylist() == before


def test_a_shard_alone_or_half_merged_is_an_incomplete_run(shard_logs) -> None:
    """A run of two shards with one in the log has finished only part of its cases: `runs`
    says `incomplete` (not `completed`), in the shard's own log and after merging it alone."""
    root, shards, _whole = shard_logs
    half = root / "half.duckdb"
    result = CliRunner().invoke(cli, ["--db", str(half), "log", "merge", str(shards[1])])
    assert result.exit_code == 0, result.output
    for db in (shards[0], half):
        assert EventLog(db).sql("SELECT status, label, episodes_planned, episodes_finished FROM runs").to_pylist() == [
            {"status": "incomplete", "label": f"rollouts=1 seed=1729 shard={0 if db == shards[0] else 1}/2",
             "episodes_planned": 4, "episodes_finished": 4}
        ]


def test_a_run_of_more_shards_than_cases_is_whole_once_its_shards_with_cases_are_merged(tmp_path: Path) -> None:
    """Three shards of two cases: the third selects none. It failed (an empty selection) and
    wrote no log, and the merged run read incomplete for good. Each shard records the cases
    its shards split, so the two with cases make the run whole; the third records its run with
    no episode (exit 0, for a job array), and merging it too changes nothing."""
    cases = ("--case-id", "demo-0001", "--case-id", "demo-0002", "--shard-count", "3", "--run-id", "few")
    jobs = [_eval(tmp_path / f"s{i}.duckdb", {}, *cases, "--shard-index", str(i)) for i in range(3)]
    outputs = [job.communicate(timeout=300)[0] for job in jobs]
    assert [job.returncode for job in jobs] == [0, 0, 0], outputs
    assert "run few: 0 of 0 episodes ran (nothing left to run); status incomplete\n" in outputs[2]
    merged = tmp_path / "merged.duckdb"
    standing = "SELECT status, label, episodes_planned, episodes_finished FROM runs"
    for shards, label in ((2, "shards=2/3"), (3, "shards=3/3")):
        result = CliRunner().invoke(cli, ["--db", str(merged), "log", "merge", *(str(tmp_path / f"s{i}.duckdb") for i in range(shards))])
        assert result.exit_code == 0, result.output
        assert EventLog(merged).sql(standing).to_pylist() == [
            {"status": "completed", "label": f"rollouts=1 seed=1729 {label}", "episodes_planned": 2, "episodes_finished": 2}
        ]
    one = tmp_path / "one.duckdb"
    assert CliRunner().invoke(cli, ["--db", str(one), "log", "merge", str(tmp_path / "s0.duckdb")]).exit_code == 0
    assert EventLog(one).sql(standing).to_pylist()[0]["status"] == "incomplete"


def test_a_shard_run_says_its_other_shards_are_missing(tmp_path: Path) -> None:
    job = _eval(tmp_path / "s.duckdb", {}, "--shard-count", "2", "--shard-index", "1", "--limit", "1", "--run-id", "s")
    output = job.communicate(timeout=300)[0]
    assert job.returncode == 0, output  # the shard did all it had to do
    assert "run s: 1 of 1 episodes ran (completed 1); status incomplete\n" in output
    assert "its other shards are not in this log: `eviscene log merge` their logs" in output


def test_the_run_directory_of_merged_shards_is_in_case_id_order_whatever_the_merge_order(shard_logs, tmp_path: Path) -> None:
    """A sharded run's cases are sorted by case_id (each shard's run directory is): so are its
    merged shards', the same bytes whichever shard was merged first, its manifest included:
    shard 0's run.started blocks (no one shard's index) and start, the finish of the shard that finished last (merging
    renumbers the later shard, so "first by seq" was whichever was merged first)."""
    _root, shards, _whole = shard_logs
    files = {}
    for name, order in (("ab", shards), ("ba", list(reversed(shards)))):
        merged = tmp_path / f"{name}.duckdb"
        assert CliRunner().invoke(cli, ["--db", str(merged), "log", "merge", *map(str, order)]).exit_code == 0
        out = tmp_path / name
        result = CliRunner().invoke(cli, ["--db", str(merged), "materialize", "exp", "--out", str(out)])
        assert result.exit_code == 0, result.output
        files[name] = {p.name: p.read_bytes() for p in out.glob("*.json*")}
    assert files["ab"] == files["ba"] and len(files["ab"]) > 5 and "run_manifest.json" in files["ab"]
    predicted = [json.loads(line)["case_id"] for line in files["ab"]["predictions.jsonl"].splitlines()]
    assert predicted == sorted(c for i in range(SHARDS) for c in _sharded_cases(i))
    own = [EventLog(shard).sql("SELECT type, ts, payload::VARCHAR AS p FROM events WHERE type IN ('run.started', 'run.finished')")
           .to_pylist() for shard in shards]
    starts = [json.loads(e["p"]) for events in own for e in events if e["type"] == "run.started"]
    last_finish = max((e for events in own for e in events if e["type"] == "run.finished"), key=lambda e: e["ts"])
    manifest = json.loads(files["ab"]["run_manifest.json"])
    assert manifest["benchmark"]["shard_index"] is None and manifest["started_at"] == starts[0]["started_at"]
    assert manifest["benchmark"]["release_id"] == starts[0]["benchmark"]["release_id"]
    assert manifest["completed_at"] == json.loads(last_finish["p"])["completed_at"]


def test_a_merge_whose_reader_stops_early_still_takes_in_every_shard(shard_logs, tmp_path: Path) -> None:
    """`log merge A B | head -1`: the reader leaves (here before the first line); B is merged all the same."""
    _root, shards, _whole = shard_logs
    merged = tmp_path / "merged.duckdb"
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run([EVISCENE, "--db", str(merged), "log", "merge", *map(str, shards)], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=600)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (0, "")
    assert EventLog(merged).sql("SELECT episodes_finished FROM runs").to_pylist() == [{"episodes_finished": 8}]


def test_a_folded_shards_own_chain_is_checked_by_verify(shard_logs, tmp_path: Path) -> None:
    _root, shards, _whole = shard_logs
    merged = tmp_path / "merged.duckdb"
    for shard in shards:
        EventLog(merged).merge(shard)
    assert EventLog(merged).verify().ok
    # Forge an event of the folded shard and re-chain the run after it (and its sealed record):
    # the run's chain is whole again, but the shard's own chain no longer reaches its recorded head.
    con = duckdb.connect(str(merged))
    record_seq = con.execute("SELECT seq FROM events WHERE type = 'artifact.imported' AND payload->>'kind' = 'log_shard'").fetchone()[0]
    rows = con.execute(
        "SELECT seq, event_id, epoch_us(ts), episode_id, attempt, type, step, payload::VARCHAR, prev_hash FROM events "
        "WHERE run_id = 'exp' AND seq > ? ORDER BY seq", [record_seq + 2]
    ).fetchall()
    prev_hash = rows[0][8]
    for number, (seq, event_id, ts, episode_id, attempt, type_, step, payload, _prev) in enumerate(rows):
        if number == 0:
            payload = json.dumps({**json.loads(payload), "forged": True}, separators=(",", ":"))
        new_hash = event_hash(prev_hash, seq, event_id, ts, content_digest("exp", episode_id, attempt, type_, step, payload))
        con.execute("UPDATE events SET payload = ?, prev_hash = ?, hash = ? WHERE run_id = 'exp' AND seq = ?", [payload, prev_hash, new_hash, seq])
        prev_hash = new_hash
    con.execute("UPDATE sealed_segments SET last_hash = ? WHERE run_id = 'exp' AND last_seq = ?", [prev_hash, rows[-1][0]])
    con.close()
    problems = [str(p) for p in EventLog(merged).verify().problems]
    assert len(problems) == 1 and "merged shard's own chain" in problems[0], problems


def _stranger(tmp_path: Path) -> EventLog:
    """A finished run named `exp` that is no shard of the fixture's run."""
    stranger = EventLog(tmp_path / "stranger.duckdb")
    stranger.append("exp", [EventDraft(GateDecided(gate="g", subject="s", passed=True)), EventDraft(
        RunFinished(status="completed", completed_at="2026-12-01T00:00:00+00:00", num_episodes=0, num_errors=0))])
    return stranger


def test_a_different_run_of_the_same_name_is_still_refused(shard_logs, tmp_path: Path) -> None:
    _root, shards, _whole = shard_logs
    stranger = _stranger(tmp_path)
    merged = tmp_path / "merged.duckdb"
    EventLog(merged).merge(shards[0])
    before = EventLog(merged).sql("SELECT count(*) AS n FROM events").to_pylist()
    refused = CliRunner().invoke(cli, ["--db", str(merged), "log", "merge", str(stranger.path)])
    assert refused.exit_code == 2
    assert refused.output.startswith("Error: run exp exists in both logs with different events, and ")
    assert "is not one shard of it" in refused.output
    assert EventLog(merged).sql("SELECT count(*) AS n FROM events").to_pylist() == before
    # A log whose shard 0 came folded (after shard 1) takes in nothing from one holding shard 0 as is.
    both = tmp_path / "both.duckdb"
    EventLog(both).merge(shards[1])
    EventLog(both).merge(shards[0])
    again = CliRunner().invoke(cli, ["--db", str(both), "log", "merge", str(merged)])
    assert again.exit_code == 0, again.output
    assert ": 0 events, 0 blobs merged" in again.output


def test_a_shard_that_grew_after_it_was_merged_is_refused_naming_the_way_out(shard_logs, tmp_path: Path) -> None:
    """A shard's errors retried in its own log after the merge: its log now holds the merged
    events and more, which the refusal called "other events", with no way forward."""
    _root, shards, _whole = shard_logs
    merged = tmp_path / "merged.duckdb"
    EventLog(merged).merge(shards[0])
    EventLog(merged).merge(shards[1])
    grown = tmp_path / "shard-1.duckdb"
    shutil.copy(shards[1], grown)
    head = EventLog(grown).sql("SELECT max(seq) AS seq FROM events").to_pylist()[0]["seq"]

    async def resume() -> None:  # what a resume appends: its events, then the run's end again
        async with EventLog(grown).writer("exp") as writer:
            await writer.emit(EventDraft(GateDecided(gate="g", subject="s", passed=True)))
            await writer.emit(EventDraft(RunFinished(status="completed", completed_at="2026-12-07T00:00:00+00:00", num_episodes=4, num_errors=0)))

    anyio.run(resume)
    refused = CliRunner().invoke(cli, ["--db", str(merged), "log", "merge", str(grown)])
    assert (refused.exit_code, refused.output) == (2, (
        f"Error: run exp exists in both logs with different events: shard 1/2 is merged already, and {grown} has grown since "
        f"(events after seq {head}: a resume in its own log); a merged shard takes no more events: merge every shard's own log "
        "into a new log to hold them; not merged\n"
    ))
    remade = tmp_path / "remade.duckdb"
    EventLog(remade).merge(shards[0])
    EventLog(remade).merge(grown)
    assert EventLog(remade).sql("SELECT count(*) AS n FROM events WHERE type = 'gate.decided' AND payload->>'gate' = 'g'").to_pylist() == [{"n": 1}]


def test_a_resume_of_merged_shards_in_the_merged_log_names_the_way_that_works(shard_logs, tmp_path: Path) -> None:
    """The merged log holds every shard's episodes, the resume plans the first shard's: it
    said "the release no longer yields the run's scheduled episodes (e.g. [])"."""
    _root, shards, _whole = shard_logs
    merged = tmp_path / "merged.duckdb"
    for shard in shards:
        EventLog(merged).merge(shard)
    refused = CliRunner().invoke(cli, ["--db", str(merged), "eval", "resume", "exp", "--no-materialize"])
    assert (refused.exit_code, refused.stderr) == (2, (
        "Error: run exp holds the episodes of shards merged into this log: a sharded run is resumed shard by shard, each in "
        "its own log (`eviscene --db SHARD eval resume exp`), then merged again into a new log\n"
    ))
    assert EventLog(merged).verify().ok


def test_an_unfinished_shard_is_refused_before_any_source_is_taken_in(shard_logs, tmp_path: Path) -> None:
    """A killed shard merged beside a finished one read as finished (the other's run.finished
    closed the run's chain) and, once resumed in its own log, could never be merged again: it
    is refused, with the resume that finishes it, before the sources named before it go in."""
    _root, shards, _whole = shard_logs
    killed = EventLog(tmp_path / "killed.duckdb")
    killed.append("exp", [EventDraft(RunStarted(
        started_at="2026-12-01T00:00:00+00:00", git_commit="test", agent={}, source_access_policy={},
        benchmark={"release_id": "r", "shard_count": 2, "shard_index": 1}))])
    merged = tmp_path / "merged.duckdb"
    refused = CliRunner().invoke(cli, ["--db", str(merged), "log", "merge", str(shards[0]), str(killed.path)])
    assert (refused.exit_code, refused.output) == (2, (
        f"Error: {killed.path} not merged: shard 1/2 of run exp is unfinished (no run.finished); "
        f"`eviscene --db {killed.path} eval resume exp` finishes it, then merge it; nothing was taken in\n"))
    assert not merged.exists() or EventLog(merged).sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 0}]
    # A crashed one (run.finished failed, episodes left) the same: its resume could not be merged after it either.
    crashed = EventLog(tmp_path / "crashed.duckdb")
    crashed.append("exp", [EventDraft(RunStarted(
        started_at="2026-12-01T00:00:00+00:00", git_commit="test", agent={}, source_access_policy={},
        benchmark={"release_id": "r", "shard_count": 2, "shard_index": 1})), EventDraft(
        RunFinished(status="failed", completed_at="2026-12-01T00:00:00+00:00", num_episodes=0, num_errors=0))])
    refused = CliRunner().invoke(cli, ["--db", str(merged), "log", "merge", str(crashed.path)])
    assert (refused.exit_code, refused.output) == (2, (
        f"Error: {crashed.path} not merged: shard 1/2 of run exp is unfinished (its last invocation failed); "
        f"`eviscene --db {crashed.path} eval resume exp` finishes it, then merge it; nothing was taken in\n"))


def test_a_source_refused_while_merging_names_the_sources_merged_before_it(shard_logs, tmp_path: Path) -> None:
    _root, shards, _whole = shard_logs
    stranger = _stranger(tmp_path)
    merged = tmp_path / "merged.duckdb"
    refused = CliRunner().invoke(cli, ["--db", str(merged), "log", "merge", str(shards[0]), str(stranger.path)])
    assert refused.exit_code == 2
    assert refused.output.endswith(f"is not one shard of it (--shard-count); not merged; merged before it: {shards[0]}\n")


def test_a_log_holding_several_shards_merged_already_is_refused_as_such(tmp_path: Path) -> None:
    """It was refused as `is not one shard of it (--shard-count)`, though it holds shards of that very run."""
    def shard(index: int) -> Path:
        log = EventLog(tmp_path / f"shard-{index}.duckdb")
        log.append("exp", [EventDraft(RunStarted(
            started_at="2026-12-01T00:00:00+00:00", git_commit="test", agent={}, source_access_policy={},
            benchmark={"release_id": "r", "shard_count": 4, "shard_index": index})), EventDraft(
            RunFinished(status="completed", completed_at="2026-12-01T00:00:00+00:00", num_episodes=0, num_errors=0))])
        return log.path

    first_half, second_half = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    EventLog(first_half).merge_all([shard(0), shard(1)])
    EventLog(second_half).merge_all([shard(2), shard(3)])
    before = EventLog(first_half).sql("SELECT count(*) AS n FROM events").to_pylist()
    refused = CliRunner().invoke(cli, ["--db", str(first_half), "log", "merge", str(second_half)])
    assert (refused.exit_code, refused.output) == (2, (
        f"Error: run exp exists in both logs with different events: {second_half} holds shards 2 and 3 of its 4, merged there "
        "already; merge each shard's own log here, one at a time; not merged\n"))
    assert EventLog(first_half).sql("SELECT count(*) AS n FROM events").to_pylist() == before
    taken = CliRunner().invoke(cli, ["--db", str(first_half), "log", "merge", str(tmp_path / "shard-2.duckdb"), str(tmp_path / "shard-3.duckdb")])
    assert taken.exit_code == 0, taken.output
    assert EventLog(first_half).verify().ok


def test_a_shard_scored_by_another_gold_file_is_refused(shard_logs, tmp_path: Path) -> None:
    """Each shard pins the gold it read; one whose gold differs would leave the merged run two
    gold files, its scores read from whichever came last."""
    _root, shards, _whole = shard_logs
    release = tmp_path / "release"
    shutil.copytree(RELEASE.parents[1], release)
    gold = release / "private" / "evaluation_gold.jsonl"
    gold.write_text(gold.read_text().replace('"label": "unverifiable"', '"label": "authentic"', 1))
    other = tmp_path / "other-gold.duckdb"
    job = subprocess.run(
        [EVISCENE, "--db", str(other), "eval", "run", "--benchmark", str(release / "runtime_input" / "cases.jsonl"),
         "--no-materialize", "--no-progress", "--limit", "4", "--output-dir", str(tmp_path / "runs" / "exp")],
        env={**os.environ, "SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": str(SHARDS)},
        capture_output=True, text=True, timeout=900,
    )
    assert job.returncode == 0, job.stdout + job.stderr
    merged = tmp_path / "merged.duckdb"
    EventLog(merged).merge(shards[0])
    before = EventLog(merged).sql("SELECT count(*) AS n FROM events").to_pylist()
    refused = CliRunner().invoke(cli, ["--db", str(merged), "log", "merge", str(other)])
    assert refused.exit_code == 2
    ours, theirs = (hashlib.sha256(path.read_bytes()).hexdigest() for path in (RELEASE.parents[1] / "private" / "evaluation_gold.jsonl", gold))
    assert refused.output == (
        f"Error: run exp exists in both logs with different events: {other} was scored by another evaluation_gold "
        f"(sha256 {theirs}, here {ours}); not merged\n"
    )
    assert EventLog(merged).sql("SELECT count(*) AS n FROM events").to_pylist() == before


def _other_shard_1(tmp_path: Path, *flags: str, env: dict[str, str] | None = None, benchmark: Path = RELEASE) -> Path:
    """Shard 1 of run `exp` (the fixture's run) in its own log, run with `flags` and `env`."""
    log = tmp_path / "other-shard-1.duckdb"
    job = subprocess.run(
        [EVISCENE, "--db", str(log), "eval", "run", "--benchmark", str(benchmark), "--no-materialize", "--no-progress",
         "--limit", "4", "--output-dir", str(tmp_path / "runs" / "exp"), *flags],
        env={**os.environ, "SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": str(SHARDS), **(env or {})},
        capture_output=True, text=True, timeout=900, check=False,
    )
    assert job.returncode == 0, job.stdout + job.stderr
    return log


def _refused_and_unchanged(merged: Path, other: Path, reason: str) -> None:
    """Merging `other` into `merged` is refused for `reason`, and nothing is written."""
    log = EventLog(merged)
    state = "SELECT (SELECT list((run_id, seq, hash) ORDER BY run_id, seq) FROM events) AS e, (SELECT count(*) FROM blobs) AS b"
    before, archive = log.sql(state).to_pylist(), hashlib.sha256(merged.read_bytes()).hexdigest()
    refused = CliRunner().invoke(cli, ["--db", str(merged), "log", "merge", str(other)])
    assert (refused.exit_code, refused.output) == (
        2, f"Error: run exp exists in both logs with different events: {other} ran it with {reason}; not merged\n"
    )
    assert log.sql(state).to_pylist() == before
    assert hashlib.sha256(merged.read_bytes()).hexdigest() == archive


def test_a_shard_run_with_other_settings_is_refused_naming_the_first_flag(shard_logs, tmp_path: Path) -> None:
    """A shard of 3 rollouts, seed 99, without web search is not half of a 1-rollout run of
    seed 1729 (`runs` would label the whole run by one of them): refused, its flag named."""
    _root, shards, _whole = shard_logs
    other = _other_shard_1(tmp_path, "--rollouts-per-case", "3", "--base-sampling-seed", "99", "--disable-web-search")
    merged = tmp_path / "merged.duckdb"
    EventLog(merged).merge(shards[0])
    _refused_and_unchanged(merged, other, "--rollouts-per-case 3, here 1")


def test_a_shard_built_from_another_commit_is_refused(shard_logs, tmp_path: Path) -> None:
    """The commit names the agent's policy and goes into every prompt_group_id: two commits
    are two runs. (GIT_DIR hides the checkout, so the run records GIT_COMMIT as its commit.)"""
    _root, shards, _whole = shard_logs
    other = _other_shard_1(tmp_path, env={"GIT_DIR": str(tmp_path / "no-git"), "GIT_COMMIT": "f" * 40})
    [here] = EventLog(shards[0]).sql("SELECT payload->>'git_commit' AS c FROM events WHERE type = 'run.started'").to_pylist()
    assert here["c"] != "f" * 40
    merged = tmp_path / "merged.duckdb"
    EventLog(merged).merge(shards[0])
    _refused_and_unchanged(merged, other, f"git commit {'f' * 40}, here {here['c']}")


def test_shards_differing_only_in_per_machine_settings_merge(shard_logs, tmp_path: Path) -> None:
    """Another copy of the release (other paths, same bytes), another --concurrency and another
    --provider-outage-timeout are the shard's machine, not its run: merged."""
    _root, shards, _whole = shard_logs
    release = tmp_path / "release"
    shutil.copytree(RELEASE.parents[1], release)
    other = _other_shard_1(tmp_path, "--concurrency", "2", "--provider-outage-timeout", "45",
                           benchmark=release / "runtime_input" / "cases.jsonl")
    merged = tmp_path / "merged.duckdb"
    result = CliRunner().invoke(cli, ["--db", str(merged), "log", "merge", str(shards[0]), str(other)])
    assert result.exit_code == 0, result.output
    assert EventLog(merged).sql("SELECT label, episodes_finished FROM runs").to_pylist() == [
        {"label": "rollouts=1 seed=1729 shards=2/2", "episodes_finished": 8}
    ]


def test_a_differing_setting_is_named_as_the_user_sets_it() -> None:
    keys = ("config.case_ids", "config.rollouts_per_case", "config.tool_cache_ttl_seconds", "config.ocr_cache_version",
            "git_commit", "agent.model")
    assert [_named(key) for key in keys] == [
        "--case-id", "--rollouts-per-case", "--tool-cache-ttl", "ocr_cache_version (from the environment)", "git commit", "agent.model"]


@pytest.fixture(scope="module")
def three_shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path], list]:
    """Run `tri` in 3 shards of one case each (the release's first 3 case ids, sorted), each
    in its own log and asked for its run directory, as on its own machine: a directory one
    wrote is moved aside (`written`) before the next runs."""
    root = tmp_path_factory.mktemp("three")
    logs = [root / f"s{i}.duckdb" for i in range(3)]
    results = []
    for index, log in enumerate(logs):
        results.append(CliRunner().invoke(cli, [
            "--db", str(log), "eval", "run", "--benchmark", str(RELEASE), "--no-progress", "--limit", "1", "--shard-count", "3",
            "--shard-index", str(index), "--output-dir", str(root / "runs" / "tri")]))
        if (root / "runs" / "tri").exists():
            (root / "runs" / "tri").rename(root / f"written-{index}")
    return root, logs, results


def test_a_shards_own_run_writes_the_cases_it_ran_as_an_incomplete_run(three_shards) -> None:
    """A shard's `eval run` writes its share as the seed's shard writes its own (materialize's
    refusal of a half-merged run is for a run the user takes to be whole), its manifest
    `incomplete`: one case a shard, nothing on stderr."""
    root, _logs, results = three_shards
    assert [(result.exit_code, result.stderr) for result in results] == 3 * [(0, "")], [result.output for result in results]
    for index in range(3):
        manifest = json.loads((root / f"written-{index}" / "run_manifest.json").read_text())
        rows = (root / f"written-{index}" / "run_results.jsonl").read_text().splitlines()
        assert (manifest["status"], manifest["benchmark"]["shard_index"], len(rows)) == ("incomplete", index, 1)


def test_a_half_merged_run_is_refused_by_materialize_and_named_by_a_dataset_export(three_shards, tmp_path: Path) -> None:
    """Shards 0 and 1 of 3 merged (shard 2's task never wrote its log, so `shard-*.duckdb`
    missed it): `materialize` wrote the two cases as the run, exit 0, and `dataset export`
    exported them without a word, though `runs` read `incomplete`."""
    _root, logs, _results = three_shards
    half = tmp_path / "half.duckdb"
    EventLog(half).merge_all(logs[:2])
    assert EventLog(half).view("run_shards").to_pylist() == [
        {"run_id": "tri", "shard_count": 3, "shards_needed": 3, "shards_merged": [0, 1], "shards_unmerged": [2]}]
    refused = CliRunner().invoke(cli, ["--db", str(half), "materialize", "tri", "--out", str(tmp_path / "out")])
    assert (refused.exit_code, refused.stderr) == (2, (
        f"Error: run tri is incomplete: shard 2 of its 3 is not in this log; `eviscene --db {half} log merge` the missing shards' "
        "logs into this one, then materialize it (--unfinished-as-errors writes the shards it holds now)\n"))
    assert not (tmp_path / "out").exists()
    exported = CliRunner().invoke(cli, ["--db", str(half), "dataset", "export", "--run", "tri", "--out", str(tmp_path / "ds"),
                                        "--allow-training-prohibited"])
    assert exported.exit_code == 0, exported.output
    assert " of 2 candidates " in exported.stdout
    assert exported.stderr == (f"note: run tri is incomplete: shard 2 of its 3 is not in this log: this export holds none of the "
                               f"missing shards' episodes; `eviscene --db {half} log merge` their logs into this one\n")
    asked = CliRunner().invoke(cli, ["--db", str(half), "materialize", "tri", "--out", str(tmp_path / "out"), "--unfinished-as-errors"])
    assert asked.exit_code == 0, asked.output
    manifest = json.loads((tmp_path / "out" / "run_manifest.json").read_text())
    assert (manifest["status"], len((tmp_path / "out" / "run_results.jsonl").read_text().splitlines())) == ("incomplete", 2)


def test_a_merged_runs_manifest_counts_the_runs_episodes_not_its_first_shards(three_shards, tmp_path: Path) -> None:
    """The merged run's run_manifest.json said `episode_count: 1, sample_count: 1, shard_index: 0`
    (shard 0's run.started) beside `result.num_episodes: 3`."""
    _root, logs, _results = three_shards
    whole = tmp_path / "whole.duckdb"
    EventLog(whole).merge_all(list(reversed(logs)))
    written = CliRunner().invoke(cli, ["--db", str(whole), "materialize", "tri", "--out", str(tmp_path / "out")])
    assert written.exit_code == 0, written.output
    manifest = json.loads((tmp_path / "out" / "run_manifest.json").read_text())
    benchmark = {key: manifest["benchmark"][key] for key in ("episode_count", "sample_count", "shard_count", "shard_index")}
    assert (manifest["status"], benchmark, manifest["result"]) == (
        "completed", {"episode_count": 3, "sample_count": 3, "shard_count": 3, "shard_index": None},
        {"num_samples": 3, "num_episodes": 3, "num_errors": 0})
    # a shard alone, written all the same, is that shard's
    alone = tmp_path / "alone"
    asked = CliRunner().invoke(cli, ["--db", str(logs[1]), "materialize", "tri", "--out", str(alone), "--unfinished-as-errors"])
    assert asked.exit_code == 0, asked.output
    shard = json.loads((alone / "run_manifest.json").read_text())["benchmark"]
    assert (shard["episode_count"], shard["sample_count"], shard["shard_index"]) == (1, 1, 1)


def _bare_shard(path: Path, **benchmark: object) -> Path:
    """A finished shard of run `exp` with no episode, its run.started's benchmark block `benchmark`."""
    log = EventLog(path)
    log.append("exp", [EventDraft(RunStarted(
        started_at="2026-12-01T00:00:00+00:00", git_commit="test", agent={}, source_access_policy={}, benchmark=benchmark)),
        EventDraft(RunFinished(status="completed", completed_at="2026-12-01T00:00:00+00:00", num_episodes=0, num_errors=0))])
    return log.path


@pytest.mark.parametrize(("theirs", "reason"), [
    ({"shard_count": 13, "shard_index": 1}, "--shard-count 13, here 14"),
    ({"release_id": "r2", "shard_count": 14, "shard_index": 1}, "release r2, here r"),
    ({"sha256": "b" * 64, "shard_count": 14, "shard_index": 1}, f"cases sha256 {'b' * 64}, here {'a' * 64}"),
])
def test_a_shard_of_another_shard_count_release_or_cases_is_refused_naming_it(tmp_path: Path, theirs: dict, reason: str) -> None:
    """It was refused as `ran another release, cases or --shard-count`, naming neither which nor the values."""
    merged = tmp_path / "merged.duckdb"
    EventLog(merged).merge(_bare_shard(tmp_path / "s0.duckdb", release_id="r", sha256="a" * 64, shard_count=14, shard_index=0))
    other = _bare_shard(tmp_path / "other.duckdb", **{"release_id": "r", "sha256": "a" * 64, **theirs})
    _refused_and_unchanged(merged, other, reason)


def test_a_shard_merged_into_a_log_holding_the_unsharded_run_names_the_shard_count(tmp_path: Path) -> None:
    merged = tmp_path / "merged.duckdb"
    EventLog(merged).merge(_bare_shard(tmp_path / "whole.duckdb", release_id="r", sha256="a" * 64, shard_count=1, shard_index=0))
    other = _bare_shard(tmp_path / "other.duckdb", release_id="r", sha256="a" * 64, shard_count=2, shard_index=1)
    _refused_and_unchanged(merged, other, "--shard-count 2, here 1")


def test_a_run_lacking_many_shards_is_refused_naming_the_first_five(tmp_path: Path) -> None:
    shard = _bare_shard(tmp_path / "s0.duckdb", release_id="r", shard_count=8, shard_index=0)
    refused = CliRunner().invoke(cli, ["--db", str(shard), "materialize", "exp", "--out", str(tmp_path / "out")])
    assert (refused.exit_code, refused.stderr) == (2, (
        f"Error: run exp is incomplete: shards 1, 2, 3, 4, 5, … (7 of its 8) are not in this log; `eviscene --db {shard} log merge` "
        "the missing shards' logs into this one, then materialize it (--unfinished-as-errors writes the shards it holds now)\n"))
