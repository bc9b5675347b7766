"""Ingest benchmark: the run writer against a raw DuckDB Arrow insert of the same rows.

64 producer tasks append N events (~500-byte JSON payloads) through one RunWriter; then,
in the same process, the same rows (already numbered and hashed) go into a DuckDB table
with one Arrow insert. Each round does both; the figures are each side's best round (the
machine is shared: the load average is printed beside them, and every round's ratio), with
the CPU seconds of the whole process during each side (the writer's file writes run in a
thread, DuckDB's insert in its own threads), peak memory, seal and verify times.

    python bench/ingest.py --events 200000 [--repeats 3]

Where the writer's time went (cProfile and per-step CPU clocks, 32k events, 2 shared cores,
load average 13-22, December 2026):
- The first `pa.array` of a process imports pandas (pyarrow asks whether its input is a
  pandas object): 0.85 s on the event loop in the writer's first batch, every producer (and
  in a run, every episode) waiting. Columns are now built from their buffers
  (`eviscene/store/columns.py`); the writer loads no pandas.
- Per event on the loop: pydantic serialization 5-7 us, the two sha256 of the chain 3-4.5 us
  and 3.4 us (OpenSSL's per-object cost is a third of each), the draft and the channel
  ~2.5 us, Arrow columns from Python lists ~3 us (per-value type dispatch; now ~0.5 us).
  The payload is now hashed as the bytes pydantic writes (no decode and re-encode); the
  chain's definition is unchanged (`tests/store/test_writer.py` computes it by hand, and a
  rewrite of the baseline log's 1,400 events gave the same ids, payloads and hashes).
- The parquet write (zstd, sha256, three fsyncs) ran between batches; now a second task
  writes one batch in a thread while the next is numbered and hashed.
Writer CPU for 32k events went from 0.72-0.77 s to 0.37-0.45 s (loop part 0.52-0.57 s to
0.19-0.25 s). What is left is serialization and hashing, ~9 us an event against the raw
insert's ~5 us of CPU: on a loaded machine the wall ratio follows the scheduler (0.40-0.50
in one run at load 22, the code before this change 0.13-0.32 in the same minute).

December 7th: the chain walk that seal and verify run (and now every export and materialize)
takes a run's events between its first and its run.finished a batch at a time where 64 or more
continue the chain: their fields joined by Arrow, two sha256 a row, the row-by-row walk where
anything is otherwise (eviscene/store/verify.py). 200k events, one run while the test suite ran
on the other core (load 2.9): writer/raw 0.63 (rounds 0.65, 0.64, 0.63), seal 1.82 s (2.39 s the
round before), log verify 0.75 s (0.99 s). A 10k-episode run's 320k events: the walk 1.02-1.13 s
-> 0.67-0.70 s of CPU, the old and new walk alternating in one process.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

import anyio
import duckdb

from eviscene.events import ToolReturned
from eviscene.log import EventLog
from eviscene.store import EventDraft
from eviscene.store.migrate import migrations
from eviscene.store.snapshot import DUCKDB_CONFIG

PRODUCERS = 64
PAYLOAD_POOL = 4096


def _payload(i: int) -> ToolReturned:
    # ~500 bytes of JSON, varied so compression does not flatter the writer.
    return ToolReturned(
        call_id=f"call-{i}",
        tool="text_search",
        status="ok",
        observation=(f"[ev-{i % 7}] result {i}: " + "flood waters rise over the old bridge at dawn; " * 8)[:400],
        latency_ms=float(i % 97),
    )


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def _write(log: EventLog, total: int) -> float:
    per_producer = total // PRODUCERS
    # A pool of ready payloads: the clock measures the writer, not pydantic validation, and
    # memory stays what the writer itself holds. Ids still differ (episode and step vary).
    pool = [_payload(i) for i in range(PAYLOAD_POOL)]
    started = time.perf_counter()
    async with log.writer("bench-run") as writer:

        async def produce(producer: int) -> None:
            for j in range(per_producer):
                payload = pool[(producer * per_producer + j) % PAYLOAD_POOL]
                await writer.emit(EventDraft(payload, episode_id=f"ep-{producer}", attempt=1, step=j))

        async with anyio.create_task_group() as tg:
            for producer in range(PRODUCERS):
                tg.start_soon(produce, producer)
    return time.perf_counter() - started


def _one_round(total: int) -> dict[str, float]:
    """Writer, then raw insert of the same rows; wall and CPU seconds (all threads) of each."""
    workdir = Path(tempfile.mkdtemp(prefix="eviscene-bench-"))
    try:
        log = EventLog(workdir / "bench.duckdb")
        cpu = time.process_time()
        writer_seconds = anyio.run(_write, log, total)
        writer_cpu = time.process_time() - cpu

        rows = log.sql("SELECT * FROM events ORDER BY seq")
        assert rows.num_rows == total, rows.num_rows
        raw = duckdb.connect(str(workdir / "raw.duckdb"), config=DUCKDB_CONFIG)
        raw.execute(migrations()[0][2])
        started, cpu = time.perf_counter(), time.process_time()
        raw.execute("BEGIN")
        raw.execute("INSERT INTO events SELECT * FROM rows")
        raw.execute("COMMIT")
        raw_seconds, raw_cpu = time.perf_counter() - started, time.process_time() - cpu
        raw.close()

        seal_started = time.perf_counter()
        log.seal()
        seal_seconds = time.perf_counter() - seal_started
        verify_started = time.perf_counter()
        report = log.verify()
        verify_seconds = time.perf_counter() - verify_started
        assert report.intact and report.events == total  # no run.finished: a bare ingest
        return {
            "writer": writer_seconds, "writer_cpu": writer_cpu, "raw": raw_seconds, "raw_cpu": raw_cpu,
            "seal": seal_seconds, "verify": verify_seconds,
        }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3, help="Rounds; each figure is its best round (the machine is shared).")
    args = parser.parse_args()
    total = args.events - args.events % PRODUCERS

    load_before = os.getloadavg()[0]
    rounds = [_one_round(total) for _ in range(args.repeats)]
    writer_rss = _peak_rss_mib()
    best = {key: min(r[key] for r in rounds) for key in rounds[0]}

    writer_rate, raw_rate = total / best["writer"], total / best["raw"]
    print(f"events                   {total}   (best of {args.repeats} rounds; load average {load_before:.1f} -> {os.getloadavg()[0]:.1f})")
    print(f"writer (64 producers)    {writer_rate:12,.0f} events/s  ({best['writer']:.2f} s, {best['writer_cpu']:.2f} s CPU)")
    print(f"raw DuckDB Arrow insert  {raw_rate:12,.0f} events/s  ({best['raw']:.2f} s, {best['raw_cpu']:.2f} s CPU)")
    print(f"ratio writer/raw         {writer_rate / raw_rate:12.2f}   (CPU time raw/writer {best['raw_cpu'] / best['writer_cpu']:.2f})")
    per_round = "  ".join(f"{r['raw'] / r['writer']:.2f}" for r in rounds)
    print(f"ratio per round          {per_round}")
    print(f"seal into archive        {best['seal']:12.2f} s")
    print(f"log verify               {best['verify']:12.2f} s")
    print(f"peak RSS                 {writer_rss:12.0f} MiB")


if __name__ == "__main__":
    main()
