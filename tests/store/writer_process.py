"""A real writer process for the concurrency and crash tests: appends events to one run in
small committed batches, printing `committed N` after each, sleeping between them, and ends
the run with run.finished (so 1 + batches * per_batch + 1 events)."""

import sys

import anyio

from eviscene.events import GateDecided, RunFinished, RunStarted
from eviscene.log import EventLog
from eviscene.store import EventDraft


async def main(log_path: str, run_id: str, batches: int, per_batch: int, pause: float) -> None:
    async with EventLog(log_path).writer(run_id, flush_seconds=0.05) as writer:
        await writer.emit(EventDraft(RunStarted(
            started_at="2026-11-30T00:00:00+00:00", git_commit="", benchmark={}, agent={}, source_access_policy={}
        )))
        for batch in range(batches):
            for i in range(per_batch):
                step = batch * per_batch + i
                await writer.emit(EventDraft(GateDecided(gate="demo", subject=f"s{step}", passed=True), episode_id="e", attempt=1, step=step))
            await writer.sync()
            print(f"committed {(batch + 1) * per_batch}", flush=True)
            await anyio.sleep(pause)
        await writer.emit(EventDraft(RunFinished(
            status="completed", completed_at="2026-11-30T01:00:00+00:00", num_episodes=1, num_errors=0
        )))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
