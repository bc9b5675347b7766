"""What real model servers do, replayed by loopback servers: a structured-output form the
server refuses (llama.cpp's server answers `json_schema` with a 500), deterministic
rejections, an endpoint that goes away mid-run, a context window that fills up, an image a
text-only model cannot take, a call cut off by the episode's timeout, and SIGINT."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from eviscene.agent.provider import ProviderError, ProviderOutage, RequestRejected
from eviscene.cli.main import cli
from eviscene.eval.options import EvalOptions
from eviscene.eval.run import resume_run, start_run
from eviscene.providers.chat_completions import ChatCompletionsProvider
from eviscene.log import EventLog
from eviscene.rules.circuit_breaker import outage_waits_excluded

from provider_requests import endpoint, judgment_request
from provider_servers import FakeServer, Received, Reply, Script, chat_completion

EVISCENE = str(Path(sys.executable).with_name("eviscene"))
JUDGMENT = json.dumps({"verdict": "unverifiable", "confidence": 0.4, "verdict_basis": [], "rationale": "Little to go on."})
# What llama-cpp-python's server answers a json_schema response_format with (its validation
# error goes out as a 500).
LLAMA_REFUSAL = Reply(500, {"error": {"message": "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
                                                 "'msg': \"Input should be 'text' or 'json_object'\"}]", "type": "internal_server_error"}})
FAST_PROFILE = """
[profiles.fast]
provider = "openai_compatible"
model = "m"
max_retries = 1
backoff_seconds = 0.05
"""


def judging(received: Received) -> bool:
    return any("Give your judgment now" in json.dumps(m.get("content")) for m in received.body["messages"])


def form_of(received: Received) -> str:
    return (received.body.get("response_format") or {}).get("type", "text")


@pytest.fixture
def fast_profile(tmp_path, monkeypatch):
    path = tmp_path / "profiles.toml"
    path.write_text(FAST_PROFILE, encoding="utf-8")
    monkeypatch.setenv("EVISCENE_PROFILES", str(path))
    return path


def options(release_dir, url: str, **overrides) -> EvalOptions:
    return EvalOptions(benchmark=str(release_dir / "runtime_input" / "cases.jsonl"), profile="fast", base_url=url + "/v1",
                       **{"limit": 1, **overrides})


def events(log: EventLog, kind: str) -> list[dict]:
    rows = log.sql("SELECT episode_id, payload::VARCHAR AS p FROM events WHERE type = ? ORDER BY seq", [kind]).to_pylist()
    return [{**json.loads(r["p"]), "episode_id": r["episode_id"]} for r in rows]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# -- structured output ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_json_schema_refused_with_a_500_falls_back_to_json_object_once(images, case_image):
    def server_side(received: Received) -> Reply:
        if form_of(received) == "json_schema":
            return LLAMA_REFUSAL
        return Reply(body=chat_completion(JUDGMENT))

    with FakeServer(server_side) as server:
        async with ChatCompletionsProvider(name="openai_compatible", model="m", endpoint=endpoint(server.url + "/v1"), images=images) as provider:
            request = judgment_request(images.add(case_image[1], case_image[0]))
            first = await provider.complete(request)
            second = await provider.complete(request)
    assert server.mismatches == []
    # One refused request (never retried), then json_object with the schema beside it; the
    # next call starts at the form that worked.
    assert [form_of(r) for r in server.received] == ["json_schema", "json_object", "json_object"]
    assert server.received[1].body["response_format"]["schema"] == request.response_schema
    assert first.structured_output == second.structured_output == "json_object"
    [refused] = first.retries
    assert refused["status"] == 500 and refused["structured_output"] == "json_schema" and "response_format" in refused["error"]
    assert second.retries == []


@pytest.mark.anyio
async def test_a_server_refusing_every_response_format_gets_the_schema_in_the_prompt(images, case_image):
    refusal = Reply(400, {"error": {"message": "Unrecognized request argument supplied: response_format"}})
    with FakeServer(lambda r: refusal if "response_format" in r.body else Reply(body=chat_completion(JUDGMENT))) as server:
        async with ChatCompletionsProvider(name="openai_compatible", model="m", endpoint=endpoint(server.url + "/v1"), images=images) as provider:
            request = judgment_request(images.add(case_image[1], case_image[0]))
            response = await provider.complete(request)
    assert [form_of(r) for r in server.received] == ["json_schema", "json_object", "text"]
    last = server.received[-1].body["messages"][-1]["content"]
    assert last.startswith("Answer with one JSON object and nothing else") and json.dumps(request.response_schema, sort_keys=True) in last
    assert response.structured_output == "text" and [r["structured_output"] for r in response.retries] == ["json_schema", "json_object"]


@pytest.mark.anyio
async def test_a_pinned_form_is_asked_first_and_never_stepped_down(images, case_image):
    with FakeServer(lambda r: LLAMA_REFUSAL) as server:
        async with ChatCompletionsProvider(name="openai_compatible", model="m", endpoint=endpoint(server.url + "/v1"), images=images,
                                           structured_output={"unified_judgment": "json_object"}) as provider:
            with pytest.raises(RequestRejected, match="response_format"):
                await provider.complete(judgment_request(images.add(case_image[1], case_image[0])))
    assert [form_of(r) for r in server.received] == ["json_object"]


@pytest.mark.parametrize(
    "reply",
    [
        Reply(422, {"detail": [{"loc": ["body", "messages"], "msg": "Field required"}]}),
        Reply(404, {"error": {"message": "The model `m` does not exist."}}),
        Reply(500, {"error": {"message": "1 validation error for ChatCompletionRequest: seed: Input should be a valid integer"}}),
    ],
    ids=["422", "404", "500-naming-a-field"],
)
@pytest.mark.anyio
async def test_deterministic_rejections_end_the_call_at_once(reply, images, case_image):
    with FakeServer(lambda r: reply) as server:
        async with ChatCompletionsProvider(name="openai_compatible", model="m", endpoint=endpoint(server.url + "/v1"), images=images) as provider:
            request = judgment_request(images.add(case_image[1], case_image[0])).model_copy(update={"response_schema": None})
            with pytest.raises(RequestRejected) as caught:
                await provider.complete(request)
    assert len(server.received) == 1 and caught.value.status == reply.status


def test_a_run_judges_through_the_fallback_and_records_the_form(release_dir, tmp_path, fast_profile):
    def server_side(received: Received) -> Reply:
        if form_of(received) == "json_schema":
            return LLAMA_REFUSAL
        return Reply(body=chat_completion(JUDGMENT if judging(received) else "Nothing to search."))

    with FakeServer(server_side) as server:
        log = EventLog(tmp_path / "log.duckdb")
        summary = anyio.run(start_run, log, options(release_dir, server.url, rollouts_per_case=2))
    assert summary.terminations == {"completed": 2}
    calls = events(log, "model.called")
    assert [c["structured_output"] for c in calls if c["stage"] == "unified_judgment"] == ["json_object", "json_object"]
    assert all(c["structured_output"] is None for c in calls if c["stage"] == "unified_react")
    assert sum(form_of(r) == "json_schema" for r in server.received) == 1  # learned once for the run
    agent = json.loads(log.sql("SELECT payload::VARCHAR AS p FROM events WHERE type = 'run.started'").to_pylist()[0]["p"])["agent"]
    assert agent["structured_output"] == {"unified_judgment": "negotiated"}
    assert agent["max_tokens"] == {"unified_react": 4096, "unified_judgment": 2048, "perception": 1024}
    react = [r.body for r in server.received if not judging(r)]
    assert {b["max_tokens"] for b in react} == {4096} and {r.body["max_tokens"] for r in server.received if judging(r)} == {2048}


# -- outages ----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_calls_wait_for_an_endpoint_that_comes_back_off_the_episodes_clock(images, case_image):
    port = free_port()
    heard: list[str | None] = []
    provider = ChatCompletionsProvider(name="openai_compatible", model="m", endpoint=endpoint(f"http://127.0.0.1:{port}/v1", max_retries=0),
                                       images=images)
    provider.client.breaker.listener = heard.append
    request = judgment_request(images.add(case_image[1], case_image[0])).model_copy(update={"response_schema": None})
    async with anyio.create_task_group() as group:
        answers = []

        async def call() -> None:
            # Within an episode's 2 s deadline: the waits for the endpoint are not the episode's time.
            with anyio.fail_after(2.0) as deadline, outage_waits_excluded(deadline):
                answers.append(await provider.complete(request))

        group.start_soon(call)
        await anyio.sleep(3.5)  # 2 short backoffs, then the breaker opens and probes at 1, 2 s
        with FakeServer(lambda r: Reply(body=chat_completion("back")), port=port):
            with anyio.fail_after(10):
                while not answers:
                    await anyio.sleep(0.05)
    await provider.aclose()
    assert answers[0].content == "back"
    waits = [h for h in heard if h]
    assert waits and waits[0] == f"waiting for http://127.0.0.1:{port}/v1: connection refused, retrying in 1s"
    assert heard[-1] is None  # told the endpoint is back
    assert all(r["error"] == "connection refused" and r["status"] is None for r in answers[0].retries)


@pytest.mark.anyio
async def test_past_the_outage_timeout_the_call_raises_an_outage(images, case_image):
    port = free_port()
    provider = ChatCompletionsProvider(name="openai_compatible", model="m",
                                       endpoint=endpoint(f"http://127.0.0.1:{port}/v1", outage_timeout_seconds=1.0), images=images)
    request = judgment_request(images.add(case_image[1], case_image[0]))
    clock = time.monotonic()
    with pytest.raises(ProviderOutage, match=rf"http://127.0.0.1:{port}/v1 unreachable for 1 s \(connection refused\), the provider outage timeout$"):
        await provider.complete(request)
    assert time.monotonic() - clock < 5
    await provider.aclose()


# What llama.cpp's server answers every request while it loads its model (it listens first).
LOADING = Reply(503, {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}})


@pytest.mark.anyio
async def test_a_server_still_loading_its_model_is_waited_for_not_failed(images, case_image):
    """A run started beside a llama.cpp server still loading its model: each call spent its
    retries (one here) on the 503s and the episode failed. Nothing else answering, the endpoint
    is down: the call waits for it as for a refused connection, the listener told."""
    heard: list[str | None] = []
    with FakeServer(Script(LOADING, LOADING, LOADING, LOADING, Reply(body=chat_completion("ready")))) as server:
        async with ChatCompletionsProvider(name="openai_compatible", model="m", images=images,
                                           endpoint=endpoint(server.url + "/v1", max_retries=1)) as provider:
            provider.client.breaker.listener = heard.append
            answer = await provider.complete(judgment_request(images.add(case_image[1], case_image[0])))
    assert answer.content == "ready" and len(server.received) == 5
    assert [(r["status"], r["error"]) for r in answer.retries] == [(503, "HTTP 503 Service Unavailable: Loading model")] * 4
    assert f"waiting for {server.url}/v1: HTTP 503 Service Unavailable: Loading model, retrying in 1s" in heard and heard[-1] is None


@pytest.mark.anyio
async def test_waiting_for_an_unavailable_endpoint_honours_its_retry_after(images, case_image):
    """Probes go out at 1, 2, 4 … s: to an overloaded endpoint asking for a longer pause,
    every waiting call would have come back sooner than asked."""
    overloaded = Reply(503, {"error": {"message": "overloaded"}}, headers={"Retry-After": "2"})
    with FakeServer(Script(overloaded, Reply(body=chat_completion("ready")))) as server:
        async with ChatCompletionsProvider(name="openai_compatible", model="m", images=images,
                                           endpoint=endpoint(server.url + "/v1", outage_after_failures=1)) as provider:
            answer = await provider.complete(judgment_request(images.add(case_image[1], case_image[0])))
    assert answer.content == "ready" and answer.retries == [
        {"status": 503, "error": "HTTP 503 Service Unavailable: overloaded", "waited_seconds": 2.0}
    ]


@pytest.mark.anyio
async def test_an_endpoint_unavailable_past_the_outage_timeout_stops_the_run(images, case_image):
    with FakeServer(lambda r: LOADING) as server:
        async with ChatCompletionsProvider(name="openai_compatible", model="m", images=images,
                                           endpoint=endpoint(server.url + "/v1", max_retries=1, outage_timeout_seconds=1.0)) as provider:
            with pytest.raises(ProviderOutage, match=r"/v1 unavailable for 1 s \(HTTP 503 Service Unavailable: Loading model\), "
                                                     r"the provider outage timeout$"):
                await provider.complete(judgment_request(images.add(case_image[1], case_image[0])))


@pytest.mark.anyio
async def test_a_504_only_one_request_meets_spends_its_retries_while_others_are_answered(images, case_image):
    """A gateway timing out one slow request while it serves the rest: that call is refused,
    not the endpoint down, so it fails after its retries (the run goes on)."""
    request = judgment_request(images.add(case_image[1], case_image[0]))
    slow = request.model_copy(update={"messages": [*request.messages, {"role": "user", "content": "a very long question"}]})

    def gateway(received: Received) -> Reply:
        if "a very long question" in json.dumps(received.body["messages"]):
            return Reply(504, "<html>504 Gateway Time-out</html>")
        return Reply(body=chat_completion("quick"))

    with FakeServer(gateway) as server:
        async with ChatCompletionsProvider(name="openai_compatible", model="m", images=images,
                                           endpoint=endpoint(server.url + "/v1", max_retries=3, backoff_seconds=0.05)) as provider:
            failed: list[BaseException] = []

            async def slow_call() -> None:
                try:
                    await provider.complete(slow)
                except ProviderError as error:
                    failed.append(error)

            async with anyio.create_task_group() as group:
                group.start_soon(slow_call)
                with anyio.fail_after(30):
                    while not failed:
                        assert (await provider.complete(request)).content == "quick"
    assert "failed after 4 tries; last: HTTP 504 Gateway Timeout" in str(failed[0])


@pytest.mark.anyio
async def test_a_gateway_error_a_lone_call_meets_fails_that_call_and_the_next_call_s_one_is_an_outage(images, case_image):
    """At --concurrency 1 no other call can show the endpoint answering: a gateway's 504 for one
    request that outlasts it (or a 502 for one that crashes the server) made the run wait the
    whole outage timeout and stop, and every resume ran that episode first and stopped again.
    The call fails after its retries (as a 5xx did before); a second call meeting one with no
    answer between is an endpoint down, waited for."""
    with FakeServer(lambda r: Reply(504, "<html>504 Gateway Time-out</html>")) as server:
        async with ChatCompletionsProvider(name="openai_compatible", model="m", images=images,
                                           endpoint=endpoint(server.url + "/v1", max_retries=1, outage_timeout_seconds=1.0)) as provider:
            request = judgment_request(images.add(case_image[1], case_image[0]))
            with pytest.raises(ProviderError, match=r"failed after 2 tries; last: HTTP 504 Gateway Timeout"):
                await provider.complete(request)
            with pytest.raises(ProviderOutage, match=r"/v1 unavailable for 1 s \(HTTP 504 Gateway Timeout: .*\), the provider outage timeout$"):
                await provider.complete(request)


def answer_everything(received: Received) -> Reply:
    return Reply(body=chat_completion(JUDGMENT if judging(received) else "Nothing to search."))


def test_an_outage_stops_the_run_cleanly_and_resume_finishes_it(release_dir, tmp_path, fast_profile):
    port = free_port()
    log = EventLog(tmp_path / "log.duckdb")
    server = FakeServer(lambda r: r, port=port)

    def one_episode_then_gone(received: Received) -> Reply:
        if not judging(received):
            return answer_everything(received)
        server.httpd.shutdown()  # from a handler thread: stops accepting, this answer still goes out
        server.httpd.server_close()
        return Reply(body=chat_completion(JUDGMENT), headers={"Connection": "close"})

    server.respond = one_episode_then_gone
    server.__enter__()
    summary = anyio.run(start_run, log, options(release_dir, f"http://127.0.0.1:{port}", limit=3, provider_outage_timeout=1.5))
    assert summary.terminations == {"completed": 1}
    assert summary.stopped.startswith("openai_compatible (chat_completions, model m): ") and "unreachable" in summary.stopped
    assert [f["termination"] for f in events(log, "episode.finished")] == ["completed"]  # nothing ended `error`
    assert events(log, "run.finished") == []
    started = {e["episode_id"] for e in events(log, "episode.started")}
    assert len(started) == 2  # the second episode was in flight and stays unfinished

    with FakeServer(answer_everything, port=port):
        resumed = anyio.run(resume_run, log, summary.run_id)
    assert resumed.terminations == {"completed": 2} and not resumed.stopped
    finished = [f["episode_id"] for f in events(log, "episode.finished")]
    scheduled = [e["episode_id"] for e in events(log, "episode.scheduled")]
    assert sorted(finished) == sorted(scheduled) and len(set(finished)) == 3  # each once: nothing lost or repeated
    assert len(events(log, "run.finished")) == 1


def test_after_an_outage_the_cli_reports_what_finished_and_writes_no_run_directory(release_dir, tmp_path, fast_profile, monkeypatch):
    """`eval run` and `eval resume` report the episodes that finished and the status the
    log holds (what `eviscene runs` shows), and leave the run directory for the resume that
    finishes the run (unfinished episodes would be written as errors)."""
    monkeypatch.chdir(tmp_path)
    port = free_port()
    server = FakeServer(lambda r: r, port=port)

    def one_episode_then_gone(received: Received) -> Reply:
        if not judging(received):
            return answer_everything(received)
        server.httpd.shutdown()
        server.httpd.server_close()
        return Reply(body=chat_completion(JUDGMENT), headers={"Connection": "close"})

    server.respond = one_episode_then_gone
    server.__enter__()
    log_path = tmp_path / "log.duckdb"

    def eviscene(*args: str):
        return CliRunner().invoke(cli, ["--db", str(log_path), *args])

    def listed() -> dict:
        return json.loads(eviscene("runs", "--format", "json").stdout)[0]

    run = eviscene("eval", "run", "--benchmark", str(release_dir / "runtime_input" / "cases.jsonl"), "--profile", "fast",
                   "--base-url", f"http://127.0.0.1:{port}/v1", "--limit", "3", "--provider-outage-timeout", "1.5",
                   "--no-progress", "--output-dir", "runs/pq")
    assert run.exit_code == 1, run.output
    assert "run pq: 1 of 3 episodes ran (completed 1, 2 unfinished); status running_or_interrupted" in run.stdout
    assert "run pq stopped, its unfinished episodes kept for later: " in run.stderr
    assert f"no run directory written while episodes are unfinished; `eviscene --db {log_path} eval resume pq --output-dir runs/pq` writes it" in run.stderr
    assert (listed()["status"], listed()["episodes_finished"]) == ("running_or_interrupted", 1)
    assert not (tmp_path / "runs").exists()

    still_down = eviscene("eval", "resume", "pq", "--no-progress")
    assert still_down.exit_code == 1, still_down.output
    assert "run pq: 0 of 3 episodes ran (2 unfinished); status running_or_interrupted" in still_down.stdout
    assert not (tmp_path / "runs").exists()

    with FakeServer(answer_everything, port=port):
        back = eviscene("eval", "resume", "pq", "--no-progress")
    assert back.exit_code == 0, back.output
    assert "run pq: 2 of 3 episodes ran (completed 2); status completed" in back.stdout
    assert listed()["status"] == "completed"
    summary = json.loads((tmp_path / "runs" / "pq" / "summary.json").read_text())
    assert summary["num_samples"] == 3 and "error" not in summary["predicted_verdict_distribution"]


def test_a_refused_key_stops_the_run_at_once_and_resume_finishes_it_with_a_key_the_server_takes(
        release_dir, tmp_path, fast_profile, monkeypatch):
    """A wrong key failed every episode in turn, each `error` with the same 401: a run of
    thousands filled the log with errors for `--retry-errors`. The first 401 stops the run
    as an outage does, nothing failed, and the resume line says what to mend."""
    monkeypatch.chdir(tmp_path)
    port = free_port()
    log_path = tmp_path / "log.duckdb"

    def eviscene(*args: str):
        return CliRunner().invoke(cli, ["--db", str(log_path), *args])

    def key_checked(received: Received) -> Reply:
        if received.headers.get("authorization") != "Bearer sk-right-0123456789abcdef":
            return Reply(401, {"error": {"message": "Incorrect API key provided: sk-wron*********cdef"}})
        return answer_everything(received)

    with FakeServer(key_checked, port=port) as server:
        monkeypatch.setenv("EVISCENE_TEST_KEY", "sk-wrong-0123456789abcdef")
        stopped = eviscene("eval", "run", "--benchmark", str(release_dir / "runtime_input" / "cases.jsonl"), "--profile", "fast",
                           "--base-url", f"http://127.0.0.1:{port}/v1", "--limit", "3", "--concurrency", "1", "--no-progress",
                           "--api-key-env", "EVISCENE_TEST_KEY", "--output-dir", "runs/pq")
        assert stopped.exit_code == 1, stopped.output
        assert len(server.received) == 1  # the first call's answer stopped the run
        assert ("run pq stopped, its unfinished episodes kept for later: openai_compatible (chat_completions, model m): "
                "HTTP 401 Unauthorized: Incorrect API key provided: sk-wron*********cdef (check the API key in the environment "
                "variable the profile or --api-key-env names)\n") in stopped.stderr
        assert f"with a key the server takes: eviscene --db {log_path} eval resume pq --trust-endpoints\n" in stopped.stderr
        assert "run pq: 0 of 3 episodes ran (3 unfinished); status running_or_interrupted" in stopped.stdout
        monkeypatch.setenv("EVISCENE_TEST_KEY", "sk-right-0123456789abcdef")
        resumed = eviscene("eval", "resume", "pq", "--no-progress", "--trust-endpoints")
    assert resumed.exit_code == 0, resumed.output
    assert "run pq: 3 of 3 episodes ran (completed 3); status completed" in resumed.stdout


KEYED_PROFILE = """
[profiles.keyed]
provider = "openai_compatible"
model = "m"
base_url = "{url}"
api_key_env = "EVISCENE_TEST_KEY"
"""


def test_a_resume_sends_a_key_to_a_server_the_log_names_only_when_told_to(release_dir, tmp_path, fast_profile, monkeypatch):
    """A log may come from anyone (`log merge`, a copy): the run's recorded --base-url and
    --api-key-env send no key until the user vouches for them with --trust-endpoints; the
    server hears nothing before that."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVISCENE_TEST_KEY", "sk-test-0123456789abcdef")
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    log_path = tmp_path / "log.duckdb"

    def eviscene(*args: str):
        return CliRunner().invoke(cli, ["--db", str(log_path), *args])

    stopped = eviscene("eval", "run", "--benchmark", str(release_dir / "runtime_input" / "cases.jsonl"), "--profile", "fast",
                       "--base-url", url, "--api-key-env", "EVISCENE_TEST_KEY", "--limit", "1",
                       "--provider-outage-timeout", "1", "--no-progress", "--output-dir", "runs/keyed")
    assert stopped.exit_code == 1 and "run keyed stopped" in stopped.stderr, stopped.output
    assert f"when the server is back: eviscene --db {log_path} eval resume keyed --trust-endpoints\n" in stopped.stderr  # this process started it
    assert f"`eviscene --db {log_path} eval resume keyed --trust-endpoints --output-dir runs/keyed` writes it" in stopped.stderr

    with FakeServer(answer_everything, port=port) as server:
        refused = eviscene("eval", "resume", "keyed", "--no-progress")
        assert refused.exit_code == 2, refused.output
        assert refused.stderr == (
            f"Error: run keyed: its recorded --base-url/--api-key-env would send the agent's key ($EVISCENE_TEST_KEY) to {url}; "
            "a resume sends a key only where the provider's defaults or your profile send it, since a log from elsewhere "
            "can name any server; if you started this run, resume it with --trust-endpoints\n"
        )
        assert server.received == []
        trusted = eviscene("eval", "resume", "keyed", "--no-progress", "--trust-endpoints")
    assert trusted.exit_code == 0, trusted.output
    assert "run keyed: 1 of 1 episodes ran (completed 1); status completed" in trusted.stdout
    assert server.received and {r.headers["authorization"] for r in server.received} == {"Bearer sk-test-0123456789abcdef"}
    # Nothing left to run: nothing goes anywhere, so nothing needs vouching for.
    with FakeServer(answer_everything, port=port) as server:
        again = eviscene("eval", "resume", "keyed", "--no-progress")
    assert again.exit_code == 0 and server.received == [], again.output
    assert "run keyed: 0 of 1 episodes ran" in again.stdout


