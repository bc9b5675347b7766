"""Viewer benchmark: how long `eviscene view` takes to answer the runs page, a run's
dashboard, the episodes page (filtered and searched) and an episode page over a synthetic
log (bench/materialize.py's generator, ~40 events an episode), beside the plain query
`SELECT * FROM runs` (what `eviscene runs` asks) measured in the same run. Pages are fetched
over real HTTP from a real server; each is timed cold (first request) and warm (median of 3).
Up to 10k episodes, `eviscene report` of the run is timed too.

    python bench/view.py [--episodes 10000 100000]
"""

from __future__ import annotations

import argparse
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
from eviscene.viewer.report import build_report
from eviscene.viewer.server import make_server

GENERATOR = Path(__file__).with_name("materialize.py")
RUN_ID = "bench-run"
REPORT_EPISODES_MAX = 10_000  # `eviscene report` is timed up to this size


def _get(url: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as response:
        response.read()
        assert response.status == 200, url
    return time.perf_counter() - started


def _timed(url: str) -> tuple[float, float]:
    cold = _get(url)
    return cold, statistics.median(_get(url) for _ in range(3))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args()
    print(f"{'episodes':>9} {'page':<28} {'cold s':>7} {'warm s':>7} {'ratio to runs query':>20}")
    for episodes in args.episodes:
        workdir = Path(tempfile.mkdtemp(prefix="eviscene-bench-view-"))
        try:
            log = EventLog(workdir / "bench.duckdb")
            subprocess.run([sys.executable, str(GENERATOR), "--episodes", str(episodes), "--generate-into", str(log.path)], check=True)
            started = time.perf_counter()
            log.sql("SELECT * FROM runs")
            baseline = time.perf_counter() - started
            server = make_server(log, "127.0.0.1", 0)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            base = f"http://127.0.0.1:{server.server_address[1]}"
            pages = {
                "runs": "/",
                "dashboard": f"/run/{RUN_ID}",
                "episodes (filter, sort)": f"/run/{RUN_ID}/episodes?filter=total_tool_calls%20%3E%205&sort=confidence&desc=1",
                "episodes (text search)": f"/run/{RUN_ID}/episodes?q=verdict",
                "episode": f"/run/{RUN_ID}/episode/case-000000--r000",
            }
            print(f"{episodes:>9} {'SELECT * FROM runs':<28} {baseline:>7.2f} {'':>7} {1.0:>20.2f}")
            for name, path in pages.items():
                cold, warm = _timed(base + path)
                print(f"{episodes:>9} {name:<28} {cold:>7.2f} {warm:>7.2f} {warm / baseline:>20.2f}")
            server.shutdown()
            server.server_close()
            if episodes <= REPORT_EPISODES_MAX:
                started = time.perf_counter()
                summary = build_report(log, RUN_ID, workdir / "report.html")
                took = time.perf_counter() - started
                print(f"{episodes:>9} {'report file':<28} {took:>7.2f} {'':>7} {took / baseline:>20.2f}"
                      f"   ({summary['bytes'] / 1e6:.1f} MB)")
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
