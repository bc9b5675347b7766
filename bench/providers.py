"""Wire providers under load: episodes/s through `openai_compatible` (Chat Completions over
real HTTP) against a loopback server that answers every call after a fixed 200 ms, at
concurrency 1, 16 and 64, against the ideal latency-bound rate
N / (ceil(N / c) x calls per episode x 0.2 s), and the log writer's share of wall time.

The server (its own process, so it never competes with the run for the GIL) replays a short
investigation: one text_search of the caption, a stop, a judgment. Episodes take the real
path: HTTP client, retries layer, in-flight limiter, tools, log. Perception is warmed first
so OCR does not count.

    python bench/providers.py [--levels 1 16 64] [--cases 16] [--rollouts 4]

With `--llama`, the same through a REAL server instead: llama-cpp-python's server running
SmolLM2-135M-Instruct (`EVISCENE_LLAMA_PYTHON`, `EVISCENE_LLAMA_GGUF`, as the tests and
`.ci/run` set them), at concurrency 1, 4 and 8, each rate as a ratio of concurrency 1's (the
agent reads the perception report, in a 2048-token window, as in the tests):

    python bench/providers.py --llama [--llama-levels 1 4 8] [--llama-episodes 4]
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio

from eviscene.eval.options import EvalOptions
from eviscene.eval.run import start_run
from eviscene.log import EventLog

RELEASE = Path(__file__).resolve().parents[1] / "examples" / "eviscene-demo-v1" / "runtime_input" / "cases.jsonl"
LATENCY = 0.2
JUDGMENT = json.dumps({"verdict": "authentic", "confidence": 0.6, "verdict_basis": [], "rationale": "bench"})


def _completion(content: str | None, tool_calls: list | None = None) -> bytes:
    message: dict = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return json.dumps(
        {
            "id": "bench",
            "object": "chat.completion",
            "created": 0,
            "model": "bench",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050},
        }
    ).encode()


def _answer(body: dict) -> bytes:
    if "response_format" in body:
        return _completion(JUDGMENT)
    if any(m["role"] == "tool" for m in body["messages"]):
        return _completion("Enough.")
    report = body["messages"][1]["content"][0]["text"]
    words = " ".join(report.split("Text printed in the image:", 1)[-1].split()[:8]) or "news photo"
    call = {"id": "call_1", "type": "function", "function": {"name": "text_search", "arguments": json.dumps({"query": words})}}
    return _completion(None, [call])


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out as two writes: without this, Nagle meets delayed ACK (+40 ms).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        time.sleep(LATENCY)
        data = _answer(body)
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the default backlog of 5 drops SYNs when 64 episodes connect at once


def _serve(port_out) -> None:
    server = _Server(("127.0.0.1", 0), _Handler)
    port_out.put(server.server_address[1])
    server.serve_forever()


class Clock:
    """Times the episode phase only (planning builds the corpus indexes first)."""

    def planned(self, run_id: str, episodes: int) -> None:
        self.start = time.perf_counter()

    def finished(self, spec, finished) -> None:
        self.end = time.perf_counter()


LLAMA_PROFILE = """
[profiles.smollm2]
provider = "openai_compatible"
model = "smollm2"
timeout = 600

