"""A live run's runs row and dashboard from the per-episode rows the viewer keeps across looks
(eviscene/viewer/live_rows.py): after new events arrive only the episodes they belong to
are computed again and folded in, and every number equals the views' over the same snapshot
and a computation from scratch; a retried episode is counted once (its final attempt);
a new event of no episode (run.finished) computes every row again. Events are written by
the real writer while no writer holds the run; expectations are the views queried directly
and, for this run, hand-computed."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path

import anyio
import pytest

from eviscene.events import (
    ArtifactImported, EpisodeFinished, EpisodeScheduled, EpisodeStarted, JudgmentMade, ModelCalled, RunFinished, RunStarted,
    TokenUsage, ToolCalled, ToolCallRequest, ToolReturned,
)
from eviscene.errors import EvisceneError
from eviscene.log import EventLog
from eviscene.store import EventDraft
from eviscene.viewer import data
from eviscene.viewer.results_cache import ResultCache
from test_precomputed import _page_numbers, _views_numbers

LABELS = ["authentic", "out_of_context", "manipulated", "unverifiable"]
RUN = "live-rows-run"
GOLD = {0: "authentic", 1: "out_of_context", 2: "manipulated"}  # three cases, two rollouts each


# The model request every call cites, stored as the run's writer stores one (a seal refuses a
# run citing a blob the log lacks).
REQUEST = b'{"messages": []}'
REQUEST_SHA256 = hashlib.sha256(REQUEST).hexdigest()


def _episode_id(case: int, rollout: int) -> str:
    return f"case-{case}--r{rollout:03d}"


def _attempt(case: int, rollout: int, attempt: int, verdict: str | None) -> list[EventDraft]:
    """One attempt: a tool call (latency 100 ms x (case + 1)) between two model calls (10
    prompt tokens each), then the verdict; no verdict: the attempt ends in error."""
    call = ToolCallRequest(id=f"call-{attempt}", name="visit", arguments={"url": f"https://site.example/{case}"})
    payloads = [
        EpisodeStarted(attempt=attempt, started_at="2026-11-30T00:00:00+00:00"),
        ModelCalled(stage="unified_react", provider="offline", model="m", request_sha256=REQUEST_SHA256, tool_calls=[call],
                    usage=TokenUsage(prompt_tokens=10, completion_tokens=2, total_tokens=12), latency_ms=50.0),
        ToolCalled(call_id=call.id, tool="visit", arguments=call.arguments, arguments_sha256=f"{case}"),
        ToolReturned(call_id=call.id, tool="visit", status="ok", observation="page", latency_ms=100.0 * (case + 1)),
        ModelCalled(stage="unified_judgment", provider="offline", model="m", request_sha256=REQUEST_SHA256, content="{}",
                    usage=TokenUsage(prompt_tokens=10, completion_tokens=2, total_tokens=12), latency_ms=50.0),
    ]
    if verdict is None:
        payloads.append(EpisodeFinished(termination="error", error="provider down", time_taken=1.0, total_tool_calls=1, llm_api_calls=2))
    else:
        payloads += [JudgmentMade(verdict=verdict, confidence=0.9 - 0.1 * case, verdict_basis=[]),
                     EpisodeFinished(termination="completed", time_taken=2.0 + case, total_tool_calls=1, llm_api_calls=2)]
    return [EventDraft(p, episode_id=_episode_id(case, rollout), attempt=attempt, step=i) for i, p in enumerate(payloads)]


async def _write(log: EventLog, drafts: list[EventDraft]) -> None:
    async with log.writer(RUN) as writer:
        for draft in drafts:
            await writer.emit(draft)


async def _start(log: EventLog) -> None:
    gold = "".join(json.dumps({"case_id": f"case-{c}", "label": label, "reference_chain": {}}) + "\n" for c, label in GOLD.items())
    async with log.writer(RUN) as writer:
        await writer.emit(EventDraft(RunStarted(
            started_at="2026-11-30T00:00:00+00:00", git_commit="test",
            benchmark={"release_id": "r", "release_stage": "frozen_eval", "path": "/r/cases.jsonl",
                       "training_prohibited": False, "runtime_contract_version": "v"},
            agent={"max_tool_actions": 4, "provider": "offline", "model": "m", "rollouts_per_case": 2},
            source_access_policy={"active": False}, config={"label_set": LABELS})))
        await writer.put_blob(REQUEST, "application/json")
        sha = await writer.put_blob(gold.encode(), "application/jsonl")
        await writer.emit(EventDraft(ArtifactImported(kind="evaluation_gold", path="/r/gold.jsonl", sha256=sha, blob_sha256=sha, rows=3)))
        for case in GOLD:
            for rollout in range(2):
                await writer.emit(EventDraft(EpisodeScheduled(
                    case_id=f"case-{case}", prompt_group_id=f"pg-{case}", rollout_index=rollout, group_size=2,
                    sampling_seed=case * 2 + rollout, image_sha256="0" * 64, image_path="runtime_input/images/x.jpg"),
                    episode_id=_episode_id(case, rollout)))
    # Case 0: both rollouts (r000 right, r001 wrong); case 1's rollout 0 errors on its first attempt.
    await _write(log, _attempt(0, 0, 1, "authentic") + _attempt(0, 1, 1, "manipulated") + _attempt(1, 0, 1, None))


def _numbers(log: EventLog, cache: ResultCache) -> tuple[dict, dict, dict]:
    run = data.known_run(log, RUN, cache)
    board = data.dashboard(log, RUN, cache)
    return run, board, _page_numbers(run, board)


def _from_scratch(log: EventLog, tmp_path: Path, name: str) -> tuple[dict, dict]:
    """The same snapshot's numbers computed with nothing kept: every view over the whole run."""
    cache = ResultCache(log.path, tmp_path / name)
    return data.known_run(log, RUN, cache), data.dashboard(log, RUN, cache)


