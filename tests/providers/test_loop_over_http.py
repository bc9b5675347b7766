"""The agent loop driving each wire provider over real HTTP (in process): calls to a tool
that does not exist and calls with unusable arguments come back from the tool layer as
`invalid` observations and the episode goes on to its judgment; with `separate_vlm` a VLM
describes each image once and the agent's model never receives the image."""

from __future__ import annotations

import json

import anyio
import pytest

from eviscene.eval.options import EvalOptions
from eviscene.eval.run import start_run
from eviscene.exports.run_dir import materialize_run
from eviscene.log import EventLog

from provider_servers import FakeServer, Received, Reply, chat_completion, gemini_response, responses_response

JUDGMENT = json.dumps({"verdict": "unverifiable", "confidence": 0.3, "verdict_basis": [], "rationale": "Nothing usable came back."})


def _turn(wire: str, body: dict) -> tuple[bool, int]:
    """(is this the judgment call, how many tool results the conversation holds)."""
    if wire == "chat_completions":
        return "response_format" in body, sum(m["role"] == "tool" for m in body["messages"])
    if wire == "responses":
        return "text" in body, sum(i["type"] == "function_call_output" for i in body["input"])
    parts = [p for c in body["contents"] for p in c["parts"]]
    return "responseMimeType" in body["generationConfig"], sum("functionResponse" in p for p in parts)


def misbehaving_model(wire: str):
    def respond(received: Received) -> Reply:
        judging, results = _turn(wire, received.body)
        if wire == "chat_completions":
            if judging:
                return Reply(body=chat_completion(JUDGMENT))
            if results:
                return Reply(body=chat_completion("Nothing more to try."))
            return Reply(body=chat_completion(None, tool_calls=[("c1", "open_browser", '{"url": "https://example.org"}'), ("c2", "visit", '{"url": "https://exa')]))
        if wire == "responses":
            if judging:
                return Reply(body=responses_response(text=JUDGMENT))
            if results:
                return Reply(body=responses_response(text="Nothing more to try."))
            return Reply(body=responses_response(calls=[("c1", "open_browser", '{"url": "https://example.org"}'), ("c2", "visit", "{url: https://exa")]))
        if judging:
            return Reply(body=gemini_response(text=JUDGMENT))
        if results:
            return Reply(body=gemini_response(text="Nothing more to try."))
        return Reply(body=gemini_response(calls=[("c1", "open_browser", {"url": "https://example.org"}, None), ("c2", "visit", {"uri": "https://example.org"}, None)]))

    return respond


PROVIDER = {"chat_completions": "openai_compatible", "responses": "openai_compatible", "interactions": "gemini"}


