"""Offline agent cost on the bundled release: seconds and peak memory per episode, and where
the time goes (OCR + hashing in perception, each tool, the log writer).

The baseline is the same release's images read by a plain Python pass (RapidOCR + phash of
every image, no agent, no log, no cache), measured in the same run after the agent.

    python bench/agent.py [--rollouts 2] [--concurrency 4]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import tempfile
import time
from pathlib import Path

import anyio
import imagehash
import numpy as np
from PIL import Image
from rapidocr_onnxruntime import RapidOCR

from eviscene.eval.options import EvalOptions
from eviscene.eval.run import start_run
from eviscene.release import load_cases, load_release
from eviscene.log import EventLog

RELEASE = Path(__file__).resolve().parents[1] / "examples" / "eviscene-demo-v1" / "runtime_input" / "cases.jsonl"


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmark", default=str(RELEASE))
    parser.add_argument("--rollouts", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()

    cases = load_cases(load_release(args.benchmark))
    workdir = Path(tempfile.mkdtemp(prefix="eviscene-bench-agent-"))
    try:
        log = EventLog(workdir / "bench.duckdb")
        options = EvalOptions(benchmark=args.benchmark, rollouts_per_case=args.rollouts, concurrency=args.concurrency)
        started = time.perf_counter()
        summary = anyio.run(start_run, log, options)
        wall = time.perf_counter() - started
        # Baseline: the same images read by a plain Python pass with its own OCR engine and
        # imagehash (no agent, no log, no cache).
        engine = RapidOCR()
        started = time.perf_counter()
        for case in cases:
            with Image.open(case.image_file) as image:
                engine(np.array(image.convert("RGB")))
                imagehash.phash(image)
        baseline = time.perf_counter() - started
        episodes = summary.ran
        split = log.sql(
            """
            SELECT 'perception (OCR + phash)' AS part, sum((payload->>'latency_ms')::DOUBLE) / 1000 AS seconds
            FROM events WHERE type = 'perception.reported'
            UNION ALL
            SELECT 'tool ' || (payload->>'tool'), sum((payload->>'latency_ms')::DOUBLE) / 1000
            FROM events WHERE type = 'tool.returned' GROUP BY ALL
            UNION ALL
            SELECT 'model (offline policy)', sum((payload->>'latency_ms')::DOUBLE) / 1000
            FROM events WHERE type = 'model.called'
            ORDER BY seconds DESC
            """
        ).to_pylist()
        accuracy = log.sql(
            "SELECT avg((e.verdict = g.label)::INT) AS acc FROM episodes e JOIN gold_labels g USING (run_id, case_id)"
        ).to_pylist()[0]["acc"]
        print(f"episodes                      {episodes} ({len(cases)} cases x {args.rollouts} rollouts, concurrency {args.concurrency})")
        print(f"wall                          {wall:8.2f} s   ({wall / episodes:.3f} s per episode)")
        print(f"baseline: plain OCR+phash     {baseline:8.2f} s   ({baseline / len(cases):.3f} s per image, once per case)")
        print(f"ratio wall/baseline           {wall / baseline:8.2f}")
        print(f"log writer (hash+write)       {summary.log_seconds:8.2f} s   ({summary.log_seconds / wall:.1%} of wall)")
        for row in split:
            print(f"  {row['part']:<28}{row['seconds']:8.2f} s   (summed over episodes)")
        print(f"accuracy                      {accuracy:8.3f}")
        print(f"peak RSS                      {_peak_rss_mib():8.0f} MiB")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
