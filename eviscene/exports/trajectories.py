"""Episodes rebuilt from their events: seed-style traces, SFT trajectories in the
conversational tool-calling format TRL and `datasets` load, and perception examples."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import orjson

from eviscene.exports.serialize import batch_rows, rows
from eviscene.rules.timestamps import UTC_TS_FORMAT

TRACE_SCHEMA = "eviscene-trace-v1"
SFT_SCHEMA = "eviscene-trajectory-sft-v1"
PERCEPTION_SCHEMA = "eviscene-perception-example-v1"
# The views this module's functions read (a caller creates them, or computes them once).
VIEWS_READ = "run_manifests episodes steps episode_evidence model_calls sft_export_rejections"
_EPISODE_ORDER = "e.case_id, e.rollout_index, e.episode_id"
_TRACE_SLICE = 5_000


def _source_metadata(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any]:
    row = con.execute(
        "SELECT git_commit, release_id, runtime_contract_version FROM run_manifests WHERE run_id = ?", [run_id]
    ).fetchall()[0]
    return {"source_run_id": run_id, "runtime_commit": row[0], "release_id": row[1], "runtime_contract_version": row[2]}


def _release_root(con: duckdb.DuckDBPyConnection, run_id: str) -> Path:
    benchmark = con.execute("SELECT manifest->'benchmark'->>'path' FROM run_manifests WHERE run_id = ?", [run_id]).fetchall()[0][0]
    return Path(benchmark).parent.parent


def trace_records(con: duckdb.DuckDBPyConnection, run_id: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(episode_id, trace) for every finished episode, from its final attempt's steps."""
    episodes = {
        row["episode_id"]: row
        for row in rows(
            con.sql(
                "SELECT e.episode_id, e.case_id, e.prompt_group_id, e.rollout_index, e.sampling_seed, e.image_path, "
                "e.image_sha256, e.final_attempt, e.termination, e.error, e.verdict, e.confidence, e.verdict_basis, "
                "p.payload AS perception "
                "FROM episodes e LEFT JOIN steps p ON p.run_id = e.run_id AND p.episode_id = e.episode_id "
                "AND p.type = 'perception.reported' WHERE e.run_id = ? AND e.finished",
                params=[run_id],
            ).to_arrow_table(),
            ["verdict_basis"],
            embed_json=True,
        )
    }
    evidence: dict[str, list[dict[str, Any]]] = {}
    for row in rows(
        con.sql(
            "SELECT episode_id, evidence_id, url, content_sha256, source_family, published, visited "
            "FROM episode_evidence WHERE run_id = ? ORDER BY episode_id, first_call_index, evidence_id",
            params=[run_id],
        ).to_arrow_table()
    ):
        evidence.setdefault(row.pop("episode_id"), []).append(row)
    # Each episode's steps array is assembled in SQL from the stored payload text and
    # embedded verbatim: no payload is parsed or re-serialized in Python. Episodes go in
    # slices, so the ordered aggregation never holds a large log's payloads at once.
    ordered = sorted(episodes)
    for start in range(0, len(ordered), _TRACE_SLICE):
        first, last = ordered[start], ordered[min(start + _TRACE_SLICE, len(ordered)) - 1]
        steps = con.sql(
            """
            SELECT episode_id, '[' || string_agg(
                '{"payload":' || payload::VARCHAR || ',"step":' || step || ',"ts":"'
                || strftime(ts, ?) || '","type":"' || type || '"}', ',' ORDER BY step) || ']' AS steps
            FROM steps WHERE run_id = ? AND episode_id BETWEEN ? AND ? GROUP BY episode_id ORDER BY episode_id
            """,
            params=[UTC_TS_FORMAT, run_id, first, last],
        ).to_arrow_reader(1_000)
        for batch in steps:
            columns = batch.to_pydict()
            for episode_id, steps_json in zip(columns["episode_id"], columns["steps"]):
                yield episode_id, _trace(run_id, episodes[episode_id], steps_json, evidence.get(episode_id, []))


def _trace(run_id: str, episode: dict[str, Any], steps_json: str, evidence: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "schema_version": TRACE_SCHEMA,
        "run_id": run_id,
        "episode_id": episode["episode_id"],
        "image_id": episode["episode_id"],
        "case_id": episode["case_id"],
        "attempt": episode["final_attempt"],
        "verdict": episode["verdict"],
        "confidence": episode["confidence"],
        "verdict_basis": episode["verdict_basis"],
        "termination": episode["termination"],
        "error": episode["error"],
        "state": {
            "runtime_case": {
                "case_id": episode["case_id"],
                "image_path": episode["image_path"],
                "image_sha256": episode["image_sha256"],
            },
            "rollout": {
                "prompt_group_id": episode["prompt_group_id"],
                "rollout_index": episode["rollout_index"],
                "sampling_seed": episode["sampling_seed"],
            },
            "perception": orjson.Fragment(episode["perception"]) if episode["perception"] else None,
            "investigation_state": {"evidence": evidence},
        },
        "steps": orjson.Fragment(steps_json),
    }