[profiles.smollm2.max_tokens]
unified_react = 48
unified_judgment = 160
"""


def _llama(args: argparse.Namespace) -> None:
    """Episodes/s through llama.cpp's server at each concurrency, against concurrency 1."""
    python, gguf = os.environ.get("EVISCENE_LLAMA_PYTHON"), os.environ.get("EVISCENE_LLAMA_GGUF")
    if not python or not gguf:
        raise SystemExit("--llama needs EVISCENE_LLAMA_PYTHON and EVISCENE_LLAMA_GGUF (see README: a local llama.cpp server)")
    workdir = Path(tempfile.mkdtemp(prefix="eviscene-bench-llama-"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [python, "-m", "llama_cpp.server", "--model", gguf, "--model_alias", "smollm2", "--host", "127.0.0.1", "--port", str(port),
         "--chat_format", "chatml-function-calling", "--n_ctx", "8192"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"},  # as the tests: spinning threads starve each other on two cores
    )
    try:
        base_url = f"http://127.0.0.1:{port}/v1"
        for _ in range(600):
            try:
                urllib.request.urlopen(base_url + "/models", timeout=2).close()
                break
            except OSError:
                time.sleep(0.3)
        (workdir / "profiles.toml").write_text(LLAMA_PROFILE, encoding="utf-8")
        os.environ["EVISCENE_PROFILES"] = str(workdir / "profiles.toml")
        log = EventLog(workdir / "bench.duckdb")
        anyio.run(start_run, log, EvalOptions(benchmark=args.benchmark, limit=1))  # warm perception
        print(f"{'concurrency':>11} {'episodes':>8} {'calls/ep':>8} {'seconds':>8} {'eps/s':>8} {'vs c=1':>7}")
        baseline = None
        for level in args.llama_levels:
            options = EvalOptions(
                benchmark=args.benchmark, limit=1, rollouts_per_case=args.llama_episodes, concurrency=level, profile="smollm2",
                base_url=base_url, image_access_mode="separate_vlm", vlm_provider="offline", context_window=2048,
            )
            clock = Clock()
            summary = anyio.run(lambda: start_run(log, options, observer=clock))
            wall = clock.end - clock.start
            calls = log.sql("SELECT avg(llm_api_calls) AS c FROM episodes WHERE run_id = ?", [summary.run_id]).to_pylist()[0]["c"]
            rate = summary.ran / wall
            baseline = baseline or rate
            print(f"{level:>11} {summary.ran:>8} {calls:>8.1f} {wall:>8.1f} {rate:>8.3f} {rate / baseline:>7.2f}   {dict(summary.terminations)}")
    finally:
        server.kill()
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmark", default=str(RELEASE))
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--cases", type=int, default=16)
    parser.add_argument("--rollouts", type=int, default=4)
    parser.add_argument("--llama", action="store_true", help="Measure against a real llama.cpp server instead.")
    parser.add_argument("--llama-levels", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--llama-episodes", type=int, default=4)
    args = parser.parse_args()
    if args.llama:
        _llama(args)
        return
    ports: multiprocessing.Queue = multiprocessing.Queue()
    server = multiprocessing.Process(target=_serve, args=(ports,), daemon=True)
    server.start()
    base_url = f"http://127.0.0.1:{ports.get(timeout=30)}/v1"
    workdir = Path(tempfile.mkdtemp(prefix="eviscene-bench-providers-"))
    try:
        log = EventLog(workdir / "bench.duckdb")
        anyio.run(start_run, log, EvalOptions(benchmark=args.benchmark, limit=args.cases, concurrency=4))  # warm perception
        print(f"{'concurrency':>11} {'episodes':>8} {'calls/ep':>8} {'seconds':>8} {'eps/s':>8} {'ideal':>8} {'ratio':>6} {'log share':>9}")
        for level in args.levels:
            options = EvalOptions(
                benchmark=args.benchmark, limit=args.cases, rollouts_per_case=args.rollouts, concurrency=level,
                provider="openai_compatible", model="bench", base_url=base_url,
            )
            clock = Clock()
            summary = anyio.run(lambda: start_run(log, options, observer=clock))
            assert summary.terminations == {"completed": summary.ran}, summary.terminations
            wall = clock.end - clock.start
            calls = log.sql("SELECT avg(llm_api_calls) AS c FROM episodes WHERE run_id = ?", [summary.run_id]).to_pylist()[0]["c"]
            ideal = summary.ran / (math.ceil(summary.ran / level) * calls * LATENCY)
            rate = summary.ran / wall
            print(
                f"{level:>11} {summary.ran:>8} {calls:>8.1f} {wall:>8.2f} {rate:>8.2f} {ideal:>8.2f} {rate / ideal:>6.2f}"
                f" {summary.log_seconds / wall:>8.1%}"
            )
    finally:
        server.terminate()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
