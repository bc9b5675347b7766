"""A trajectory the SFT export refuses (a tool call whose arguments were not a JSON object, kept
under `_raw`): the episode keeps its scores, is ineligible with the seed's
`trajectory_sft_export_rejected: …` reason in trajectory_scores and process_metrics, and writes
no trajectory_sft row. A one-run log built with the conftest helpers; then the view's SQL
over hand-written tool_calls of every shape a log could hold, malformed ones included."""

import json

import anyio
import duckdb
import pytest

from eviscene.exports.run_dir import materialize_run
from eviscene.log import EventLog
from eviscene.store import EventDraft
from eviscene.events import RunFinished
from eviscene.views import view_definitions


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



def _call(id_, name, **arguments):
    """One tool call's JSON; `args=` gives its arguments (left out otherwise)."""
    return json.dumps({"id": id_, "name": name} | ({"arguments": arguments["args"]} if "args" in arguments else {}))


def _refused(id_, name):
    return f"tool call {id_} ({name}) arguments are not a JSON object"


NO_ROW = "no row"
# episode -> its model calls (step, tool_calls JSON text or SQL NULL) and the reason expected
# (None: a row whose reason is NULL). A call is refused when its arguments are there and are
# not a JSON object, or are an object holding `_raw`; the reason names the first refused call
# (by step * 1000 + position in the list) whose id and name are both there.
TOOL_CALL_SHAPES = {
    "no-tool-calls": ([(0, None)], NO_ROW),
    "empty-list": ([(0, "[]")], NO_ROW),
    "scalars-not-lists": ([(0, "null"), (1, '"visit"'), (2, "5")], NO_ROW),
    "elements-not-objects": ([(0, '[1, "x", null, [1, 2], true, {}]')], NO_ROW),
    "arguments-object": ([(0, f"[{_call('a', 'visit', args={'url': 'u'})}]")], NO_ROW),
    "arguments-missing": ([(0, f"[{_call('a', 'visit')}]")], NO_ROW),
    "arguments-raw-nested": ([(0, f"[{_call('a', 'visit', args={'q': {'_raw': 1}})}]")], NO_ROW),
    "arguments-string": ([(0, f"[{_call('a', 'visit', args='{url: u')}]")], _refused("a", "visit")),
    "arguments-array": ([(0, f"[{_call('a', 'visit', args=[1])}]")], _refused("a", "visit")),
    "arguments-number": ([(0, f"[{_call('a', 'visit', args=3)}]")], _refused("a", "visit")),
    "arguments-null": ([(0, f"[{_call('a', 'visit', args=None)}]")], _refused("a", "visit")),
    "arguments-raw": ([(0, f"[{_call('a', 'visit', args={'_raw': '{url'})}]")], _refused("a", "visit")),
    "arguments-raw-null": ([(0, f"[{_call('a', 'visit', args={'_raw': None})}]")], _refused("a", "visit")),
    "first-refused": ([(4, f"[{_call('s4-0', 'visit', args='x')}]"),
                       (2, f"[{_call('s2-0', 'visit', args={})}, {_call('s2-1', 'visit')}, "
                           f"{_call('s2-2', 'search', args=[1])}, {_call('s2-3', 'visit', args='y')}]")],
                      _refused("s2-2", "search")),
    # past 1,000 calls in a list, the order key passes the next step's: 0 * 1000 + 1002 > 1 * 1000 + 1
    "long-list": ([(0, "[" + ", ".join(_call(f"p{i}", "visit", args={} if i < 1002 else "x") for i in range(1003)) + "]"),
                   (1, f"[{_call('q0', 'visit', args={})}, {_call('q1', 'visit', args='x')}]")],
                  _refused("q1", "visit")),
    "id-missing-then-named": ([(0, '[{"name": "visit", "arguments": "x"}, ' + _call("b", "visit", args="x") + "]")],
                              _refused("b", "visit")),
    "id-null-only": ([(0, '[{"id": null, "name": "visit", "arguments": "x"}]')], None),
    "name-missing-only": ([(0, '[{"id": "a", "arguments": "x"}]')], None),
    # ids and names that are not strings read as their JSON text
    "id-name-not-strings": ([(0, '[{"id": 7, "name": true, "arguments": "x"}]')], _refused("7", "true")),
    "id-float-name-object": ([(0, '[{"id": 1.0e-5, "name": {"b": [1, 2]}, "arguments": "x"}]')], _refused("0.00001", '{"b":[1,2]}')),
    "id-escaped": ([(0, '[{"id": "q\\"t\\u00e9", "name": "visit", "arguments": "x"}]')], _refused('q"t\u00e9', "visit")),
    # not a list: an object's members, each key taken as the position
    "object-numeric-keys": ([(0, '{"3": {"id": "o3", "name": "visit", "arguments": "x"}, '
                                 '"1": {"id": "o1", "name": "visit", "arguments": "x"}}')], _refused("o1", "visit")),
    "object-accepted": ([(0, '{"k": {"id": "a", "name": "visit", "arguments": {}}}')], NO_ROW),
}


def test_views_sft_rejection_reasons_for_every_shape_of_tool_calls():
    select = next(d.select for d in view_definitions() if d.name == "sft_export_rejections")
    con = duckdb.connect()
    con.execute("CREATE TABLE model_calls (run_id VARCHAR, episode_id VARCHAR, step BIGINT, tool_calls JSON)")
    con.executemany("INSERT INTO model_calls VALUES ('run', ?, ?, ?)",
                    [[episode, step, tool_calls] for episode, (calls, _) in TOOL_CALL_SHAPES.items() for step, tool_calls in calls])
    rows = {episode: reason for _, episode, reason in con.sql(select).fetchall()}
    assert rows == {episode: reason for episode, (_, reason) in TOOL_CALL_SHAPES.items() if reason != NO_ROW}
