"""CLI start-up benchmark: `eviscene runs`, `sql`, `views` and `why` as whole processes on a
small log, against baselines measured in the same run: `python -c pass` (the interpreter),
`duckdb connect` (import duckdb, open the log read-only, `select 1`: the floor any DuckDB CLI
pays) and a process that imports duckdb and counts the log's events. Prints the median of N
runs of each and its ratio to the `duckdb connect` baseline, and the modules each command
imported (`-X importtime`, top 5 by time).

    python bench/cli.py --repeat 5 [--log demo.duckdb --episode demo-0001]

Where the time went (cProfile, -X importtime; demo log of 1.4k events): pyarrow (with numpy)
~0.4 s, pydantic (the event models, via the writer and merge modules the store imported, and
the source policy the SQL functions imported) ~0.25 s, numpy again for DuckDB's Python
functions, and the view catalog. Now a reading command imports duckdb, click and the store's
reading modules only: results print from DuckDB's own rows (Arrow only for a Parquet file or
a type whose Python values differ), the writer, merge and verify load when used, and a
query's connection registers only the SQL functions its views name. Figures: README.md
"Performance" (ratios to `duckdb connect` in one run, medians of 5, loaded 2-core machine).

Then (in-process laps of `eviscene runs` on the demo log at a load average of ~18): `import
duckdb` alone 0.44-0.49 s, more than the 0.3 s goal for the whole command; the CLI's own
imports ~0.1 s (click ~half); the view catalog 22-35 ms, two thirds of it regular
expressions (now: headers split without a regex, each view's dependencies cached in the
runtime directory under the SQL files' digest: ~10 ms, the files' reads); the snapshot
~0.12 s, a `duckdb_tables()` scan ~25-70 ms of it (now: sealed_segments asked directly,
~0.05 s); creating the 8 views `runs` reads ~0.08 s and the query ~0.13 s (DuckDB binding
and planning ~35 ms, the rest execution), left as they are.

Then (demo log, `runs` 0.37 s against a 0.20 s floor; CPU seconds, since the wall time on
this shared machine mostly measures the other jobs): of the ~0.11-0.2 s CPU above the
floor, ~30-60 ms was compiling eviscene's modules from source in every process (this
machine sets PYTHONDONTWRITEBYTECODE=1 and an editable checkout has no cached bytecode;
an installed package has it, so this bench now byte-compiles first, `--as-checked-out`
to skip); ~25-35 ms was DuckDB binding each view twice, once at CREATE VIEW and again in
the query (DuckDB's profiler: the query alone spends ~18 ms binding and ~17 ms optimizing
over 1.4k rows, execution a few ms); `runs` now inlines them as NOT MATERIALIZED CTEs
(`EventStore.query(inline_views=True)`), bound once. Interleaved medians of 9 at a load
of 9-12: CPU main 0.44-0.46 s, this branch 0.41 s from source and 0.35 s compiled,
floor 0.23-0.24 s. What is left above the floor: click and the CLI's modules (~35 ms
CPU, click half), the view catalog (~9 ms: reading the 60 SQL files), the first
in-memory connection and sandbox (~10 ms more than the floor's), and the query (~35 ms).

Then (December 5th; `why` on the bundled release's 1.4k-event log): pyarrow imports pandas,
where it is installed (the test extras install it, as most ML environments do), on the first
datetime of a TIMESTAMPTZ column and on any `pa.array`/`pa.table` of Python lists: ~0.1 s of
CPU and 35 MB of `why`, ~0.3 s and 50 MB of `dataset export`. Now `rows` reads a zoned
timestamp column as epoch microseconds and the export builds its Arrow columns from buffers;
the same bytes out (why --json, dataset export, materialize). Alternating whole processes
(three pairs, load 4-6): `why` 0.84-0.95 -> 0.70-0.75 s user CPU, 200 -> 166 MB; `dataset
export` 1.57-1.70 -> 1.34-1.39 s, 268 -> 219 MB. What is left of `why`: DuckDB computing its
71 view tables over the episode's group, ~0.5 s.

Then (December 7th; the small log, load 0.5): `runs` 0.33 s, 2.04x `duckdb connect`; `-X
importtime` showed asyncio (with ssl, concurrent.futures and logging) ~20 ms of it, imported by
`rules.blocking` at module level though only a writing command runs async work. Imported where
it runs: `runs` 0.281 s (1.78x), `sql` 0.268 -> 0.225 s, `views` 0.193 -> 0.165 s, medians of 7.
What is left of `runs` (cProfile, in process, 0.15 s): the query ~60 ms, the first in-memory
connection ~30 ms, the archive's schema checks ~26 ms (their first catalog reads; ~1 ms each
once warm), the view catalog ~10 ms.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from eviscene.events import EpisodeFinished, GateDecided, RunStarted
from eviscene.log import EventLog
from eviscene.store import EventDraft

EVISCENE = str(Path(sys.executable).with_name("eviscene"))


def _small_log(folder: Path) -> Path:
    log = EventLog(folder / "bench.duckdb")

    async def write() -> None:
        async with log.writer("bench-run") as writer:
            await writer.emit(EventDraft(RunStarted(
                started_at="2026-11-30T00:00:00+00:00", git_commit="", benchmark={}, agent={}, source_access_policy={}
            )))
            for step in range(200):
                await writer.emit(EventDraft(GateDecided(gate="demo", subject=f"s{step}", passed=True), episode_id="ep-1", attempt=1, step=step))
            await writer.emit(EventDraft(EpisodeFinished(termination="completed", time_taken=1.0), episode_id="ep-1", attempt=1, step=200))

    anyio.run(write)
    log.seal()
    return log.path


def _compile_bytecode() -> None:
    """Byte-compile the package, as installing it does. An editable checkout run with
    PYTHONDONTWRITEBYTECODE=1 (this shared machine sets it) has no cached bytecode and
    compiles each eviscene module a command imports from source, in every process: ~30 ms
    of `eviscene runs`'s CPU that no installed copy pays."""
    import compileall

    import eviscene

    compileall.compile_dir(Path(eviscene.__file__).parent, quiet=1)


