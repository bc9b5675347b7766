"""Hand-built seed-style run directories, accepted releases, case splits and gate artifacts
for the dataset tests, and seed 002's split arithmetic written out with hashlib."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

TOOLS = [{"type": "function", "function": {"name": "text_search", "description": "Search.", "parameters": {
    "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]


def seed_group_id(members: list[str], families: list[str]) -> str:
    """seed 002: sha256 of the compact, sorted-key JSON of the group (ensure_ascii=True)."""
    payload = {"episodes": sorted(members), "families": sorted(set(families))}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()[:20]


def seed_split(group_id: str, *, seed: str = "ifv-policy-v1", train_ratio: float = 0.8, validation_ratio: float = 0.1) -> str:
    """seed 002 `_assign_split`."""
    value = int.from_bytes(hashlib.sha256(f"{seed}:{group_id}".encode("utf-8")).digest()[:8], "big") / 2**64
    if value < train_ratio:
        return "train"
    if value < train_ratio + validation_ratio:
        return "validation"
    return "test"


def sft_row(episode_id: str, case_id: str, *, padding: int = 0, token_count_estimate: int | None = None) -> dict[str, Any]:
    row = {
        "episode_id": episode_id,
        "case_id": case_id,
        "messages": [
            {"role": "system", "content": [{"type": "text", "text": "Verify the image."}]},
            {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Is this real?" + "x" * padding}]},
            {"role": "assistant", "content": [], "reasoning_content": "Search first.", "tool_calls": [
                {"id": "call-1", "type": "function", "function": {"name": "text_search", "arguments": {"query": case_id}}}]},
            {"role": "tool", "tool_call_id": "call-1", "name": "text_search", "content": [{"type": "text", "text": "ev-1: a page"}]},
            {"role": "assistant", "content": [{"type": "text", "text": '{"verdict": "authentic"}'}]},
        ],
        "tools": TOOLS,
        "images": [f"/images/{case_id}.jpg"],
    }
    if token_count_estimate is not None:
        row["token_count_estimate"] = token_count_estimate
    return row


def trace(episode_id: str, case_id: str, families: list[str], image_sha256: str) -> dict[str, Any]:
    return {
        "image_id": episode_id,
        "case_id": case_id,
        "decision_policy_version": "unified-react-v1",
        "state": {
            "runtime_case": {"case_id": case_id, "image_sha256": image_sha256},
            "rollout": {"prompt_group_id": f"pg-{case_id}"},
            "investigation_state": {"evidence": [
                {"evidence_id": f"ev-{i}", "source_family": family} for i, family in enumerate(families, start=1)
            ]},
        },
    }


def image_sha(case_id: str) -> str:
    return hashlib.sha256(case_id.encode()).hexdigest()


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_run_dir(root: Path, run_id: str, episodes: list[dict[str, Any]], *, release_stage: str = "frozen_eval") -> Path:
    """episodes: {episode_id, case_id, families, score (dict or None), trajectory (bool),
    padding, token_count_estimate, perception (bool)}."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "run_manifest.json").write_text(json.dumps({
        "schema_version": "ifv-eval-run-v2", "run_id": run_id, "git_commit": "abc123",
        "benchmark": {"release_id": "hand-built", "release_stage": release_stage, "runtime_contract_version": "v0.3"},
        "agent": {"decision_policy_version": "unified-react-v1"},
    }), encoding="utf-8")
    scores, sft, perception = [], [], []
    for e in episodes:
        eid, cid = e["episode_id"], e["case_id"]
        path = root / "traces" / f"{eid}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(trace(eid, cid, e.get("families", []), image_sha(cid)), indent=1), encoding="utf-8")
        if e.get("score", {}) is not None:
            scores.append({"episode_id": eid, "case_id": cid, "total": 1.0, "training_eligible": True,
                           "training_exclusion_reasons": [], **e.get("score", {})})
        if e.get("trajectory", True):
            sft.append(sft_row(eid, cid, padding=e.get("padding", 0), token_count_estimate=e.get("token_count_estimate")))
        if e.get("perception", True):
            perception.append({"episode_id": eid, "case_id": cid, "images": [f"/images/{cid}.jpg"],
                               "perception": {"ocr_text": f"caption of {cid}"}})
    write_jsonl(root / "trajectory_scores.jsonl", scores)
    write_jsonl(root / "trajectory_sft.jsonl", sft)
    write_jsonl(root / "perception_trajectories.jsonl", perception)
    return root


def write_case_split(path: Path, splits: dict[str, tuple[str, str]]) -> Path:
    """splits: case_id -> (split, split_group_id)."""
    return write_jsonl(path, [
        {"case_id": c, "split": s, "split_group_id": g, "image_sha256": image_sha(c)} for c, (s, g) in sorted(splits.items())
    ])


