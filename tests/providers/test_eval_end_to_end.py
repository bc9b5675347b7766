"""`eviscene eval run --provider openai_compatible --base-url …` as a user runs it (a real
process), against a real HTTP server that replays a short investigation per case — one
tool call, then a judgment JSON — with faults injected: a 429 before the first answer of
one case, and an overloaded upstream that echoes the request's Authorization header (and a
token the profile's `extra_body` sends) for the other. One episode completes, the other ends
`error` with a clear reason, and neither the API key nor that token appears anywhere: not in
the log file, its live folder, nor any output."""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from eviscene.log import EventLog

from provider_servers import FakeServer, Received, Reply, chat_completion

EVISCENE = str(Path(sys.executable).with_name("eviscene"))
PROFILE = """
[profiles.e2e]
description = "The scripted server: fast retries."
provider = "openai_compatible"
max_retries = 1
backoff_seconds = 0.05
timeout = 30
"""


class ScriptedInvestigation:
    """Answers by case (told apart by the image each request carries)."""

    def __init__(self, completing: str, failing: str):
        self.completing, self.failing = completing, failing
        self.limited_once = False
        self.lock = threading.Lock()

    def __call__(self, received: Received) -> Reply:
        images = received.image_sha256s()
        if self.failing in images:
            echoed, token = received.headers.get("authorization", ""), received.body["metadata"]["access_token"]
            return Reply(500, {"error": {"message": f"upstream overloaded (request carried Authorization: {echoed}, token {token})"}})
        assert images == {self.completing}, images
        body = received.body
        tool_results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        if "response_format" in body:
            cited = [{"evidence_id": "ev-1", "finding": "An earlier copy of the picture."}] if "[ev-1]" in tool_results[0] else []
            verdict = {"verdict": "authentic", "confidence": 0.7, "verdict_basis": cited, "rationale": "Scripted."}
            return Reply(body=chat_completion(json.dumps(verdict), reasoning_content="The earliest copy matches the caption."))
        if not tool_results:
            with self.lock:
                first, self.limited_once = not self.limited_once, True
            if first:
                return Reply(429, {"error": {"message": "Rate limit reached"}}, headers={"Retry-After": "0"})
            query = json.dumps({"query": printed_text(body)})
            return Reply(body=chat_completion(None, reasoning_content="Search the caption.", tool_calls=[("call_1", "text_search", query)]))
        return Reply(body=chat_completion("I have enough to judge.", reasoning_content="One search is enough here."))


def printed_text(body: dict) -> str:
    """The caption words the perception report read, as the model would search them."""
    report = body["messages"][1]["content"][0]["text"]
    lines = report.split("Text printed in the image:", 1)[1].splitlines()
    return " ".join(" ".join(line.strip() for line in lines if line.startswith("  ")).split()[:10])


@pytest.fixture(scope="module")
def end_to_end(release_dir, tmp_path_factory):
    work = tmp_path_factory.mktemp("e2e")
    cases = [json.loads(line) for line in (release_dir / "runtime_input" / "cases.jsonl").read_text().splitlines() if line.strip()][:2]
    completing, failing = cases
    key, token = f"sk-test-{secrets.token_hex(16)}", secrets.token_hex(16)
    # A credential a gateway reads from the body (metadata): the profile gives it, as no key.
    (work / "profiles.toml").write_text(PROFILE + f'extra_body = {{ metadata = {{ access_token = "{token}" }} }}\n', encoding="utf-8")
    env = {
        **os.environ,
        "OPENAI_API_KEY": key,
        "EVISCENE_PROFILES": str(work / "profiles.toml"),
        "EVISCENE_RUNTIME_DIR": str(work / "runtime"),
    }
    log_path = work / "log.duckdb"
    script = ScriptedInvestigation(completing["image_sha256"], failing["image_sha256"])
    with FakeServer(script) as server:
        result = subprocess.run(
            [
                EVISCENE, "--db", str(log_path), "eval", "run",
                "--benchmark", str(release_dir / "runtime_input" / "cases.jsonl"),
                "--case-id", completing["case_id"], "--case-id", failing["case_id"],
                "--profile", "e2e", "--provider", "openai_compatible", "--model", "m",
                "--base-url", f"{server.url}/v1", "--api-key-env", "OPENAI_API_KEY",
                "--concurrency", "2",
            ],
            capture_output=True, text=True, env=env, cwd=work, timeout=600,
        )
    return {
        "result": result, "log_path": log_path, "log": EventLog(log_path), "server": server, "key": key, "token": token,
        "completing": completing["case_id"], "failing": failing["case_id"],
    }