@pytest.mark.parametrize("wire", ["chat_completions", "responses", "interactions"])
def test_unknown_tools_and_bad_arguments_become_invalid_observations(wire, release_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-test-key-0123456789")
    with FakeServer(misbehaving_model(wire), wire=wire) as server:
        options = EvalOptions(
            benchmark=str(release_dir / "runtime_input" / "cases.jsonl"), limit=1, provider=PROVIDER[wire], model="m",
            base_url=server.url + ("/v1beta" if wire == "interactions" else "/v1"), llm_wire_api=wire,
        )
        log = EventLog(tmp_path / "log.duckdb")
        summary = anyio.run(start_run, log, options)
    assert server.mismatches == []
    assert summary.terminations == {"completed": 1}
    returned = log.sql("SELECT payload->>'tool' AS tool, payload->>'status' AS status, payload->>'error' AS error FROM events WHERE type = 'tool.returned' ORDER BY seq").to_pylist()
    assert [(r["tool"], r["status"]) for r in returned] == [("open_browser", "invalid"), ("visit", "invalid")]
    assert returned[0]["error"].startswith("unknown tool 'open_browser'")
    if wire == "interactions":  # Gemini's arguments are an object: the wrong key
        assert returned[1]["error"] == "visit: missing required argument 'url'"
    else:  # cut-off JSON is named as such, verbatim
        cut = {"chat_completions": '{"url": "https://exa', "responses": "{url: https://exa"}[wire]
        assert returned[1]["error"] == f"visit: the arguments are not valid JSON: {cut!r}"
    assert log.sql("SELECT payload->>'verdict' AS v FROM events WHERE type = 'judgment.made'").to_pylist() == [{"v": "unverifiable"}]


def test_separate_vlm_describes_each_image_once_and_the_agent_never_sees_it(release_dir, tmp_path):
    description = "A flooded street with a bus half under water; caption text at the bottom."

    def vlm(received: Received) -> Reply:
        return Reply(body=chat_completion(description))

    def agent(received: Received) -> Reply:
        judging, _ = _turn("chat_completions", received.body)
        return Reply(body=chat_completion(JUDGMENT if judging else "The description is all I have."))

    with FakeServer(vlm) as vlm_server, FakeServer(agent) as agent_server:
        options = EvalOptions(
            benchmark=str(release_dir / "runtime_input" / "cases.jsonl"), limit=1, rollouts_per_case=2, concurrency=2,
            provider="openai_compatible", model="agent-model", base_url=agent_server.url + "/v1",
            image_access_mode="separate_vlm", vlm_provider="openai_compatible", vlm_model="vision-model", vlm_base_url=vlm_server.url + "/v1",
        )
        log = EventLog(tmp_path / "log.duckdb")
        summary = anyio.run(start_run, log, options)
    assert summary.terminations == {"completed": 2}
    assert vlm_server.mismatches == [] and agent_server.mismatches == []
    [described] = vlm_server.received  # two rollouts, one image: one description
    case_sha = log.sql("SELECT DISTINCT image_sha256 FROM episodes").to_pylist()[0]["image_sha256"]
    assert described.body["model"] == "vision-model" and described.image_sha256s() == {case_sha}
    assert agent_server.received and all(not r.images() for r in agent_server.received)
    assert all(description in r.raw.decode() for r in agent_server.received)
    reports = log.sql("SELECT payload->>'backend' AS backend, payload->'report'->>'description' AS d FROM events WHERE type = 'perception.reported'").to_pylist()
    assert len(reports) == 2 and all(r["d"] == description and r["backend"].endswith("+vlm:openai_compatible/vision-model") for r in reports)
    manifest = json.loads(log.sql("SELECT payload::VARCHAR AS p FROM events WHERE type = 'run.started'").to_pylist()[0]["p"])
    assert manifest["agent"]["vlm_base_url"] == vlm_server.url + "/v1" and manifest["agent"]["image_access_mode"] == "separate_vlm"
    # The VLM's call is recorded in the rollout that described the image, but it is not a policy
    # step: each rollout's policy steps are its react and judgment calls alone (seed 000's
    # policy step ids), and each SFT transcript carries the agent's five tool schemas, read from
    # its first react request, not from the VLM's request (which has none).
    stages = log.sql("SELECT stage, count(*) AS n FROM model_calls GROUP BY ALL ORDER BY ALL").to_pylist()
    assert stages == [{"stage": "perception", "n": 1}, {"stage": "unified_judgment", "n": 2}, {"stage": "unified_react", "n": 2}]
    policy_steps = log.sql(
        "SELECT episode_id, list(step ORDER BY step) AS steps FROM model_calls WHERE stage <> 'perception' GROUP BY ALL ORDER BY ALL"
    ).to_pylist()
    rewards = log.sql("SELECT episode_id, step_ids FROM post_rollout_rewards ORDER BY episode_id").to_pylist()
    assert [r["step_ids"] for r in rewards] == [[f"{p['episode_id']}:{step}" for step in p["steps"]] for p in policy_steps]
    assert all(len(r["step_ids"]) == 2 for r in rewards)
    run_dir = tmp_path / "run"
    materialize_run(log, summary.run_id, run_dir)
    sft = [json.loads(line) for line in (run_dir / "trajectory_sft.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(sft) == 2
    assert [[tool["function"]["name"] for tool in row["tools"]] for row in sft] == [
        ["text_search", "text_image_search", "reverse_image_search", "visit", "compare_with_reference"]] * 2
