"""Offline agent quality: per-label accuracy, the confusion matrix and calibration (ECE)
on the bundled release and on a release freshly made by the independent generator
(`scripts/make_independent_release.py`), which nothing in the agent was tuned on.

The baseline is the bundled release, run in the same process: the independent release's
accuracy is also printed as a ratio to it.

    python bench/agent_quality.py [--cases 30] [--seed 1] [--rollouts 2] [--concurrency 4]
    python bench/agent_quality.py --tuning-seed 101 --show-wrong   # tuning data, see below

Tuning and reporting stay apart: `--tuning-seed N` runs a tuning variant of the bundled
release's own generator (`make_example_release.py --seed N`) instead of an independent
release, and only there does `--show-wrong` print the wrong episodes' rationales. The
independent release's episodes are never printed one by one.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio

from eviscene.eval.options import EvalOptions
from eviscene.eval.run import start_run
from eviscene.log import EventLog

REPO = Path(__file__).resolve().parents[1]
BUNDLED = REPO / "examples" / "eviscene-demo-v1" / "runtime_input" / "cases.jsonl"
GENERATOR = REPO / "scripts" / "make_independent_release.py"
TUNING_GENERATOR = REPO / "scripts" / "make_example_release.py"
LABELS = ("authentic", "out_of_context", "manipulated", "unverifiable")
ECE_BINS = 10


def expected_calibration_error(rows: list[dict]) -> float:
    """Σ over confidence bins of (share of episodes) x |accuracy - mean confidence|."""
    total = len(rows)
    error = 0.0
    for b in range(ECE_BINS):
        low, high = b / ECE_BINS, (b + 1) / ECE_BINS
        members = [r for r in rows if (low < r["confidence"] <= high) or (b == 0 and r["confidence"] == 0.0)]
        if members:
            accuracy = sum(r["correct"] for r in members) / len(members)
            confidence = sum(r["confidence"] for r in members) / len(members)
            error += len(members) / total * abs(accuracy - confidence)
    return error


def evaluate(benchmark: Path, rollouts: int, concurrency: int, workdir: Path) -> list[dict]:
    log = EventLog(workdir / f"{benchmark.parent.parent.name}.duckdb")
    options = EvalOptions(benchmark=str(benchmark), rollouts_per_case=rollouts, concurrency=concurrency)
    anyio.run(start_run, log, options)
    rows = log.sql(
        "SELECT e.case_id, e.verdict, coalesce(e.confidence, 0.0) AS confidence, g.label, "
        "(SELECT any_value(j.payload->>'rationale') FROM events j WHERE j.type = 'judgment.made' "
        " AND j.run_id = e.run_id AND j.episode_id = e.episode_id) AS rationale "
        "FROM episodes e JOIN gold_labels g USING (run_id, case_id) ORDER BY e.case_id, e.verdict"
    ).to_pylist()
    for row in rows:
        row["correct"] = row["verdict"] == row["label"]
    return rows


def report(name: str, rows: list[dict]) -> float:
    accuracy = sum(r["correct"] for r in rows) / len(rows)
    print(f"\n== {name}: {len(rows)} episodes, accuracy {accuracy:.3f}, ECE {expected_calibration_error(rows):.3f}")
    print(f"{'gold / verdict':<16}" + "".join(f"{label[:14]:>16}" for label in LABELS) + f"{'other':>8}{'accuracy':>10}")
    for gold in LABELS:
        mine = [r for r in rows if r["label"] == gold]
        counts = [sum(r["verdict"] == label for r in mine) for label in LABELS]
        other = len(mine) - sum(counts)
        share = f"{sum(r['correct'] for r in mine) / len(mine):.3f}" if mine else "-"
        print(f"{gold:<16}" + "".join(f"{c:>16}" for c in counts) + f"{other:>8}{share:>10}")
    return accuracy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=30, help="cases in the independent release")
    parser.add_argument("--seed", type=int, default=1, help="the independent generator's seed")
    parser.add_argument("--rollouts", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--skip-bundled", action="store_true", help="only the independent release (no baseline ratio)")
    parser.add_argument("--tuning-seed", type=int, help="a tuning variant of the bundled generator instead of an independent release")
    parser.add_argument("--show-wrong", action="store_true", help="print wrong episodes' rationales (tuning variants only)")
    args = parser.parse_args()
    if args.show_wrong and args.tuning_seed is None:
        parser.error("--show-wrong needs --tuning-seed: the independent release only reports")

    workdir = Path(tempfile.mkdtemp(prefix="eviscene-bench-quality-"))
    try:
        if args.tuning_seed is None:
            release, name = workdir / "independent", f"independent (seed {args.seed}, {args.cases} cases)"
            command = [str(GENERATOR), "--out", str(release), "--cases", str(args.cases), "--seed", str(args.seed)]
        else:
            release, name = workdir / "tuning", f"tuning variant of the bundled generator (seed {args.tuning_seed})"
            command = [str(TUNING_GENERATOR), "--out", str(release), "--seed", str(args.tuning_seed)]
        subprocess.run([sys.executable, *command], check=True, stdout=subprocess.DEVNULL)
        bundled = None if args.skip_bundled else report("bundled eviscene-demo-v1", evaluate(BUNDLED, args.rollouts, args.concurrency, workdir))
        rows = evaluate(release / "runtime_input" / "cases.jsonl", args.rollouts, args.concurrency, workdir)
        independent = report(name, rows)
        if args.show_wrong:
            for row in rows:
                if not row["correct"]:
                    print(f"\n{row['case_id']} gold {row['label']}, said {row['verdict']} ({row['confidence']}): {row['rationale']}")
        if bundled:
            print(f"\nratio independent/bundled accuracy  {independent / bundled:.3f}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
