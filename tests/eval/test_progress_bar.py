"""The progress bar's rate: episodes finished over the time the bar shows, whose clock starts
as the run's episodes start to be scheduled, on Ray before its workers start as locally."""

import io
from types import SimpleNamespace

import anyio
import pytest
from rich.console import Console

from eviscene.cli.eval import _ProgressBar
from eviscene.errors import EvisceneError
from eviscene.eval import run as run_module
from eviscene.eval.options import EvalOptions
from eviscene.eval.run import start_run
from eviscene.log import EventLog


def _drawn(bar: _ProgressBar) -> str:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(bar.progress.get_renderable())
    return console.file.getvalue()


def test_the_rate_is_the_episodes_over_the_time_the_bar_shows():
    """On Ray the bar ended `6/6 0 errored · 25.33/s 0:00:11`: its rate counted from when the
    workers had loaded the release, its elapsed time from the bar's creation."""
    now = [100.0]
    bar = _ProgressBar(False, clock=lambda: now[0])
    now[0] = 102.0  # the release loaded: not the episodes' time
    bar.planned("r", 6)
    now[0] = 110.0  # Ray's workers start
    for _ in range(5):
        bar.finished(None, SimpleNamespace(counts_as_error=False))
    now[0] = 112.0
    assert "5/6 0 errored · 0.50/s 0:00:10" in _drawn(bar)
    bar.finished(None, SimpleNamespace(counts_as_error=True))
    now[0] = 150.0  # drawn again later: the time and the rate stay those of the last episode
    assert "6/6 1 errored · 0.60/s 0:00:10" in _drawn(bar)


def test_the_progress_clock_starts_before_the_ray_workers_do(release, tmp_path, monkeypatch):
    """The run told the bar of its episodes only once the Ray workers had loaded the release,
    so their start-up (seconds) was left out of its rate."""
    told = []

    class Observer:
        def planned(self, run_id: str, episodes: int) -> None:
            told.append(("planned", episodes))

        def finished(self, spec, finished) -> None: ...

    class WorkersThatDoNotStart:
        def __init__(self, **_):
            pass

        async def run(self, todo, **_):
            told.append(("workers starting", len(todo)))
            raise EvisceneError("the Ray workers could not start: a stand-in")

    monkeypatch.setattr(run_module, "RayExecutor", WorkersThatDoNotStart)
    options = EvalOptions(benchmark=str(release / "runtime_input" / "cases.jsonl"), limit=1, rollouts_per_case=2, executor="ray")
    with pytest.raises(EvisceneError, match="a stand-in"):
        anyio.run(lambda: start_run(EventLog(tmp_path / "log.duckdb"), options, observer=Observer()))
    assert told == [("planned", 2), ("workers starting", 2)]
