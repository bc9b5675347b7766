"""Viewer benchmark: how long `eviscene view` takes to answer the runs page, a run's
dashboard, the episodes page (filtered and searched) and an episode page over a synthetic
log (bench/materialize.py's generator, ~40 events an episode), beside the plain query
`SELECT * FROM runs` (what `eviscene runs` asks) measured in the same run. The run's numbers
are first filed beside the log as its seal files them (`filed at seal`: what `eval run` pays
once, at its end). Pages are fetched over real HTTP from a real server, each timed three ways:
`first` (the first request ever: the runtime directory, here a temporary one, is empty; the
run's row and dashboard numbers come from what its seal filed), `restart` (the first request
to a new server once a first one has answered) and `warm` (the same server again, median of
3). Up to 10k episodes, `eviscene report` of the run is timed too. `--keep DIR` keeps the
generated logs in DIR and reuses them next time. A live run (`--runs live`: the same run, not
finished nor sealed, its last episodes unwritten) is timed beside its own `SELECT * FROM runs`:
the runs page and dashboard at the first look, then after each `--new-episodes` more arrive
(written by a separate writer process while the same server stays up).

    python bench/view.py [--episodes 10000 100000] [--keep .bench] [--pages runs dashboard]

Where the time went (100k episodes, 3.2M events, one sealed run; the shared 2-core machine
at load 8-10, so read the shares, not the seconds):
- Runs page, before: `SELECT * FROM runs` (4.5 s by DuckDB's profiler: the scans of
  episode.finished / judgment.made / episode.started payloads read 299 of 324 row groups,
  since event types interleave) plus accuracy from classification_metrics with every view it
  needs materialized over the whole log (the `$runs` parameter also bound the runs view
  again): 15.4 s first, and 1.96 s warm because every request still ran the runs view.
- Dashboard, before (162 s first): its 20 views materialized over the whole log, 64 s when
  timed one by one (tool_calls 14.3, trace_audit_failures 8.7, model_calls 8.2,
  episode_evidence 7.8, episode_metrics 4.0, steps 3.5, gold_sources 3.3, post_rollout_rewards
  3.3, sft_export_rejections 3.3, episodes 2.5; normalize_url, a Python UDF, is 21 s of
  cProfile's 165 s in them), and the bootstrap intervals, 95 s alone: 2,000 resamples of 25k
  cases compared as Python strings in object arrays. Warm (1.74 s) ran the runs view again.
  Computing the same queries over plain views instead of materialized ones was slower (the
  calibration query alone past 60 s): the views share their inputs. Leaving `steps` (3.1M
  rows with their payloads) a plain view made no difference in two runs.
- What changed: a run's row, accuracy and dashboard numbers are filed under its chain head
  (eviscene/viewer/results_cache.py), read by seq in 0.05 s (arg_max(hash, seq) read every hash:
  0.7 s); a sealed run's are on disk, so `restart` answers from them. A run not yet seen is
  computed with `run_id = $run` reaching the events scans (the dashboard narrows `events` to
  the run before materializing), and the bootstrap counts confusion matrices of integer codes
  (4.6 s). The first dashboard of a 100k-episode run still materializes its views (~60-80 s
  here); the 2 s target holds for every later request, including a new server's.
- Then: a run's row and dashboard numbers are computed when the run is sealed and filed beside
  the log (`<log>.results/`, read before anything is computed), so the first look at a sealed
  run reads them too; a run still writing is computed live, as before.
- A live run (100k episodes, nothing filed; load 13-21): every new event is a new head, so
  each look recomputed the runs view (~4 s) and the dashboard (~68-100 s). Now the viewer
  keeps the run's per-episode rows in memory (eviscene/viewer/live_rows.py) and a later look
  computes only the episodes with new events and folds them in. Where a look's time went,
  first try: reading the touched episodes' events (`SELECT *` with an `episode_id IN` filter
  read every payload of the log: 14 s) -> read by seq ranges around them (0.3 s); the
  dashboard's policy blocks scanned every gate decision of the run (1.6 s) -> the gate rows
  of `steps` are kept too; post_rollout_rewards and the gold views recomputed each look ->
  the gold views are kept and post_rollout_rewards recomputed for the touched groups only;
  the dashboard opened a second snapshot for the run's row -> one snapshot for both.
  After 100 more episodes, load 3-8: runs page 0.99-1.12 s (0.57-0.64x the run's `SELECT *
  FROM runs`, 1.74 s), dashboard 2.23 s twice (1.28x); first looks 3.8 s and 41 s. Load 13-28
  (two runs): runs page 1.5-3.6 s (0.16-0.90x), dashboard 4.2-15.4 s (0.52-1.68x); first
  looks 11.5-28 s and 104-187 s. cProfile of one runs-page and one dashboard look after new episodes (2.1 s + 5.1 s,
  load ~18): the views computed over the kept rows (runs, classification_metrics, ...) and over
  the touched events 2.1 s, the pages' queries 1.1 s, reading the touched events and folding
  1.2 s, the bootstrap 0.9 s (its resampling is kept as it is: its intervals are in exported
  reports), opening three snapshots and finding run heads 0.8 s.
- The first look at a live run (100k episodes): the runs page and dashboard no longer wait for
  it. A page computes a live run's first numbers on a thread of its own and waits for them at
  most 1 s (data.FIRST_LOOK_WAIT_S); then it answers with the run's id and `computing… (Ns so
  far)`, no number, and shows the numbers on a later refresh (the runs table refreshes itself
  every 2 s; the dashboard reloads itself). `first look` times that answer; `its numbers after`
  the time until a page, asked again every 2 s, shows them: that computation is as before.
  Main's code, then this code, one after the other (load 12-23; runs query 4.09 s and 3.09 s):
  runs page first look 15.97 s -> 1.32 s (numbers after 12.25 s), dashboard 144.9 s -> 1.02 s
  (numbers after 92.4 s); after +100 episodes, twice: runs page 2.43, 3.83 s -> 1.45, 1.40 s,
  dashboard 6.16, 10.66 s -> 6.34, 4.86 s (no change to tell at this load; still over 2 s).
  Tried and dropped: computing the dashboard's first rows by chunks of 20k episodes, each
  copied once from its own seq ranges (a scan of one event type's payloads decompresses every
  payload of the segment's row groups: 0.6-0.9 s, against 0.1 s counting events by type). It
  gave the same numbers (the whole dashboard compared as JSON) but not less work: 37.7 s of
  CPU against main's 35.1 s (wall 99 s and 83 s at load 11-13; earlier pairs 97/153 s and
  88/50 s: wall time at these loads says nothing, CPU time does); py-spy put 88 % of it in
  the views' own SQL, not in reading. The bootstrap draws its resamples as 32-bit integers
  (NumPy draws the same integers for int32 and int64 below 2**31: the same intervals,
  byte-identical exports) and offsets them in place: 2.8 s against 5.5 s for 25k cases (load
  15). A later look copies only the columns the views read (no event_id, no chain hashes).
- Memory of the kept rows (the viewer in this process; resident memory from /proc, load 6-8):
  10k episodes 161 MiB before the first look, 353 MiB with both pages' numbers (peak 527);
  100k 161 -> 1,521 MiB (peak 2,424 while computing), 1,565 and 1,572 MiB after two looks of
  +100 episodes. Summing the kept Arrow tables: 1,119 MiB, of it the dashboard's tool_calls
  494 MiB and model_calls 268 MiB (every observation and message, though the dashboard's
  queries read a few columns of them), episode_evidence 77 MiB, the runs page's episodes 37 MiB.
  Now the columns nothing over the kept rows reads are left out (live_rows.UNKEPT_COLUMNS):
  530 MiB kept (model_calls 107, tool_calls 66), 100k resident 916 MiB with the numbers (peak
  1,413), 963 and 969 MiB after the two looks (load 12).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from eviscene.log import EventLog
from eviscene.viewer.data import precompute
from eviscene.viewer.report import build_report
from eviscene.store.layout import live_root
from eviscene.store.layout import results_root
from eviscene.viewer.server import make_server

GENERATOR = Path(__file__).with_name("materialize.py")
RUN_ID = "bench-run"
REPORT_EPISODES_MAX = 10_000  # `eviscene report` is timed up to this size
LIVE_PAGES = ("runs", "dashboard")
PAGES = {
    "runs": "/",
    "dashboard": f"/run/{RUN_ID}",
    "episodes (filter, sort)": f"/run/{RUN_ID}/episodes?filter=total_tool_calls%20%3E%205&sort=confidence&desc=1",
    "episodes (text search)": f"/run/{RUN_ID}/episodes?q=verdict",
    "episode": f"/run/{RUN_ID}/episode/case-000000--r000",
}


def _get(url: str) -> float:
    return _fetch(url)[0]


def _fetch(url: str) -> tuple[float, bytes]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as response:
        body = response.read()
        assert response.status == 200, url
    return time.perf_counter() - started, body


def _until_computed(url: str, refresh_s: float = 2.0) -> float:
    """Seconds until `url` answers with its numbers (no `data-computing` mark), asking again
    every `refresh_s` as the page does."""
    started = time.perf_counter()
    while b'data-computing="1"' in _fetch(url)[1]:
        time.sleep(refresh_s)
    return time.perf_counter() - started


class _Server:
    def __init__(self, log: EventLog):
        self.server = make_server(log, "127.0.0.1", 0)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _resident_mib() -> tuple[float, float]:
    """This process's resident memory now and at its peak, in MiB (Linux /proc)."""
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return int(status["VmRSS"].split()[0]) / 1024, int(status["VmHWM"].split()[0]) / 1024


