"""Scale-out: episodes/s with `--executor ray` at 1, 2 and 4 workers against the in-process
runner, on a latency-bound provider and on the CPU-bound embedded tools.

- Latency-bound: a real loopback Chat Completions server answers every call after 100 ms
  with a judgment (two model calls an episode); perception is warmed first, so the episode
  is model calls, the runtime and the log. Ideal rate: workers x concurrency / (2 x 100 ms).
- CPU-bound: the offline policy with every embedded tool and no perception cache (OCR,
  reverse image search, comparisons). The ideal is the in-process rate x min(workers, cores).

Ray starts a local cluster of `--cpus` logical CPUs once; its start-up is printed apart and not
counted in a run's seconds. Ray's overhead per episode is the 1-worker Ray run's seconds per
episode minus the in-process runner's at the same concurrency.

    python bench/scale.py [--workers 1 2 4] [--concurrency 8] [--rollouts 2] [--cpus 4]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import ray

from eviscene.eval.options import EvalOptions
from eviscene.eval.run import start_run
from eviscene.log import EventLog

RELEASE = Path(__file__).resolve().parents[1] / "examples" / "eviscene-demo-v1" / "runtime_input" / "cases.jsonl"
LATENCY = 0.1
CALLS_PER_EPISODE = 2  # the fake server answers the first call with the judgment itself


class JudgmentServer(BaseHTTPRequestHandler):
    """Chat Completions that answers every request after LATENCY with a valid judgment."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        time.sleep(LATENCY)
        judgment = {"verdict": "authentic", "confidence": 0.5, "verdict_basis": []}
        body = json.dumps({
            "id": "c", "object": "chat.completion", "created": 0, "model": "bench",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": json.dumps(judgment)}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Clock:
    """Times the episode phase only (planning and starting workers come first)."""

    def planned(self, run_id: str, episodes: int) -> None:
        self.start = time.perf_counter()

    def finished(self, spec, finished) -> None:
        self.end = time.perf_counter()


def timed_run(log: EventLog, options: EvalOptions) -> tuple[int, float]:
    clock = Clock()
    summary = anyio.run(lambda: start_run(log, options, observer=clock))
    assert summary.errored == 0, summary.terminations
    return summary.ran, clock.end - clock.start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmark", default=str(RELEASE))
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rollouts", type=int, default=2)
    parser.add_argument("--cpus", type=int, default=4, help="logical CPUs of the local Ray cluster")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="eviscene-bench-scale-"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), JudgmentServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        log = EventLog(workdir / "bench.duckdb")
        anyio.run(start_run, log, EvalOptions(benchmark=args.benchmark, concurrency=2))  # warm perception cache
        clock = time.perf_counter()
        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
        print(f"Ray local cluster start: {time.perf_counter() - clock:.1f} s ({args.cpus} CPUs; host has {os.cpu_count()} cores)")
        latency = dict(provider="openai_compatible", model="bench", base_url=f"http://127.0.0.1:{server.server_port}/v1",
                       llm_wire_api="chat_completions")
        cpu = dict(perception_cache_enabled=False)
        print(f"{'load':>8} {'executor':>9} {'workers':>7} {'episodes':>8} {'seconds':>8} {'eps/s':>7} {'ideal':>7} {'ratio':>6}")
        for load, flags in (("latency", latency), ("cpu", cpu)):
            base = EvalOptions(benchmark=args.benchmark, concurrency=args.concurrency, rollouts_per_case=args.rollouts, **flags)
            ran, local_wall = timed_run(log, base)
            local_rate = ran / local_wall
            ideal_one = args.concurrency / (CALLS_PER_EPISODE * LATENCY) if load == "latency" else local_rate
            print(f"{load:>8} {'local':>9} {1:>7} {ran:>8} {local_wall:>8.2f} {local_rate:>7.2f} {ideal_one:>7.2f} "
                  f"{local_rate / ideal_one:>6.2f}")
            for workers in args.workers:
                ran, wall = timed_run(log, base.model_copy(update={"executor": "ray", "workers": workers}))
                rate = ran / wall
                ideal = ideal_one * (workers if load == "latency" else min(workers, os.cpu_count() or 1))
                print(f"{load:>8} {'ray':>9} {workers:>7} {ran:>8} {wall:>8.2f} {rate:>7.2f} {ideal:>7.2f} {rate / ideal:>6.2f}")
                if workers == 1:
                    overhead = (wall - local_wall) / ran * 1000
                    print(f"{'':>8} Ray overhead at 1 worker: {overhead:+.0f} ms per episode against the in-process runner")
    finally:
        server.shutdown()
        ray.shutdown()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
