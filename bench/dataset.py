"""Dataset export benchmark: `eviscene dataset export` over N synthetic candidate episodes,
beside seed 002's algorithm written as plain Python (the BASELINE) over the same data.

A seed-style run directory of N episodes (N/2 cases x 2 rollouts, content families shared
so that cases chain into groups, plus domain families that must not) is written once. Then,
each in its own process so peak memory is its own:
  ours/import   eviscene import of the run directory into a fresh log
  ours/export   the whole export from the log (views, selection, groups, splits, files)
  baseline      seed 002's loop: read traces and scores, best rollout per case,
                union-find over content families, sha256 split, write the split files
Prints seconds, peak RSS and the ratios.

    python bench/dataset.py --episodes 100000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

FATAL = {"incorrect_result", "engineering_error", "legacy_core_ownership"}


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_run_dir(root: Path, episodes: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    cases = max(1, episodes // 2)
    family_pool = max(1, cases // 2)
    (root / "traces").mkdir(parents=True)
    (root / "run_manifest.json").write_text(json.dumps({
        "run_id": "bench-run", "git_commit": "bench", "benchmark": {"release_id": "bench", "release_stage": "frozen_eval"},
        "agent": {"decision_policy_version": "unified-react-v1"},
    }))
    scores, sft = [], []
    for i in range(episodes):
        case = f"case-{i // 2:06d}"
        episode = f"{case}--r{i % 2:03d}"
        families = [f"content:{rng.randrange(family_pool):08x}" for _ in range(2)] + [f"domain:site{rng.randrange(50)}.org"]
        trace = {"image_id": episode, "case_id": case, "decision_policy_version": "unified-react-v1", "state": {
            "runtime_case": {"case_id": case, "image_sha256": hashlib.sha256(case.encode()).hexdigest()},
            "investigation_state": {"evidence": [{"evidence_id": f"ev-{k}", "source_family": f} for k, f in enumerate(families)]},
        }}
        (root / "traces" / f"{episode}.json").write_text(json.dumps(trace))
        eligible = rng.random() < 0.8
        scores.append({"episode_id": episode, "case_id": case, "total": round(rng.random() * 2, 3), "training_eligible": eligible,
                       "training_exclusion_reasons": [] if eligible else ["incorrect_result"]})
        sft.append({"episode_id": episode, "case_id": case, "images": [f"/images/{case}.jpg"], "tools": [], "messages": [
            {"role": "system", "content": [{"type": "text", "text": "Verify the image."}]},
            {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": f"Claim {i}: " + "words " * rng.randrange(5, 60)}]},
            {"role": "assistant", "content": [], "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "text_search", "arguments": {"query": case}}}]},
            {"role": "tool", "tool_call_id": "c1", "name": "text_search", "content": [{"type": "text", "text": "ev-0: page"}]},
            {"role": "assistant", "content": [{"type": "text", "text": '{"verdict": "authentic"}'}]},
        ]})
    for name, rows in (("trajectory_scores", scores), ("trajectory_sft", sft)):
        (root / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


# --- BASELINE: seed 002's algorithm as plain Python (not project code) ---------------------

def baseline(run_dir: Path, out: Path, seed: str = "ifv-policy-v1", train_ratio: float = 0.8, validation_ratio: float = 0.1) -> int:
    scores = {}
    for line in (run_dir / "trajectory_scores.jsonl").read_text().split("\n"):
        if line.strip():
            row = json.loads(line)
            scores[str(row.get("episode_id") or row.get("case_id", "")).strip()] = row
    trajectories = {}
    for line in (run_dir / "trajectory_sft.jsonl").read_text().split("\n"):
        if line.strip():
            row = json.loads(line)
            trajectories[row["episode_id"]] = row
    meta = {}
    for path in sorted((run_dir / "traces").glob("*.json")):
        trace = json.loads(path.read_text())
        episode = str(trace.get("image_id") or path.stem).strip()
        score = scores.get(episode, {})
        reasons = [str(r) for r in score.get("training_exclusion_reasons", []) or [] if str(r).strip()]
        evidence = trace["state"]["investigation_state"]["evidence"]
        meta[episode] = {
            "case_id": trace["state"]["runtime_case"]["case_id"],
            "families": sorted({e["source_family"] for e in evidence if e["source_family"].startswith("content:")}),
            "eligible": bool(score.get("training_eligible", False)),
            "red_flags": [r for r in reasons if r not in FATAL],
            "score": float(score.get("total", 0.0) or 0.0),
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        }
    by_case = defaultdict(list)
    for episode, m in sorted(meta.items()):
        if m["eligible"]:
            by_case[m["case_id"]].append(episode)
    selected = sorted(max(c, key=lambda e: (-len(meta[e]["red_flags"]), meta[e]["score"], e)) for c in by_case.values())
    episodes = [e for e in selected if e in trajectories]
    parent = {e: e for e in episodes}

    def find(x: str) -> str:
        if parent[x] != x:
            parent[x] = find(parent[x])
        return parent[x]

    members_of = defaultdict(list)
    for e in episodes:
        for f in meta[e]["families"]:
            members_of[f].append(e)
    for members in members_of.values():
        for m in members[1:]:
            a, b = find(members[0]), find(m)
            if a != b:
                parent[max(a, b)] = min(a, b)
    components = defaultdict(list)
    for e in episodes:
        components[find(e)].append(e)
    rows = {"train": [], "validation": [], "test": []}
    for members in components.values():
        payload = {"episodes": sorted(members), "families": sorted({f for e in members for f in meta[e]["families"]})}
        group = hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:20]
        value = int.from_bytes(hashlib.sha256(f"{seed}:{group}".encode()).digest()[:8], "big") / 2**64
        split = "train" if value < train_ratio else "validation" if value < train_ratio + validation_ratio else "test"
        for e in members:
            rows[split].append({**trajectories[e], "split": split, "split_group_id": group})
    out.mkdir(parents=True, exist_ok=True)
    for split, found in rows.items():
        found.sort(key=lambda r: r["episode_id"])
        (out / f"{split}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in found))
    return len(episodes)


# --- phases, each in a child process ---------------------------------------------------------

def phase(name: str, work: Path) -> dict:
    started = time.perf_counter()
    if name == "import":
        from eviscene.imports import import_path
        from eviscene.store import EventLog
        result = import_path(EventLog(work / "log.duckdb"), work / "run")
        count = result.files
    elif name == "export":
        from eviscene.exports.dataset import ExportOptions, export_dataset
        from eviscene.store import EventLog
        manifest, _ = export_dataset(EventLog(work / "log.duckdb"), ExportOptions(out_dir=work / "ours", runs=["bench-run"]))
        count = manifest["accepted_episode_count"]
    else:
        count = baseline(work / "run", work / "baseline")
    return {"phase": name, "seconds": time.perf_counter() - started, "peak_mib": _peak_rss_mib(), "count": count}


def _child(name: str, work: Path) -> dict:
    done = subprocess.run([sys.executable, __file__, "--phase", name, "--work", str(work)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--phase", choices=["import", "export", "baseline"])
    parser.add_argument("--work", type=Path)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(phase(args.phase, args.work)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        clock = time.perf_counter()
        make_run_dir(work / "run", args.episodes)
        print(f"{args.episodes} synthetic episodes written in {time.perf_counter() - clock:.1f} s")
        results = {name: _child(name, work) for name in ("import", "export", "baseline")}
        for r in results.values():
            label = "BASELINE (seed 002 in plain Python)" if r["phase"] == "baseline" else f"ours/{r['phase']}"
            print(f"{label:<38} {r['seconds']:8.2f} s   peak {r['peak_mib']:8.0f} MiB   ({r['count']} rows)")
        assert results["export"]["count"] == results["baseline"]["count"], "ours and the baseline accept different episodes"
        for split in ("train", "validation", "test"):
            ours = [json.loads(l)["episode_id"] for l in (work / "ours" / f"{split}.jsonl").read_text().splitlines()]
            base = [json.loads(l)["episode_id"] for l in (work / "baseline" / f"{split}.jsonl").read_text().splitlines()]
            assert ours == base, f"{split} differs from the baseline"
        export, base = results["export"], results["baseline"]
        total = export["seconds"] + results["import"]["seconds"]
        print(f"export / baseline: {export['seconds'] / base['seconds']:.2f}x time, {export['peak_mib'] / base['peak_mib']:.2f}x peak memory")
        print(f"import + export / baseline: {total / base['seconds']:.2f}x time (same splits: yes)")


if __name__ == "__main__":
    main()
