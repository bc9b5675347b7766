"""Helpers of the viewer tests: the real CLI in real processes, the real server, and what a
drawn chart looks like in the browser."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from eviscene.log import EventLog

ROOT = Path(__file__).resolve().parents[2]
RELEASE = ROOT / "examples" / "eviscene-demo-v1"
EVISCENE = str(Path(sys.executable).with_name("eviscene"))
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run"]
HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">'


def eviscene(db: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([EVISCENE, "--db", str(db), *args], capture_output=True, text=True, timeout=900)
    if check and done.returncode != 0:
        raise AssertionError(f"eviscene {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return done


def start_eval(db: Path, benchmark: Path, out: Path, *flags: str) -> subprocess.Popen:
    return subprocess.Popen(
        [EVISCENE, "--db", str(db), "eval", "run", "--benchmark", str(benchmark), "--output-dir", str(out), *flags],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def run_ids(db: Path) -> list[str]:
    return [r["run_id"] for r in EventLog(db).sql("SELECT run_id FROM runs ORDER BY started_at").to_pylist()]


class Server:
    def __init__(self, db: Path):
        # The viewer's results cache goes beside the test's log, not into the user's runtime folder.
        env = {**os.environ, "EVISCENE_RUNTIME_DIR": str(db.parent / "runtime")}
        self.process = subprocess.Popen([EVISCENE, "--db", str(db), "view", "--port", "0"], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, env=env)
        line = self.process.stdout.readline()
        match = re.search(r"http://[\d.]+:\d+/", line)
        assert match, f"no URL in {line!r}: {self.process.stderr.read() if self.process.poll() is not None else ''}"
        self.url = match.group(0).rstrip("/")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=20)


def charts_drawn(page) -> int:
    """How many charts rendered an SVG with marks in it (waits for vega-embed)."""
    visible = "[...document.querySelectorAll('.chart[data-spec]')].filter(c => c.offsetParent !== null)"
    page.wait_for_function(f"() => {visible}.every(c => c.querySelector('svg .mark-group, svg path, svg rect'))")
    return page.evaluate(
        f"() => {visible}.map(c => c.querySelector('svg')).filter(s => s && s.getBoundingClientRect().width > 50 && "
        "s.querySelectorAll('path, rect, line, text').length > 3).length"
    )