def test_a_resume_sends_a_key_where_the_users_own_profile_does(release_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVISCENE_TEST_KEY", "sk-test-0123456789abcdef")
    port = free_port()
    (tmp_path / "profiles.toml").write_text(KEYED_PROFILE.format(url=f"http://127.0.0.1:{port}/v1"), encoding="utf-8")
    monkeypatch.setenv("EVISCENE_PROFILES", str(tmp_path / "profiles.toml"))
    log_path = tmp_path / "log.duckdb"

    def eviscene(*args: str):
        return CliRunner().invoke(cli, ["--db", str(log_path), *args])

    stopped = eviscene("eval", "run", "--benchmark", str(release_dir / "runtime_input" / "cases.jsonl"), "--profile", "keyed",
                       "--limit", "1", "--provider-outage-timeout", "1", "--no-progress", "--output-dir", "runs/mine")
    assert stopped.exit_code == 1, stopped.output
    with FakeServer(answer_everything, port=port) as server:
        resumed = eviscene("eval", "resume", "mine", "--no-progress")
    assert resumed.exit_code == 0, resumed.output
    assert {r.headers["authorization"] for r in server.received} == {"Bearer sk-test-0123456789abcdef"}


# -- the context window -----------------------------------------------------------------------

SMALL_BUDGETS = """
[profiles.fast.max_tokens]
unified_react = 256
unified_judgment = 256
"""
MAX_CONTEXT = "This model's maximum context length is {window} tokens. However, you requested {asked} tokens ({prompt} in the messages, {completion} in the completion). Please reduce the length of the messages or completion."


def searching_model(window: int):
    """Searches the caption again and again; refuses, as llama.cpp does, any request whose
    prompt (4 characters a token here) and completion budget exceed `window`."""

    def respond(received: Received) -> Reply:
        body = received.body
        prompt = len(json.dumps(body["messages"]) + json.dumps(body.get("tools", []))) // 4
        if prompt + body["max_tokens"] > window:
            asked = prompt + body["max_tokens"]
            return Reply(400, {"error": {"message": MAX_CONTEXT.format(window=window, asked=asked, prompt=prompt, completion=body["max_tokens"]),
                                         "type": "invalid_request_error"}})
        if judging(received):
            return Reply(body=chat_completion(JUDGMENT, usage=(prompt, 20)))
        turn = sum(m["role"] == "tool" for m in body["messages"])
        query = json.dumps({"query": ["flood", "bus", "street", "protest", "fire", "storm"][turn % 6] + " photo"})
        return Reply(body=chat_completion(None, tool_calls=[(f"call_{turn}", "text_search", query)], usage=(prompt, 20)))

    return respond


@pytest.mark.parametrize("given", [True, False], ids=["context-window-flag", "learned-from-the-server"])
def test_a_filling_context_shortens_old_observations_then_moves_to_the_judgment(given, release_dir, tmp_path, fast_profile):
    fast_profile.write_text(FAST_PROFILE + SMALL_BUDGETS, encoding="utf-8")
    with FakeServer(searching_model(3000)) as server:
        log = EventLog(tmp_path / "log.duckdb")
        summary = anyio.run(start_run, log, options(release_dir, server.url, context_window=3000 if given else None,
                                                    image_access_mode="separate_vlm", vlm_provider="offline"))
    assert summary.terminations == {"budget_exhausted": 1}
    refused = [c for c in events(log, "model.called") if c["error"]]
    assert len(refused) == (0 if given else 1)  # learned from the first rejection, never refused again
    if refused:
        assert "maximum context length is 3000 tokens" in refused[0]["error"]
    [gate] = [g for g in events(log, "gate.decided") if g["gate"] == "context_window"]
    assert gate["passed"] is False and gate["reasons"][0].startswith("investigation_no_longer_fits")
    assert [j["verdict"] for j in events(log, "judgment.made")] == ["unverifiable"]
    # Older observations went out shortened, their evidence ids kept.
    last = [r for r in server.received if r.status_sent == 200][-1].body["messages"]
    tool_texts = [m["content"] for m in last if m["role"] == "tool"]
    assert "[shortened to fit the context window]" in tool_texts[0] and "[ev-" in tool_texts[0]
    returned = [t["observation"] for t in events(log, "tool.returned")]
    assert "[shortened" not in " ".join(returned)  # the log keeps every observation whole


def llama_like_model(*, react_turns: int, garbage_arguments: int = 0, window: int = 3000):
    """What llama-cpp-python's function-calling template and context do, in numbers: a request
    with tools reads as 8 characters a token, one without as 4; a prompt over the window is
    refused, and a completion that runs into the window's end is cut there. The model searches
    `react_turns` times (the first call's arguments `garbage_arguments` characters of non-JSON,
    as a 135M model writes them), then judges."""

    def respond(received: Received) -> Reply:
        body = received.body
        chars = len(json.dumps(body["messages"]) + (json.dumps(body["tools"]) if body.get("tools") else ""))
        prompt = chars // (8 if body.get("tools") else 4)
        if prompt >= window:
            return Reply(400, {"error": {"message": f"Requested tokens ({prompt}) exceed context window of {window}", "type": "invalid_request_error"}})
        room = window - prompt
        if judging(received):
            cut = room < body["max_tokens"] and room * 4 < len(JUDGMENT)
            return Reply(body=chat_completion(JUDGMENT[: room * 4] if cut else JUDGMENT, usage=(prompt, min(room, 20)),
                                              finish_reason="length" if cut else "stop"))
        turn = sum(m["role"] == "tool" for m in body["messages"])
        if turn >= react_turns:
            return Reply(body=chat_completion("That is enough searching.", usage=(prompt, 10)))
        arguments = "{ query: " + "image&amp;height=287 " * (garbage_arguments // 21) if turn == 0 and garbage_arguments else json.dumps({"query": ["flood photo", "bus photo", "fire photo"][turn % 3]})
        return Reply(body=chat_completion(None, tool_calls=[(f"call_{turn}", "text_search", arguments)], usage=(prompt, 20)))

    return respond


def test_the_judgment_s_tokens_are_estimated_apart_from_the_investigation_s(release_dir, tmp_path, fast_profile):
    """A judgment request has no tools: the server's template reads it as more tokens a
    character, so the investigation's ratio would send it too long (refused, or its reply cut
    at the window's end: `cut_off`)."""
    fast_profile.write_text(FAST_PROFILE + SMALL_BUDGETS, encoding="utf-8")
    with FakeServer(llama_like_model(react_turns=5)) as server:
        log = EventLog(tmp_path / "log.duckdb")
        summary = anyio.run(start_run, log, options(release_dir, server.url, context_window=3000,
                                                    image_access_mode="separate_vlm", vlm_provider="offline"))
    assert summary.terminations == {"completed": 1}
    assert [c["error"] for c in events(log, "model.called")] == [""] * 7  # five searches, the last turn, one judgment
    assert [g["passed"] for g in events(log, "gate.decided") if g["gate"] in ("judgment_schema", "context_window")] == [True]
    [judgment] = [r.body for r in server.received if judging(r)]
    assert "[shortened to fit the context window]" in json.dumps(judgment["messages"])  # it fit by shortening, not by luck


def test_a_model_s_own_pages_of_tool_arguments_are_shortened_for_the_window(release_dir, tmp_path, fast_profile):
    fast_profile.write_text(FAST_PROFILE + SMALL_BUDGETS, encoding="utf-8")
    with FakeServer(llama_like_model(react_turns=2, garbage_arguments=20_000)) as server:
        log = EventLog(tmp_path / "log.duckdb")
        summary = anyio.run(start_run, log, options(release_dir, server.url, context_window=3000,
                                                    image_access_mode="separate_vlm", vlm_provider="offline"))
    assert summary.terminations == {"completed": 1}
    assert all(not c["error"] for c in events(log, "model.called"))
    assert [j["verdict"] for j in events(log, "judgment.made")] == ["unverifiable"]
    [judgment] = [r.body for r in server.received if judging(r)]
    [sent] = [c["function"]["arguments"] for m in judgment["messages"] for c in m.get("tool_calls") or [] if c["id"] == "call_0"]
    raw = json.loads(sent)["_raw"]  # still a JSON object, its value cut
    assert raw.startswith("{ query: image&amp;height=287") and raw.endswith("[shortened to fit the context window]") and len(raw) < 300
    # The log keeps what the model wrote, whole.
    [first] = [c for c in events(log, "tool.called") if c["call_id"] == "call_0"]
    assert len(first["arguments"]["_raw"]) > 19_000


def test_a_judgment_cut_by_its_token_limit_is_refused_as_cut_off_and_asked_again(release_dir, tmp_path, fast_profile):
    """The server stops the first judgment at max_tokens (finish_reason `length`): the gate
    names that cause, not the unfinished JSON, and the retry tells the model."""
    judgments = iter([chat_completion(JUDGMENT[:40], usage=(900, 256), finish_reason="length"), chat_completion(JUDGMENT)])

    def respond(received: Received) -> Reply:
        return Reply(body=next(judgments)) if judging(received) else answer_everything(received)

    with FakeServer(respond) as server:
        log = EventLog(tmp_path / "log.duckdb")
        summary = anyio.run(start_run, log, options(release_dir, server.url))
    assert summary.terminations == {"completed": 1}
    reasons = [g["reasons"] for g in events(log, "gate.decided") if g["gate"] == "judgment_schema"]
    assert reasons == [["cut_off: the answer reached its completion token limit (256 tokens) before its JSON ended; answer more briefly"], []]
    retry = [r.body["messages"][-1]["content"] for r in server.received if judging(r)][-1]
    assert retry.startswith("Your judgment was not accepted: cut_off: the answer reached its completion token limit")
    ended = log.sql("SELECT stage, finish_reason FROM model_calls ORDER BY call_index").to_pylist()
    assert [(c["stage"], c["finish_reason"]) for c in ended] == [
        ("unified_react", "stop"), ("unified_judgment", "length"), ("unified_judgment", "stop")]


def refuses_images(received: Received) -> Reply:
    if received.images():
        return Reply(400, {"error": {"message": MAX_CONTEXT.format(window=8192, asked=52256, prompt=52000, completion=256)}})
    return answer_everything(received)


def test_an_image_too_large_for_a_text_model_names_separate_vlm_offline(release_dir, tmp_path, fast_profile):
    with FakeServer(refuses_images) as server:
        log = EventLog(tmp_path / "log.duckdb")
        summary = anyio.run(start_run, log, options(release_dir, server.url))
    assert summary.terminations == {"error": 1} and len(server.received) == 1
    [finished] = events(log, "episode.finished")
    [called] = events(log, "model.called")
    for text in (finished["error"], called["error"]):
        assert "the image made the request too long for the model's context window (8192 tokens)" in text
        assert "--image-access-mode separate_vlm --vlm-provider offline" in text


def test_separate_vlm_without_a_vlm_provider_records_the_vlm_call_and_says_what_to_do(release_dir, tmp_path, fast_profile):
    with FakeServer(refuses_images) as server:
        log = EventLog(tmp_path / "log.duckdb")
        summary = anyio.run(start_run, log, options(release_dir, server.url, image_access_mode="separate_vlm"))
        assert summary.terminations == {"error": 1}
        [called] = events(log, "model.called")
        assert called["stage"] == "perception" and called["provider"] == "openai_compatible" and called["model"] == "m"
        assert "describing model cannot take the image" in called["error"] and "--vlm-provider offline" in called["error"]
        agent = json.loads(log.sql("SELECT payload::VARCHAR AS p FROM events WHERE type = 'run.started'").to_pylist()[0]["p"])["agent"]
        assert (agent["vlm_provider"], agent["vlm_model"]) == ("openai_compatible", "m")
        # As the message says: the embedded perception report alone, and the run completes.
        summary = anyio.run(start_run, log, options(release_dir, server.url, image_access_mode="separate_vlm", vlm_provider="offline"))
    assert summary.terminations == {"completed": 1}


def test_a_call_cut_off_by_the_episode_timeout_is_on_the_record(release_dir, tmp_path, fast_profile):
    with FakeServer(lambda r: Reply(body=chat_completion("late"), delay=4.0)) as server:
        log = EventLog(tmp_path / "log.duckdb")
        summary = anyio.run(start_run, log, options(release_dir, server.url, timeout=1.0))
    assert summary.terminations == {"timeout": 1}
    [called] = events(log, "model.called")
    assert called["error"] == "timeout" and called["stage"] == "unified_react" and 900 <= called["latency_ms"] <= 3000


# -- signals ----------------------------------------------------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_commits_every_answered_call_before_the_process_exits(signum, release_dir, tmp_path, fast_profile):
    """The first call is answered; the second hangs, and the signal comes well inside the
    writer's 1 s batching window: the answered call must be in the log all the same."""
    query = json.dumps({"query": "flood photo"})
    script = Script(Reply(body=chat_completion(None, tool_calls=[("call_1", "text_search", query)])), Reply(body=chat_completion("late"), delay=60))
    db = tmp_path / "log.duckdb"
    with FakeServer(script) as server:
        process = subprocess.Popen(
            [EVISCENE, "--db", str(db), "eval", "run", "--benchmark", str(release_dir / "runtime_input" / "cases.jsonl"), "--profile", "fast",
             "--base-url", server.url + "/v1", "--limit", "1", "--no-progress", "--no-materialize"],
            env={**os.environ}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        deadline = time.monotonic() + 120
        while len(server.received) < 2 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.01)
        assert len(server.received) == 2
        process.send_signal(signum)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    run_id = EventLog(db).sql("SELECT DISTINCT run_id FROM events").to_pylist()[0]["run_id"]
    assert f"interrupted; `eviscene --db {db} eval resume {run_id}` finishes it" in err and "Traceback" not in err
    log = EventLog(db)
    [called] = events(log, "model.called")
    assert [c["name"] for c in called["tool_calls"]] == ["text_search"]
    assert [e["tool"] for e in events(log, "tool.returned")] == ["text_search"]
    assert events(log, "episode.finished") == []


SWEEP = """
import sys, anyio, eviscene
log = eviscene.open_log(sys.argv[1], create=True)
for seed in (1, 2):
    options = eviscene.EvalOptions(benchmark=sys.argv[2], profile="fast", base_url=sys.argv[3], limit=1, base_sampling_seed=seed)
    try:
        summary = anyio.run(eviscene.start_run, log, options)
    except eviscene.RunInterrupted as stop:
        print("stopped:", stop.summary.run_id, stop.summary.ran, stop.summary.unfinished, stop.summary.status, flush=True)
        print("message:", stop, flush=True)
        raise SystemExit(130)
    print("ran:", summary.run_id, flush=True)
"""


def test_a_signal_stops_a_library_caller_too_with_the_run_s_summary(release_dir, tmp_path, fast_profile):
    """A sweep of runs from Python: Ctrl-C stopped the run (its answered calls kept) and
    start_run returned as if it had ended, so the sweep went on to its next run. Now it raises
    RunInterrupted, which carries the summary and names the command that finishes the run."""
    query = json.dumps({"query": "flood photo"})
    script = Script(Reply(body=chat_completion(None, tool_calls=[("call_1", "text_search", query)])), Reply(body=chat_completion("late"), delay=60))
    (tmp_path / "sweep.py").write_text(SWEEP)
    db = tmp_path / "log.duckdb"
    with FakeServer(script) as server:
        process = subprocess.Popen([sys.executable, str(tmp_path / "sweep.py"), str(db), str(release_dir / "runtime_input" / "cases.jsonl"),
                                    server.url + "/v1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while len(server.received) < 2 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.01)
        assert len(server.received) == 2
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    run_id = EventLog(db).sql("SELECT DISTINCT run_id FROM events").to_pylist()[0]["run_id"]
    assert out.splitlines() == [
        f"stopped: {run_id} 0 1 running_or_interrupted",
        f"message: run {run_id} interrupted by SIGINT: 0 episode(s) ran, 1 unfinished; `eviscene --db {db} eval resume {run_id}` finishes it",
    ]
    assert [e["tool"] for e in events(EventLog(db), "tool.returned")] == ["text_search"]


# -- a model that misbehaves in the conversation --------------------------------------------------


def answered_in_order(messages: list[dict]) -> bool:
    """OpenAI's rule, which strict servers enforce: an assistant message with tool calls is
    followed by one tool message for each of its calls, before anything else."""
    for index, message in enumerate(messages):
        wanted = {call["id"] for call in message.get("tool_calls") or []}
        following = messages[index + 1:index + 1 + len(wanted)]
        if wanted and {m.get("tool_call_id") for m in following if m["role"] == "tool"} != wanted:
            return False
    return True


def strictly(respond):
    def checked(received: Received) -> Reply:
        if not answered_in_order(received.body["messages"]):
            return Reply(400, {"error": {"message": "An assistant message with 'tool_calls' must be followed by tool messages "
                                                    "responding to each 'tool_call_id'.", "type": "invalid_request_error"}})
        return respond(received)
    return checked


def test_a_judgment_refused_every_time_is_the_policy_s_failure_not_an_engineering_error(release_dir, tmp_path, fast_profile):
    """DESIGN's `engineering_error` is a provider, tool or runtime failure. A model whose every
    judgment names a verdict outside the label set failed as a policy: the episode completes
    without a verdict (missing_judgment), scored and kept for RL, and the run did not fail."""
    outside = json.dumps({"verdict": "fake", "confidence": 0.9, "verdict_basis": [], "rationale": "Looks off."})
    with FakeServer(lambda r: Reply(body=chat_completion(outside if judging(r) else "Nothing to search."))) as server:
        log = EventLog(tmp_path / "log.duckdb")
        summary = anyio.run(start_run, log, options(release_dir, server.url))
    assert summary.terminations == {"completed": 1} and summary.status == "completed" and summary.run_errors == 0
    [finished] = events(log, "episode.finished")
    assert (finished["termination"], finished["error"]) == ("completed", "")
    gates = [g for g in events(log, "gate.decided") if g["gate"] == "judgment_schema"]
    assert [(g["passed"], g["reasons"]) for g in gates] == [
        (False, ["verdict_not_in_label_set: 'fake' not in ['authentic', 'out_of_context', 'manipulated', 'unverifiable']"])] * 2
    assert events(log, "judgment.made") == []
    [row] = log.sql("SELECT m.engineering_error, m.result_correct, r.fatal_engineering_error, el.exclusion_reasons, "
                    "list(f.code ORDER BY f.code) AS codes FROM episode_metrics m JOIN post_rollout_rewards r USING (run_id, episode_id) "
                    "JOIN sft_eligibility el USING (run_id, episode_id) JOIN trace_audit_failures f USING (run_id, episode_id) "
                    "GROUP BY ALL").to_pylist()
    assert row == {"engineering_error": False, "result_correct": False, "fatal_engineering_error": False, "codes": ["missing_judgment"],
                   "exclusion_reasons": ["training_prohibited", "no_exportable_trajectory", "trace_audit:missing_judgment", "incorrect_result"]}


@pytest.mark.parametrize("text", [None, "Let me check that page first."], ids=["call-alone", "call-with-text"])
def test_a_judgment_answered_with_a_tool_call_is_asked_again_on_a_well_formed_transcript(text, release_dir, tmp_path, fast_profile):
    """The judgment runs no tools: the call gets an answer (a strict server refuses a tool call
    left unanswered), the gate names what the model did (and what its text was not), and the
    retry is judged."""
    judgments = iter([chat_completion(text, tool_calls=[("call_j", "visit", json.dumps({"url": "https://a.example"}))]),
                      chat_completion(JUDGMENT)])

    def respond(received: Received) -> Reply:
        return Reply(body=next(judgments)) if judging(received) else answer_everything(received)

    with FakeServer(strictly(respond)) as server:
        log = EventLog(tmp_path / "log.duckdb")
        summary = anyio.run(start_run, log, options(release_dir, server.url))
    assert summary.terminations == {"completed": 1}
    assert [c["error"] for c in events(log, "model.called")] == [""] * 3
    gates = [g["reasons"] for g in events(log, "gate.decided") if g["gate"] == "judgment_schema"]
    called = "tool_call_not_judgment: the judgment runs no tools (visit); answer with the JSON judgment"
    assert gates == [[called] if text is None else [called, "not_json: Expecting value at char 0"], []]
    retry = [r.body["messages"] for r in server.received if judging(r)][-1]
    assert retry[-2] == {"role": "tool", "tool_call_id": "call_j", "content": "No tool runs at the judgment."}
    assert [j["verdict"] for j in events(log, "judgment.made")] == ["unverifiable"]


NOT_KEPT_EXACTLY = {
    "call_big": '{"query": "hail", "max_results": 100000000000000000000000000000}',  # past 64 bits
    "call_nan": '{"query": "hail", "max_results": NaN}',  # not JSON
    "call_inf": '{"query": "hail", "max_results": 1e400}',  # read as an infinite float
    "call_deep": "[" * 5000 + "]" * 5000,  # deeper than Python's reader goes
    "call_deep_object": '{"a": ' * 600 + "1" + "}" * 600,  # deeper than orjson writes
}


def test_tool_arguments_the_log_cannot_keep_exactly_reach_the_model_as_not_json(release_dir, tmp_path, fast_profile):
    """Each of these ended the episode as an error (orjson's TypeError, a RecursionError before
    any model.called), or was logged as null. Now each is kept as the model wrote it, under
    `_raw`, the tool answers that the arguments are not valid JSON, and the episode goes on."""
    turns = iter([chat_completion(None, tool_calls=[(i, "text_search", a) for i, a in NOT_KEPT_EXACTLY.items()])])

    def respond(received: Received) -> Reply:
        return answer_everything(received) if judging(received) else Reply(body=next(turns, chat_completion("Enough.")))

    with FakeServer(strictly(respond)) as server:
        log = EventLog(tmp_path / "log.duckdb")
        summary = anyio.run(start_run, log, options(release_dir, server.url))
    assert summary.terminations == {"completed": 1}
    called = events(log, "tool.called")
    assert {c["call_id"]: c["arguments"] for c in called} == {i: {"_raw": a} for i, a in NOT_KEPT_EXACTLY.items()}
    assert len({c["arguments_sha256"] for c in called}) == len(NOT_KEPT_EXACTLY)
    returned = events(log, "tool.returned")
    assert [r["status"] for r in returned] == ["invalid"] * len(NOT_KEPT_EXACTLY)
    assert all("the arguments are not valid JSON" in r["observation"] for r in returned)
    assert [j["verdict"] for j in events(log, "judgment.made")] == ["unverifiable"]
