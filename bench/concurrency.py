"""Concurrency: episodes/s with a provider that answers every call after a fixed 100 ms,
at concurrency 1, 8 and 64, against the ideal latency-bound rate
(concurrency / (model calls per episode x 100 ms)).

The provider is the offline policy plus the sleep, so episodes take the same path as real
ones (tools, log); perception is warmed first so OCR does not count. By default only the
text tools run, so the figures measure the runtime (loop, tools' dispatch, log) rather than
the image tools' CPU, which on 2 cores bounds the rate by itself; `--all-tools` shows that.

    python bench/concurrency.py [--levels 1 8 64] [--rollouts 4] [--all-tools]
"""

from __future__ import annotations

import argparse
import math
import shutil
import tempfile
import time
from pathlib import Path

import anyio

from eviscene.agent.provider import ModelRequest, ModelResponse
from eviscene.eval.options import EvalOptions
from eviscene.eval.run import start_run
from eviscene.providers import OfflineProvider
from eviscene.log import EventLog

RELEASE = Path(__file__).resolve().parents[1] / "examples" / "eviscene-demo-v1" / "runtime_input" / "cases.jsonl"
LATENCY = 0.1


class Clock:
    """Times the episode phase only (planning builds the corpus indexes first)."""

    def planned(self, run_id: str, episodes: int) -> None:
        self.start = time.perf_counter()

    def finished(self, spec, finished) -> None:
        self.end = time.perf_counter()


class SleepyProvider(OfflineProvider):
    async def complete(self, request: ModelRequest) -> ModelResponse:
        await anyio.sleep(LATENCY)
        return await super().complete(request)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmark", default=str(RELEASE))
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--rollouts", type=int, default=4)
    parser.add_argument("--all-tools", action="store_true", help="keep image retrieval and evidence inspection")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="eviscene-bench-conc-"))
    try:
        log = EventLog(workdir / "bench.duckdb")
        anyio.run(start_run, log, EvalOptions(benchmark=args.benchmark, concurrency=4))  # warm perception cache
        print(f"{'concurrency':>11} {'episodes':>8} {'seconds':>8} {'eps/s':>8} {'ideal':>8} {'ratio':>6}")
        for level in args.levels:
            rollouts = max(args.rollouts, 1)
            options = EvalOptions(
                benchmark=args.benchmark, concurrency=level, rollouts_per_case=rollouts,
                disable_image_retrieval=not args.all_tools, disable_evidence_inspection=not args.all_tools,
            )
            clock = Clock()
            summary = anyio.run(lambda: start_run(log, options, provider=SleepyProvider(), observer=clock))
            wall = clock.end - clock.start
            calls = log.sql(
                "SELECT avg(llm_api_calls) AS c FROM episodes WHERE run_id = ?", [summary.run_id]
            ).to_pylist()[0]["c"]
            # Latency-bound ideal for a finite batch: ceil(N / c) waves of one episode's calls.
            ideal = summary.ran / (math.ceil(summary.ran / level) * calls * LATENCY)
            rate = summary.ran / wall
            print(f"{level:>11} {summary.ran:>8} {wall:>8.2f} {rate:>8.2f} {ideal:>8.2f} {rate / ideal:>6.2f}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