def file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_eligibility(folder: Path, run_dir: Path, episodes: list[tuple[str, str]], *, passing: bool = True) -> Path:
    for episode_id, case_id in episodes:
        artifact = {
            "artifact_id": f"elig-{episode_id}", "case_id": case_id, "episode_id": episode_id,
            "gates": {"engineering_valid": True, "sft_eligibility_pass": passing},
            "source_trace": {"sha256": file_sha(run_dir / "traces" / f"{episode_id}.json")},
        }
        (folder / f"{episode_id}.sft_eligibility.json").parent.mkdir(parents=True, exist_ok=True)
        (folder / f"{episode_id}.sft_eligibility.json").write_text(json.dumps(artifact), encoding="utf-8")
    return folder


def write_accepted_release(root: Path, episodes: list[dict[str, Any]], *, action_only: tuple[str, ...] = (),
                           schema: str = "ifv-accepted-teacher-release-v3") -> Path:
    """An accepted release: a run directory plus selected_episodes.jsonl (one selected
    episode per case), eligibility/ and the release manifest."""
    write_run_dir(root, "teacher-run", episodes)
    selected = []
    for e in episodes:
        row = {
            "episode_id": e["episode_id"], "case_id": e["case_id"], "deterministic_hard_gate_pass": True,
            "source_trace_sha256": file_sha(root / "traces" / f"{e['episode_id']}.json"),
            "teacher_score": e.get("teacher_score", 1.0), "deterministic_fatal_reasons": [],
            "deterministic_red_flags": e.get("red_flags", []), "decision_policy_version": "unified-react-v1",
        }
        if e["episode_id"] in action_only:
            row["training_buckets"] = ["action_policy"]
        selected.append(row)
    write_jsonl(root / "selected_episodes.jsonl", selected)
    write_eligibility(root / "eligibility", root, [(e["episode_id"], e["case_id"]) for e in episodes])
    write_jsonl(root / "action_only.jsonl", [{"episode_id": e, "reason": "no readable thought"} for e in action_only])
    (root / "accepted_release_manifest.json").write_text(json.dumps({
        "schema_version": schema, "accepted_case_count": len({e["case_id"] for e in episodes}),
        "runtime_store_archive": None,
    }), encoding="utf-8")
    return root


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def seed_reference(
    episodes: list[dict[str, Any]], *, seed: str = "ifv-policy-v1", train_ratio: float = 0.8, validation_ratio: float = 0.1,
    one_rollout_per_case: bool = False, join_cases: bool = False,
) -> dict[str, tuple[str, str]]:
    """seed 002's derived mode over write_run_dir episodes, as plain Python: every eligible
    rollout with a trajectory (or, with `one_rollout_per_case`, the best eligible rollout
    of each case when it has a trajectory), union-find over content families (and, with
    `join_cases`, EviScene's deviation: over cases too), sha256 split. Returns
    episode_id -> (split, split_group_id) of the accepted episodes."""
    def key(e):
        flags = [r for r in e.get("score", {}).get("training_exclusion_reasons", []) if r not in
                 ("incorrect_result", "engineering_error", "legacy_core_ownership")]
        return (-len(flags), float(e.get("score", {}).get("total", 1.0)), e["episode_id"])

    eligible = [e for e in episodes if e.get("score", {}).get("training_eligible", True)]
    if one_rollout_per_case:
        by_case: dict[str, list[dict[str, Any]]] = {}
        for e in eligible:
            by_case.setdefault(e["case_id"], []).append(e)
        eligible = [max(c, key=key) for c in by_case.values()]
    accepted = [e for e in eligible if e.get("trajectory", True)]
    parent = {e["episode_id"]: e["episode_id"] for e in accepted}

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    joined_by: dict[str, list[str]] = {}
    for e in accepted:
        for f in sorted({f for f in e.get("families", []) if f.startswith("content:")}):
            joined_by.setdefault(f, []).append(e["episode_id"])
        if join_cases:
            joined_by.setdefault("case\0" + e["case_id"], []).append(e["episode_id"])
    for members in joined_by.values():
        for m in members[1:]:
            a, b = find(members[0]), find(m)
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict[str, list[dict[str, Any]]] = {}
    for e in accepted:
        groups.setdefault(find(e["episode_id"]), []).append(e)
    result = {}
    for members in groups.values():
        fams = [f for e in members for f in e.get("families", []) if f.startswith("content:")]
        group = seed_group_id([e["episode_id"] for e in members], fams)
        for e in members:
            result[e["episode_id"]] = (seed_split(group, seed=seed, train_ratio=train_ratio, validation_ratio=validation_ratio), group)
    return result