def test_one_episode_completes_and_the_faulted_one_errors_with_a_clear_reason(end_to_end):
    result, log = end_to_end["result"], end_to_end["log"]
    assert result.returncode == 1, result.stderr
    assert "2 of 2 episodes ran (completed 1, error 1)" in result.stdout
    assert end_to_end["server"].mismatches == []
    rows = {r["case_id"]: r for r in log.sql("SELECT case_id, termination, error, verdict FROM episodes").to_pylist()}
    assert rows[end_to_end["completing"]]["termination"] == "completed" and rows[end_to_end["completing"]]["verdict"] == "authentic"
    error = rows[end_to_end["failing"]]["error"]
    assert rows[end_to_end["failing"]]["termination"] == "error"
    assert error.startswith("ProviderError: openai_compatible (chat_completions, model m): POST http://127.0.0.1:")
    assert "/v1/chat/completions failed after 2 tries; last: HTTP 500 Internal Server Error: upstream overloaded" in error


def test_the_log_records_calls_retries_tools_and_the_endpoint(end_to_end):
    log = end_to_end["log"]
    calls = log.sql(
        """
        SELECT e.payload->>'stage' AS stage, e.payload->>'provider' AS provider, e.payload->>'model' AS model,
               e.payload->'retries' AS retries, e.payload->>'reasoning' AS reasoning,
               e.payload->'tool_calls' AS tool_calls
        FROM events e JOIN episodes USING (run_id, episode_id)
        WHERE e.type = 'model.called' AND episodes.case_id = ? ORDER BY e.seq
        """,
        [end_to_end["completing"]],
    ).to_pylist()
    assert [c["stage"] for c in calls] == ["unified_react", "unified_react", "unified_judgment"]
    assert {(c["provider"], c["model"]) for c in calls} == {("openai_compatible", "m")}
    first_retries = json.loads(calls[0]["retries"])
    assert first_retries == [{"status": 429, "error": "HTTP 429 Too Many Requests: Rate limit reached", "waited_seconds": 0.0}]
    assert json.loads(calls[0]["tool_calls"])[0]["name"] == "text_search"
    assert calls[2]["reasoning"] == "The earliest copy matches the caption."
    tools = log.sql("SELECT payload->>'tool' AS tool, payload->>'status' AS status FROM events WHERE type = 'tool.returned'").to_pylist()
    assert tools == [{"tool": "text_search", "status": "ok"}]
    basis = log.sql("SELECT payload->'verdict_basis' AS b FROM events WHERE type = 'judgment.made'").to_pylist()
    assert json.loads(basis[0]["b"])[0]["evidence_id"] == "ev-1"
    manifest = json.loads(log.sql("SELECT payload::VARCHAR AS p FROM events WHERE type = 'run.started'").to_pylist()[0]["p"])
    assert manifest["agent"]["provider"] == "openai_compatible" and manifest["agent"]["base_url"].endswith("/v1")
    assert manifest["agent"]["api_key_env"] == "OPENAI_API_KEY" and manifest["config"]["api_key_env"] == "OPENAI_API_KEY"
    assert manifest["agent"]["llm_wire_api"] == "chat_completions" and manifest["agent"]["max_inflight_requests"] == 2