def _median_seconds(command: list[str], repeat: int, cwd: Path) -> tuple[float, float]:
    """Median wall and CPU (user + system) seconds of the whole process: on a shared, loaded
    machine the wall time mostly measures the other jobs, the CPU time much less."""
    times, cpu = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, cwd=cwd)
        times.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(times), statistics.median(cpu)


def _slowest_imports(command: list[str], cwd: Path, top: int = 5) -> list[str]:
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    result = subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, check=False)
    rows = []
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = (part.strip() for part in line.removeprefix("import time:").split("|"))
            if cumulative.isdigit() and not name.startswith(" "):
                rows.append((int(cumulative), name.strip()))
    return [f"{name} {us / 1e6:.2f}s" for us, name in sorted(rows, reverse=True)[:top]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--log", type=Path, help="Time against this log instead of a small generated one.")
    parser.add_argument("--episode", default="ep-1", help="The episode `why` explains (with --log).")
    parser.add_argument("--as-checked-out", action="store_true",
                        help="Do not byte-compile the package first (time it as an uncompiled checkout runs).")
    args = parser.parse_args()
    if not args.as_checked_out:
        _compile_bytecode()
    folder = Path(tempfile.mkdtemp(prefix="eviscene-bench-cli-"))
    try:
        log_path = args.log.resolve() if args.log else _small_log(folder)
        duckdb_query = (
            "import duckdb; con = duckdb.connect(); "
            f"con.execute(\"ATTACH '{log_path}' AS a (READ_ONLY)\"); con.execute('SELECT count(*) FROM a.events').fetchall()"
        )
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "duckdb connect": [sys.executable, "-c", f"import duckdb; duckdb.connect({str(log_path)!r}, read_only=True).sql('select 1')"],
            "duckdb query": [sys.executable, "-c", duckdb_query],
            "eviscene runs": [EVISCENE, "--db", str(log_path), "runs"],
            "eviscene sql": [EVISCENE, "--db", str(log_path), "sql", "SELECT count(*) FROM events"],
            "eviscene views": [EVISCENE, "views"],
            "eviscene why": [EVISCENE, "--db", str(log_path), "why", args.episode],
        }
        medians = {name: _median_seconds(command, args.repeat, folder) for name, command in commands.items()}
        wall_baseline, cpu_baseline = medians["duckdb connect"]
        events = EventLog(log_path).sql("SELECT count(*) AS n FROM events")["n"][0].as_py()
        print(f"median of {args.repeat} whole processes on a log of {events} events, load average {os.getloadavg()[0]:.1f}")
        for name, (seconds, cpu) in medians.items():
            print(f"{name:<16} {seconds:6.3f} s  {seconds / wall_baseline:5.2f}x duckdb connect   "
                  f"cpu {cpu:6.3f} s  {cpu / cpu_baseline:5.2f}x")
        for name in ("eviscene runs", "eviscene sql"):
            print(f"{name} imports (cumulative): " + ", ".join(_slowest_imports(commands[name], folder)))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
