"""A trajectory the SFT export refuses (a tool call whose arguments were not a JSON object, kept
under `_raw`): the episode keeps its scores, is ineligible with the seed's
`trajectory_sft_export_rejected: …` reason in trajectory_scores and process_metrics, and writes
no trajectory_sft row. A one-run log built with the conftest helpers."""

import json

import anyio
import pytest

from eviscene.exports.run_dir import materialize_run
from eviscene.log import EventLog
from eviscene.store import EventDraft
from eviscene.events import RunFinished


@pytest.fixture(scope="module")
def raw_log(tmp_path_factory, fx):
    log = EventLog(tmp_path_factory.mktemp("raw") / "raw.duckdb")
    clean = fx.Planned("correct", "case-A", 0, 2)
    raw = fx.Planned("raw", "case-A", 1, 2)
    a = raw.attempt().start().perceive()
    bridge = "https://WWW.Bridge.example/post/42/"
    a.model(("c1", "text_search", {"_raw": "{query: flood bridge"}))
    a.tool("c1", "text_search", {"_raw": "{query: flood bridge"}, status="invalid", error="arguments are not valid JSON")
    a.model(("c2", "visit", {"url": bridge}))
    a.tool("c2", "visit", {"url": bridge}, sources=[fx.source("ev-1", bridge)])
    a.judge("out_of_context", 1.0, ["ev-1"])
    a.finish("completed", time_taken=3.0, tool_calls=2, llm_calls=3)
    opening = [EventDraft(fx.run_started(release_stage="frozen_eval", training_prohibited=False,
                                         schema_version="ifv-runtime-release-v0.3", episodes=2, cases=1)),
               fx.scheduled(clean), fx.scheduled(raw)]
    closing = [EventDraft(RunFinished(status="completed", completed_at="2026-01-01T02:00:00+00:00", num_episodes=2, num_errors=0))]
    artifacts = [("evaluation_gold", fx.GOLD_PATH, fx.gold_blob(["case-A"]), 1)]
    anyio.run(fx._write, log, "raw-args", [fx.correct_episode(clean), a], opening, closing, artifacts, fx._Clock())
    return log, clean.episode_id, raw.episode_id


def test_views_refused_sft_trajectory_makes_the_episode_ineligible(raw_log, tmp_path):
    log, clean, raw = raw_log
    reason = "trajectory_sft_export_rejected: tool call c1 (text_search) arguments are not a JSON object"
    assert log.sql("SELECT episode_id, reason FROM sft_export_rejections").to_pylist() == [
        {"episode_id": raw, "reason": "tool call c1 (text_search) arguments are not a JSON object"}]
    scores = {r["episode_id"]: r for r in log.sql("SELECT * FROM trajectory_scores").to_pylist()}
    # correct verdict, grounded; the invalid call and the refused export are its reasons
    assert scores[raw]["training_exclusion_reasons"] == ["invalid_tool_calls", reason]
    assert scores[raw]["training_eligible"] is False
    assert scores[clean]["training_eligible"] is True
    metrics = {r["episode_id"]: r for r in log.sql("SELECT * FROM process_metrics").to_pylist()}
    assert metrics[raw]["training_exclusion_reasons"] == ["invalid_tool_calls", reason]
    assert metrics[raw]["result_correct"] is True
    eligibility = {r["episode_id"]: r for r in log.sql("SELECT * FROM sft_eligibility").to_pylist()}
    assert reason in eligibility[raw]["exclusion_reasons"] and eligibility[raw]["sft_training_eligible"] is False

    written = materialize_run(log, "raw-args", tmp_path / "run")
    assert written["trajectory_sft.jsonl"] == 1
    rows = [json.loads(line) for line in (tmp_path / "run" / "trajectory_sft.jsonl").read_text().splitlines()]
    assert [r["episode_id"] for r in rows] == [clean]