def test_the_key_is_nowhere_in_the_log_or_the_output(end_to_end):
    key, token, server, log_path = end_to_end["key"], end_to_end["token"], end_to_end["server"], end_to_end["log_path"]
    # The key and the token were really in play: every request carried them.
    assert server.received and all(r.headers["authorization"] == f"Bearer {key}" for r in server.received)
    assert all(r.body["metadata"] == {"access_token": token} for r in server.received)
    files = [p for p in log_path.parent.glob(log_path.name + "*") if p.is_file()]
    files += [p for p in Path(str(log_path) + ".live").rglob("*") if p.is_file()]
    files += [p for p in (log_path.parent / "runs").rglob("*") if p.is_file()]  # the run directory
    assert log_path in files
    for path in files:
        data = path.read_bytes()
        assert key.encode() not in data and token.encode() not in data and b"Bearer" not in data, path
    # Stored data may be compressed on disk: read it back decoded too.
    log = end_to_end["log"]
    texts = log.sql("SELECT payload::VARCHAR AS t FROM events")["t"].to_pylist()
    texts += [bytes(b).decode("utf-8", "replace") for b in log.sql("SELECT content FROM blobs")["content"].to_pylist()]
    assert texts and not any(key in t or token in t or "Bearer" in t for t in texts)
    manifest = json.loads(log.sql("SELECT payload::VARCHAR AS p FROM events WHERE type = 'run.started'").to_pylist()[0]["p"])
    assert manifest["agent"]["request_options"] == {"metadata": {"access_token": "[REDACTED]"}}
    result = end_to_end["result"]
    for output in (result.stdout, result.stderr):
        assert key not in output and token not in output and "Bearer" not in output