def _sft_messages(request: dict[str, Any], final: dict[str, Any]) -> list[dict[str, Any]]:
    """Our Chat Completions transcript as TRL's conversational format: every content a list
    of parts (the image as {"type": "image"}), tool-call arguments as objects, tool turns
    named after their tool."""
    names: dict[str, str] = {}
    messages = []
    for message in [*request["messages"], final]:
        role = message["role"]
        content = message.get("content") or ""
        parts = content if isinstance(content, list) else ([{"type": "text", "text": content}] if content else [])
        parts = [{"type": "image"} if part.get("type") == "image_url" else {"type": "text", "text": part["text"]} for part in parts]
        turn: dict[str, Any] = {"role": role, "content": parts}
        if role == "assistant":
            if message.get("reasoning_content"):
                turn["reasoning_content"] = message["reasoning_content"]
            calls = []
            for call in message.get("tool_calls") or []:
                names[call["id"]] = call["function"]["name"]
                calls.append({
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["function"]["name"], "arguments": json.loads(call["function"]["arguments"] or "{}")},
                })
            if calls:
                turn["tool_calls"] = calls
        if role == "tool":
            turn["tool_call_id"] = message["tool_call_id"]
            turn["name"] = names.get(message["tool_call_id"], "")
        messages.append(turn)
    return messages


def trajectory_sft_records(con: duckdb.DuckDBPyConnection, run_id: str) -> Iterator[dict[str, Any]]:
    """One SFT row per judged episode whose trajectory the export accepts (sft_export_rejections):
    the full transcript up to and including the judgment."""
    metadata = _source_metadata(con, run_id)
    root = _release_root(con, run_id)
    for row in batch_rows(con.sql(
        f"""
        WITH calls AS (
            SELECT run_id, episode_id,
                   arg_max(request_sha256, step) AS last_request, arg_max(content, step) AS content,
                   arg_max(reasoning, step) AS reasoning, arg_min(request_sha256, step) AS first_request
            FROM model_calls WHERE run_id = $run_id GROUP BY ALL
        )
        SELECT e.episode_id, e.case_id, e.prompt_group_id, e.rollout_index, e.image_path, e.verdict,
               decode(lb.content) AS last_request, c.content, c.reasoning, decode(fb.content) AS first_request
        FROM episodes e
        JOIN calls c USING (run_id, episode_id)
        JOIN blobs lb ON lb.sha256 = c.last_request
        JOIN blobs fb ON fb.sha256 = c.first_request
        WHERE e.run_id = $run_id AND e.finished AND e.verdict IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM sft_export_rejections x WHERE x.run_id = e.run_id AND x.episode_id = e.episode_id)
        ORDER BY {_EPISODE_ORDER}
        """,
        params={"run_id": run_id},
    ), batch_size=2_000):
        final = {"role": "assistant", "content": row["content"], "reasoning_content": row["reasoning"]}
        yield {
            "schema_version": SFT_SCHEMA,
            "messages": _sft_messages(json.loads(row["last_request"]), final),
            "tools": json.loads(row["first_request"])["tools"],
            "images": [str(root / row["image_path"])],
            "episode_id": row["episode_id"],
            "case_id": row["case_id"],
            "prompt_group_id": row["prompt_group_id"],
            "rollout_index": row["rollout_index"],
            "verdict": row["verdict"],
            "source_metadata": metadata,
        }


def perception_records(con: duckdb.DuckDBPyConnection, run_id: str) -> Iterator[dict[str, Any]]:
    """One perception example per finished episode that perceived its image."""
    metadata = _source_metadata(con, run_id)
    root = _release_root(con, run_id)
    for row in batch_rows(
        con.sql(
            f"""
            SELECT e.episode_id, e.case_id, e.image_path, e.image_sha256, s.payload AS perception
            FROM episodes e JOIN steps s USING (run_id, episode_id)
            WHERE e.run_id = $run_id AND s.type = 'perception.reported'
            ORDER BY {_EPISODE_ORDER}
            """,
            params={"run_id": run_id},
        ),
        ["perception"],
    ):
        yield {
            "schema_version": PERCEPTION_SCHEMA,
            "episode_id": row["episode_id"],
            "case_id": row["case_id"],
            "images": [str(root / row["image_path"])],
            "image_sha256": row["image_sha256"],
            "perception": row["perception"],
            "source_metadata": metadata,
        }
