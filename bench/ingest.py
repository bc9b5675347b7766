"""Ingest benchmark: the run writer against a raw DuckDB Arrow insert of the same rows.

64 producer tasks append N events (~500-byte JSON payloads) through one RunWriter; then,
in the same process, the same rows (already numbered and hashed) go into a DuckDB table
with one Arrow insert. Prints events/s for both, their ratio, and peak memory.

    python bench/ingest.py --events 200000
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    args = parser.parse_args()
    total = args.events - args.events % PRODUCERS

    workdir = Path(tempfile.mkdtemp(prefix="eviscene-bench-"))
    try:
        log = EventLog(workdir / "bench.duckdb")
        writer_seconds = anyio.run(_write, log, total)
        writer_rss = _peak_rss_mib()

        rows = log.sql("SELECT * FROM events ORDER BY seq")
        assert rows.num_rows == total, rows.num_rows
        raw = duckdb.connect(str(workdir / "raw.duckdb"), config=DUCKDB_CONFIG)
        raw.execute(migrations()[0][2])
        started = time.perf_counter()
        raw.execute("BEGIN")
        raw.execute("INSERT INTO events SELECT * FROM rows")
        raw.execute("COMMIT")
        raw_seconds = time.perf_counter() - started
        raw.close()

        seal_started = time.perf_counter()
        log.seal()
        seal_seconds = time.perf_counter() - seal_started
        verify_started = time.perf_counter()
        report = log.verify()
        verify_seconds = time.perf_counter() - verify_started
        assert report.intact and report.events == total  # no run.finished: a bare ingest

        writer_rate, raw_rate = total / writer_seconds, total / raw_seconds
        print(f"events                   {total}")
        print(f"writer (64 producers)    {writer_rate:12,.0f} events/s  ({writer_seconds:.2f} s)")
        print(f"raw DuckDB Arrow insert  {raw_rate:12,.0f} events/s  ({raw_seconds:.2f} s)")
        print(f"ratio writer/raw         {writer_rate / raw_rate:12.2f}")
        print(f"seal into archive        {seal_seconds:12.2f} s")
        print(f"log verify               {verify_seconds:12.2f} s")
        print(f"peak RSS after writer    {writer_rss:12.0f} MiB")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
