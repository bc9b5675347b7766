"""`eviscene sql` on a large result: seconds and peak memory of the whole process writing N
rows (an integer, a text, a float and a JSON column) as CSV and JSONL on stdout and as a
Parquet file, against baselines run in the same way in the same run:

- `duckdb COPY`: a Python process that imports duckdb and lets DuckDB write the same query's
  CSV itself (`COPY … TO`): the floor of any CSV writer;
- `python csv`: a Python process that fetches the rows in batches and writes them with the
  standard library's csv module, the plain-Python way.

Each process's peak RSS is its own (`os.wait4`). This script imports nothing heavy itself:
Linux carries a parent's peak RSS into a forked child's, even across exec.

    python bench/sql_output.py [--rows 5000000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EVISCENE = str(Path(sys.executable).with_name("eviscene"))


MAKE_LOG = """
import sys
from eviscene.events import GateDecided
from eviscene.log import EventLog
from eviscene.store import EventDraft
EventLog(sys.argv[1]).append("r1", [EventDraft(GateDecided(gate="g", subject="s", passed=True))])
"""


def query(rows: int) -> str:
    return (
        "SELECT range AS i, 'case-' || range AS case_id, range * 0.5 AS score, "
        f"json_object('step', range % 7, 'tool', 'visit') AS payload FROM range({rows})"
    )


def measured(command: list[str], stdout: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one process."""
    started = time.perf_counter()
    with open(stdout, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{command[:3]} failed: {process.stderr.read().decode()}")
    return seconds, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=5_000_000)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="eviscene-bench-sql-"))
    try:
        log_path = folder / "bench.duckdb"
        subprocess.run([sys.executable, "-c", MAKE_LOG, str(log_path)], check=True)
        sql = query(args.rows)
        copy = f"import duckdb; duckdb.sql({sql!r}).write_csv({str(folder / 'copy.csv')!r})"
        plain = (
            "import csv, sys, duckdb\n"
            f"con = duckdb.connect(); con.execute({sql!r}); out = csv.writer(sys.stdout, lineterminator='\\n')\n"
            "out.writerow([d[0] for d in con.description])\n"
            "while batch := con.fetchmany(65536): out.writerows(batch)\n"
        )
        commands = {
            "duckdb COPY": [sys.executable, "-c", copy],
            "python csv": [sys.executable, "-c", plain],
            "eviscene sql csv": [EVISCENE, "--db", str(log_path), "sql", sql, "--format", "csv"],
            "eviscene sql jsonl": [EVISCENE, "--db", str(log_path), "sql", sql, "--format", "jsonl"],
            "eviscene sql parquet": [EVISCENE, "--db", str(log_path), "sql", sql, "--output", str(folder / "out.parquet")],
        }
        figures = {name: measured(command, folder / "stdout") for name, command in commands.items()}
        floor_s, floor_mib = figures["duckdb COPY"]
        print(f"{args.rows:,} rows; ratios to `duckdb COPY` (load average {os.getloadavg()[0]:.1f})")
        for name, (seconds, mib) in figures.items():
            print(f"{name:<22} {seconds:7.1f} s {seconds / floor_s:6.2f}x   peak {mib:6.0f} MiB {mib / floor_mib:5.2f}x")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