@pytest.mark.parametrize(("base_url", "stored"), [
    ("http://reader:{user_key}@127.0.0.1:1/v1?api_key={query_key}", "http://[REDACTED]@127.0.0.1:1/v1?api_key=[REDACTED]"),
    # A password holding `@` (the client ends the user-info at the last one) and a parameter
    # name the server reads percent-decoded, as `api_key`.
    ("http://reader:p@{user_key}@127.0.0.1:1/v1?api%5Fkey={query_key}", "http://[REDACTED]@127.0.0.1:1/v1?api%5Fkey=[REDACTED]"),
    # Any parameter whose name says it holds a secret, not only the key names.
    ("http://reader:{user_key}@127.0.0.1:1/v1?client_secret={query_key}", "http://[REDACTED]@127.0.0.1:1/v1?client_secret=[REDACTED]"),
    # A password's short form, and credential words run together.
    ("http://reader:{user_key}@127.0.0.1:1/v1?pwd={query_key}&clientsecret={query_key}",
     "http://[REDACTED]@127.0.0.1:1/v1?pwd=[REDACTED]&clientsecret=[REDACTED]"),
])
def test_a_key_inside_the_base_url_is_stored_and_printed_nowhere(base_url, stored, release_dir, tmp_path):
    """`--base-url http://user:KEY@host/v1?api_key=KEY`: the run's manifest, the run
    directory, the episode's error and every output show the URL with its credentials
    masked (the endpoint is a closed port: the run waits out a short outage, then stops and
    says so, quoting the URL)."""
    user_key, query_key = f"ukey-{secrets.token_hex(12)}", f"qkey-{secrets.token_hex(12)}"
    (tmp_path / "profiles.toml").write_text(PROFILE, encoding="utf-8")
    env = {**os.environ, "EVISCENE_PROFILES": str(tmp_path / "profiles.toml"), "EVISCENE_RUNTIME_DIR": str(tmp_path / "rt")}
    env.pop("OPENAI_API_KEY", None)
    case_id = json.loads((release_dir / "runtime_input" / "cases.jsonl").read_text().splitlines()[0])["case_id"]
    log_path = tmp_path / "log.duckdb"
    result = subprocess.run(
        [EVISCENE, "--db", str(log_path), "eval", "run", "--benchmark", str(release_dir / "runtime_input" / "cases.jsonl"),
         "--case-id", case_id, "--profile", "e2e", "--provider", "openai_compatible", "--model", "m",
         "--base-url", base_url.format(user_key=user_key, query_key=query_key), "--output-dir", "run", "--provider-outage-timeout", "1"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600,
    )
    assert result.returncode == 1, result.stderr  # the run stopped: nothing listens there
    log = EventLog(log_path)
    manifest = json.loads(log.sql("SELECT payload::VARCHAR AS p FROM events WHERE type = 'run.started'")["p"][0].as_py())
    assert manifest["agent"]["base_url"].startswith(stored)
    assert manifest["config"]["base_url"] == manifest["agent"]["base_url"]
    assert "http://[REDACTED]@127.0.0.1:1/v1" in result.stdout + result.stderr
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "profiles.toml"]
    texts = log.sql("SELECT payload::VARCHAR AS t FROM events")["t"].to_pylist()
    texts += [bytes(b).decode("utf-8", "replace") for b in log.sql("SELECT content FROM blobs")["content"].to_pylist()]
    for key in (user_key, query_key):
        assert not any(key.encode() in p.read_bytes() for p in files)
        assert not any(key in t for t in texts)
        assert key not in result.stdout and key not in result.stderr
    resumed = subprocess.run([EVISCENE, "--db", str(log_path), "eval", "resume", manifest_run_id(log)],
                             capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert resumed.returncode == 2 and "started with a credential inside --base-url" in resumed.stderr


def manifest_run_id(log: EventLog) -> str:
    return log.sql("SELECT run_id FROM events WHERE type = 'run.started'")["run_id"][0].as_py()


def test_credentials_a_server_echoes_bare_from_the_base_url_and_the_body_are_stored_nowhere(release_dir, tmp_path):
    """A server that answers with the key it was sent, bare (no URL or header around it): the
    URL's user-info key, the `Basic` header the client made of it, and a profile's
    `authorization = "Bearer …"` body field. None reaches the log, the run directory or the output."""
    user_key, body_token = f"ukey-{secrets.token_hex(12)}", f"tok-{secrets.token_hex(12)}"
    (tmp_path / "profiles.toml").write_text(
        PROFILE + f'extra_body = {{ metadata = {{ authorization = "Bearer {body_token}" }} }}\n', encoding="utf-8")
    env = {**os.environ, "EVISCENE_PROFILES": str(tmp_path / "profiles.toml"), "EVISCENE_RUNTIME_DIR": str(tmp_path / "rt")}
    env.pop("OPENAI_API_KEY", None)

    def echo(received: Received) -> Reply:
        said = (f"I received credential {user_key}, header {received.headers.get('authorization')}, "
                f"token {received.body['metadata']['authorization'].split()[-1]}")
        if "response_format" in received.body:
            judgment = {"verdict": "unverifiable", "confidence": 0.4, "verdict_basis": [], "rationale": said}
            return Reply(body=chat_completion(json.dumps(judgment)))
        return Reply(body=chat_completion(said))

    case_id = json.loads((release_dir / "runtime_input" / "cases.jsonl").read_text().splitlines()[0])["case_id"]
    with FakeServer(echo) as server:
        result = subprocess.run(
            [EVISCENE, "--db", "log.duckdb", "eval", "run", "--benchmark", str(release_dir / "runtime_input" / "cases.jsonl"),
             "--case-id", case_id, "--profile", "e2e", "--provider", "openai_compatible", "--model", "m",
             "--base-url", server.url.replace("http://", f"http://reader:{user_key}@") + "/v1", "--output-dir", "run"],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600,
        )
    assert result.returncode == 0, result.stderr
    sent = {r.headers["authorization"].split()[-1] for r in server.received}
    assert sent == {base64.b64encode(f"reader:{user_key}".encode()).decode()}  # the echo really held them
    log = EventLog(tmp_path / "log.duckdb")
    texts = log.sql("SELECT payload::VARCHAR AS t FROM events")["t"].to_pylist()
    assert any("I received credential [REDACTED], header Basic [REDACTED], token [REDACTED]" in t for t in texts)
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "profiles.toml"]
    for secret in (user_key, body_token, *sent):
        assert not any(secret in t for t in texts), secret
        assert not any(secret.encode() in p.read_bytes() for p in files), secret
        assert secret not in result.stdout + result.stderr