def _views_extra(log: EventLog) -> dict:
    """Numbers of the dashboard's other plots, asked of the views directly."""
    con = log.connect()
    try:
        ask = lambda sql: con.execute(sql, [RUN]).fetchall()
        return {
            "tool_latency": ask("SELECT tool, count(*), median(latency_ms), max(latency_ms) FROM tool_calls "
                                "WHERE run_id = ? AND latency_ms IS NOT NULL GROUP BY ALL ORDER BY tool"),
            "groups": ask("SELECT count(DISTINCT prompt_group_id), count(DISTINCT prompt_group_id) FILTER (WHERE is_std_zero) "
                          "FROM post_rollout_rewards WHERE run_id = ?"),
            "rewards": ask("SELECT count(*) FROM post_rollout_rewards WHERE run_id = ? AND reward IS NOT NULL"),
        }
    finally:
        con.close()


def _board_extra(board: dict) -> dict:
    return {
        "tool_latency": [(r["tool"], r["calls"], r["median"], r["max"]) for r in board["tool_latency"]],
        "groups": [(board["groups"][0]["groups"], board["groups"][0]["zero_variance_groups"])],
        "rewards": [(sum(b["n"] for b in board["histograms"]["reward"]),)],
    }


def test_new_episodes_and_a_retried_one_are_folded_in_and_every_number_equals_the_views(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    anyio.run(_start, log)
    cache = ResultCache(log.path, tmp_path / "runtime")
    run, board, shown = _numbers(log, cache)  # the first look: every row computed
    assert shown == _views_numbers(log, RUN) and _board_extra(board) == _views_extra(log)
    assert shown["row"] == [(6, 3, "running_or_interrupted")]
    first = cache.live_rows("dashboard", RUN)

    # Case 1's rollout 0 is retried (attempt 2, right) and case 2's rollout 0 finishes (wrong).
    anyio.run(_write, log, _attempt(1, 0, 2, "out_of_context") + _attempt(2, 0, 1, "unverifiable"))
    run, board, shown = _numbers(log, cache)
    folded = cache.live_rows("dashboard", RUN)
    assert folded.head.last_seq > first.head.last_seq
    assert folded.run_tables is first.run_tables  # no event of no episode: folded, not computed again
    assert len(folded.rows["tool_calls"].chunks) == 2  # the first look's rows, and the two touched episodes'
    # The texts no page reads stay in the log: the kept tool calls hold no observation, the
    # kept model calls no message (the views' rows have both).
    assert "observation" not in folded.schemas["tool_calls"].names and "latency_ms" in folded.schemas["tool_calls"].names
    assert "content" not in folded.schemas["model_calls"].names and "step" in folded.schemas["model_calls"].names
    assert shown == _views_numbers(log, RUN) and _board_extra(board) == _views_extra(log)
    assert (run, board) == _from_scratch(log, tmp_path, "scratch-1")  # every number, bootstrap and histograms too
    # By hand: 6 planned, 4 finished, the retried episode once, with its final attempt (no error).
    # Rollout 0 scored: case 0 right, case 1 right (retried), case 2 wrong (unverifiable for
    # manipulated): accuracy 2/3; F1 authentic 1, out_of_context 1, manipulated 0, unverifiable 0.
    assert shown["row"] == [(6, 4, "running_or_interrupted")]
    assert run["episodes_errored"] == 0
    assert shown["scores"] == [(pytest.approx(2 / 3), pytest.approx(0.5))]
    assert shown["terminations"] == [("completed", 4), ("(not finished)", 2)]
    # One tool call and two model calls (10 prompt tokens each) per final attempt: 4 and 8, 80.
    assert shown["tool_calls"] == [(4,)] and shown["model_calls"] == [(8, 80)]
    assert _board_extra(board)["tool_latency"] == [("visit", 4, 150.0, 300.0)]  # median and max of 100, 100, 200, 300 ms
    assert _board_extra(board)["groups"] == [(3, 2)]  # pg-0's two rewards differ; pg-1 and pg-2 have one member each

    # A look with nothing new reads what is kept; run.finished (an event of no episode) computes all again.
    assert _numbers(log, cache)[2] == shown and cache.live_rows("dashboard", RUN) is folded
    anyio.run(_write, log, [EventDraft(RunFinished(status="completed", completed_at="2026-11-30T01:00:00+00:00",
                                                   num_episodes=6, num_errors=0))])
    run, board, shown = _numbers(log, cache)
    assert cache.live_rows("dashboard", RUN).run_tables is not first.run_tables
    assert shown == _views_numbers(log, RUN) and _board_extra(board) == _views_extra(log)
    assert (run, board) == _from_scratch(log, tmp_path, "scratch-2")
    assert shown["row"] == [(6, 4, "incomplete")]


def test_the_runs_page_of_a_live_run_folds_new_episodes_and_counts_a_retry_once(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    anyio.run(_start, log)
    cache = ResultCache(log.path, tmp_path / "runtime")
    listed = data.list_runs(log, cache)
    assert [(r["run_id"], r["episodes_planned"], r["episodes_finished"], r["episodes_errored"]) for r in listed] == [(RUN, 6, 3, 1)]
    anyio.run(_write, log, _attempt(1, 0, 2, "out_of_context") + _attempt(1, 1, 1, "out_of_context"))
    listed = data.list_runs(log, cache)
    assert len(cache.live_rows("run", RUN).rows["episodes"].chunks) == 2  # folded
    row = listed[0]
    assert (row["episodes_planned"], row["episodes_finished"], row["episodes_errored"]) == (6, 4, 0)  # the retry once, not an error
    assert row["accuracy"] == pytest.approx(2 / 3)  # rollout 0: cases 0 and 1 right, case 2 not finished
    scratch = ResultCache(log.path, tmp_path / "scratch")
    assert listed == data.list_runs(log, scratch)
    assert _views_numbers(log, RUN)["row"] == [(6, 4, "running_or_interrupted")]


def _until_computed(ask, tries: int = 600):
    """`ask()` again every 0.1 s until it gives numbers (not the `computing` answer)."""
    for _ in range(tries):
        found = ask()
        if not _is_computing(found):
            return found
        time.sleep(0.1)
    raise AssertionError("still computing after 60 s")


def _is_computing(found) -> bool:
    return "computing_s" in (found[0] if isinstance(found, list) else found)


def test_a_first_look_that_cannot_wait_says_computing_then_shows_what_a_computation_that_waited_shows(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    anyio.run(_start, log)
    cache = ResultCache(log.path, tmp_path / "runtime")
    listed = data.list_runs(log, cache, wait_s=0)  # the computation has only just started on its thread
    assert [set(r) for r in listed] == [{"run_id", "computing_s"}] and listed[0]["run_id"] == RUN  # no number yet
    board = data.dashboard(log, RUN, cache, wait_s=0)
    assert set(board) == {"run_id", "computing_s"}
    waited = ResultCache(log.path, tmp_path / "waited")
    assert _until_computed(lambda: data.list_runs(log, cache, wait_s=0)) == data.list_runs(log, waited)
    assert _until_computed(lambda: data.dashboard(log, RUN, cache, wait_s=0)) == data.dashboard(log, RUN, waited)
    # Its rows are kept: after new episodes the next look folds them in at once, no `computing`.
    anyio.run(_write, log, _attempt(1, 0, 2, "out_of_context") + _attempt(1, 1, 1, "out_of_context"))
    row = data.list_runs(log, cache, wait_s=0)[0]
    assert (row["episodes_planned"], row["episodes_finished"], row["episodes_errored"]) == (6, 4, 0)
    assert len(cache.live_rows("run", RUN).rows["episodes"].chunks) == 2  # folded
    assert data.dashboard(log, RUN, cache, wait_s=0) == data.dashboard(log, RUN, ResultCache(log.path, tmp_path / "scratch"))


def test_a_computation_in_the_background_runs_once_and_its_error_reaches_the_page(tmp_path):
    cache = ResultCache(tmp_path / "log.duckdb", tmp_path / "runtime")
    gate, calls = threading.Event(), []

    def compute():
        calls.append(1)
        gate.wait(30)
        raise EvisceneError("the log went away")

    assert cache.computing("run", RUN, compute, 0) is not None
    assert cache.computing("run", RUN, compute, 0.05) >= 0.05  # still running: seconds so far
    gate.set()
    with pytest.raises(EvisceneError, match="the log went away"):
        cache.computing("run", RUN, compute, 30)
    assert calls == [1]  # asked three times, run once
    assert cache.computing("run", RUN, lambda: None, 30) is None  # a new one after the failed one: done



def test_the_rows_of_a_run_that_was_sealed_are_let_go(tmp_path):
    """A long-lived viewer keeps a live run's rows in memory; once that run is sealed, the
    next rows it keeps (of any run) let them go."""
    log = EventLog(tmp_path / "log.duckdb")
    anyio.run(_start, log)
    cache = ResultCache(log.path, tmp_path / "runtime")
    _numbers(log, cache)  # its runs row and dashboard
    kept = cache.live_rows("dashboard", RUN)
    assert kept is not None and cache.live_rows("run", RUN) is not None
    log.seal([RUN])
    assert cache.sealed(RUN)
    cache.keep_live_rows("dashboard", kept)  # any later keep (here these rows again) lets every sealed run's go
    assert cache.live_rows("dashboard", RUN) is None and cache.live_rows("run", RUN) is None


def test_a_run_no_process_writes_shows_as_interrupted_with_no_eta(tmp_path):
    """A killed run (no `run.finished`, nobody holding its lock) showed as `running`, with an ETA
    that never moved; `log verify` already told the two apart by the run's lock."""
    from eviscene.store.layout import run_folder
    from eviscene.store.locks import RunLock
    from eviscene.viewer.pages import Links, run_header, runs_table

    log = EventLog(tmp_path / "live.duckdb")
    anyio.run(_start, log)  # six episodes scheduled, three finished; its writer closed, as a killed one is gone
    [stopped] = data.list_runs(log)
    assert (stopped["status"], stopped["writing"], stopped["eta_seconds"]) == ("running_or_interrupted", False, None)
    assert '<span class="badge warn">interrupted</span>' in runs_table([stopped], Links())
    # the log named, as this viewer was given it (not the log a bare `eviscene` opens here)
    assert f"eviscene --db {log.path} eval resume {RUN}</code> finishes it" in run_header(stopped, Links(), "dashboard")
    held = RunLock(run_folder(log.path, RUN) / "writer.lock", RUN).acquire()  # a writer at work
    try:
        [running] = data.list_runs(log, ResultCache(log.path))
        # no rate or ETA before the writer at work finishes an episode: the earlier ones say nothing of its pace
        assert running["writing"] is True and (running["rate_per_minute"], running["eta_seconds"]) == (None, None)
        assert '<span class="badge live">running</span>' in runs_table([running], Links())
        assert "eval resume" not in run_header(running, Links(), "dashboard")
    finally:
        held.release()


def test_a_resumed_run_s_rate_and_eta_are_its_writer_s_not_spread_over_the_hours_it_lay_killed(tmp_path, monkeypatch):
    """A run killed an hour ago after three episodes, resumed now: its rate was the run's six
    finished episodes over the hour since its start (0.1 a minute, an ETA of ten minutes for
    the last one); the writer at work has finished two episodes in its first seconds."""
    from eviscene.store import writer as writer_module

    log = EventLog(tmp_path / "resumed.duckdb")
    an_hour_ago = writer_module.now_micros() - 3_600_000_000
    with monkeypatch.context() as patched:
        patched.setattr(writer_module, "now_micros", lambda: an_hour_ago)
        anyio.run(_start, log)  # the first invocation: three of six episodes finished, then killed

    async def resume() -> dict:
        async with log.writer(RUN) as writer:  # the resume: it holds the run's lock
            for draft in _attempt(1, 0, 2, "out_of_context") + _attempt(1, 1, 1, "out_of_context"):
                await writer.emit(draft)
            await writer.sync()
            [running] = data.list_runs(log, ResultCache(log.path, tmp_path / "runtime"))
            return running

    running = anyio.run(resume)
    assert running["writing"] is True and running["episodes_finished"] == 4  # case-1 r000's retry counts once
    assert running["rate_per_minute"] > 10  # two episodes in the writer's first seconds, not 4 / 60 minutes
    assert 0 < running["eta_seconds"] < 60  # two left at that pace


def test_a_finished_resumed_run_s_rate_is_over_the_time_its_attempts_were_at_work(tmp_path, monkeypatch):
    """The same run, resumed and finished: its writer is gone, so its rate is its six finished
    episodes over the time some attempt was at work, not over the hour it lay killed."""
    from eviscene.store import writer as writer_module

    log = EventLog(tmp_path / "resumed.duckdb")
    an_hour_ago = writer_module.now_micros() - 3_600_000_000
    with monkeypatch.context() as patched:
        patched.setattr(writer_module, "now_micros", lambda: an_hour_ago)
        anyio.run(_start, log)
    anyio.run(_write, log, _attempt(1, 0, 2, "out_of_context") + _attempt(1, 1, 1, "out_of_context")
              + _attempt(2, 0, 1, "manipulated") + _attempt(2, 1, 1, "manipulated"))
    [finished] = data.list_runs(log, ResultCache(log.path, tmp_path / "runtime"))
    assert finished["writing"] is False and finished["episodes_finished"] == 6
    assert finished["rate_per_minute"] > 60  # six episodes in seconds of work (the killed hour: 0.1 a minute)
    assert "busy_seconds" not in finished


def test_the_time_a_run_was_at_work_is_the_union_of_its_attempts_spans():
    """By hand: attempts at 0-10 s, 5-12 s (overlapping: 12 s together), 20-25 s, and an hour
    later 3600-3610 s, with an attempt killed at 30 s (no finish: not counted): 12 + 5 + 10 = 27 s;
    another run's attempt 0-100 s counts for that run only."""
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE TABLE events (run_id VARCHAR, episode_id VARCHAR, attempt INTEGER, type VARCHAR, ts TIMESTAMPTZ)")
    spans = [("r", "a", 1, 0, 10), ("r", "b", 1, 5, 12), ("r", "c", 1, 20, 25), ("r", "c", 2, 3600, 3610), ("r", "d", 1, 30, None),
             ("other", "a", 1, 0, 100)]
    at = "TIMESTAMPTZ '2026-12-01 00:00:00+00' + to_seconds(?)"
    for run, episode, attempt, began, ended in spans:
        con.execute(f"INSERT INTO events VALUES (?, ?, ?, 'episode.started', {at})", [run, episode, attempt, began])
        if ended is not None:
            con.execute(f"INSERT INTO events VALUES (?, ?, ?, 'episode.finished', {at})", [run, episode, attempt, ended])
    busy = dict(con.sql(data._BUSY_SQL.format(where="")).fetchall())
    assert busy == {"r": 27.0, "other": 100.0}