def _live(episodes: int, folder: Path, workdir: Path, new_episodes: int, looks: int) -> None:
    """Time the runs page and dashboard of a live run of `episodes`: the first look, then a
    look after each `new_episodes` more arrive (written by a separate writer process). The
    viewer runs in this process: its resident memory before the first look and after each
    shows what the rows kept across looks hold."""
    kept = EventLog(folder / f"bench-view-{episodes}-live.duckdb")
    unwritten = new_episodes * looks
    if not live_root(kept.path).exists():
        subprocess.run([sys.executable, str(GENERATOR), "--episodes", str(episodes), "--live", str(unwritten),
                        "--generate-into", str(kept.path)], check=True)
    log = EventLog(workdir / kept.path.name)  # a copy: the kept one stays as generated (a live run is all in its folder)
    shutil.copytree(live_root(kept.path), live_root(log.path))
    started = time.perf_counter()
    log.sql("SELECT * FROM runs")
    baseline = time.perf_counter() - started
    print(f"{episodes:>9} {'live: SELECT * FROM runs':<28} {baseline:>8.2f} {'':>10} {'':>7} {1.0:>18.2f}")
    server = _Server(log)
    before, _ = _resident_mib()
    print(f"{episodes:>9} {'live: resident MiB before':<28} {before:>8.0f}")
    try:
        for name in LIVE_PAGES:
            took = _get(server.base + PAGES[name])
            print(f"{episodes:>9} {'live ' + name + ', first look':<28} {took:>8.2f} {'':>10} {'':>7} {took / baseline:>18.2f}")
            took += _until_computed(server.base + PAGES[name])
            print(f"{episodes:>9} {'  its numbers after':<28} {took:>8.2f} {'':>10} {'':>7} {took / baseline:>18.2f}")
        _print_resident(episodes, "live: resident MiB, numbers")
        written = log.sql("SELECT count(*) AS n FROM events WHERE type = 'episode.scheduled'").to_pylist()[0]["n"]
        for _ in range(min(looks, (episodes - written) // new_episodes)):  # a kept log has what it was made with
            subprocess.run([sys.executable, str(GENERATOR), "--generate-into", str(log.path),
                            "--append", str(written), str(written + new_episodes)], check=True)
            written += new_episodes
            for name in LIVE_PAGES:
                took = _get(server.base + PAGES[name])
                label = f"live {name}, +{new_episodes} ep."
                print(f"{episodes:>9} {label:<28} {took:>8.2f} {'':>10} {'':>7} {took / baseline:>18.2f}")
            _print_resident(episodes, f"live: resident MiB, +{new_episodes}")
    finally:
        server.stop()


def _print_resident(episodes: int, label: str) -> None:
    now, peak = _resident_mib()
    print(f"{episodes:>9} {label:<28} {now:>8.0f}   (peak {peak:.0f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--keep", type=Path, help="keep the generated logs in this folder and reuse them")
    parser.add_argument("--pages", nargs="+", choices=PAGES, default=list(PAGES), help="time only these pages")
    parser.add_argument("--runs", nargs="+", choices=("sealed", "live"), default=["sealed", "live"], help="time these runs only")
    parser.add_argument("--new-episodes", type=int, default=100, help="episodes that arrive between two looks at the live run")
    parser.add_argument("--looks", type=int, default=2, help="looks at the live run after new episodes arrive")
    args = parser.parse_args()
    print(f"{'episodes':>9} {'page':<28} {'first s':>8} {'restart s':>10} {'warm s':>7} {'warm / runs query':>18}")
    for episodes in args.episodes:
        workdir = Path(tempfile.mkdtemp(prefix="eviscene-bench-view-"))
        os.environ["EVISCENE_RUNTIME_DIR"] = str(workdir / "runtime")  # the viewer's results cache, empty
        try:
            folder = args.keep or workdir
            folder.mkdir(parents=True, exist_ok=True)
            if "live" in args.runs:
                _live(episodes, folder, workdir, args.new_episodes, args.looks)
            if "sealed" not in args.runs:
                continue
            log = EventLog(folder / f"bench-view-{episodes}.duckdb")
            if not log.path.exists():
                subprocess.run([sys.executable, str(GENERATOR), "--episodes", str(episodes), "--generate-into", str(log.path)], check=True)
            started = time.perf_counter()
            log.sql("SELECT * FROM runs")
            baseline = time.perf_counter() - started
            pages = {name: path for name, path in PAGES.items() if name in args.pages}
            print(f"{episodes:>9} {'SELECT * FROM runs':<28} {baseline:>8.2f} {'':>10} {'':>7} {1.0:>18.2f}")
            shutil.rmtree(results_root(log.path), ignore_errors=True)  # filed again, timed: what the seal pays
            started = time.perf_counter()
            precompute(log, [RUN_ID])
            filing = time.perf_counter() - started
            print(f"{episodes:>9} {'filed at seal':<28} {filing:>8.2f} {'':>10} {'':>7} {filing / baseline:>18.2f}")
            first, warm = _Server(log), {}
            times = {name: _get(first.base + path) for name, path in pages.items()}
            for name, path in pages.items():
                warm[name] = statistics.median(_get(first.base + path) for _ in range(3))
            first.stop()
            again = _Server(log)
            for name, path in pages.items():
                restart = _get(again.base + path)
                print(f"{episodes:>9} {name:<28} {times[name]:>8.2f} {restart:>10.2f} {warm[name]:>7.2f} {warm[name] / baseline:>18.2f}")
            again.stop()
            if episodes <= REPORT_EPISODES_MAX:
                started = time.perf_counter()
                summary = build_report(log, RUN_ID, workdir / "report.html")
                took = time.perf_counter() - started
                print(f"{episodes:>9} {'report file':<28} {took:>8.2f} {'':>10} {'':>7} {took / baseline:>18.2f}"
                      f"   ({summary['bytes'] / 1e6:.1f} MB)")
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
