"""Episodes rebuilt from their events: seed-style traces, SFT trajectories in the
conversational tool-calling format TRL and `datasets` load, and perception examples."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb

from eviscene.exports.canonical_sql import double_sql, integer_sql, register_functions, text_sql
from eviscene.exports.serialize import batch_rows, string_buffers
from eviscene.rules.stages import POLICY_STAGES_SQL
from eviscene.rules.timestamps import UTC_TS_FORMAT

TRACE_SCHEMA = "eviscene-trace-v1"
SFT_SCHEMA = "eviscene-trajectory-sft-v1"
PERCEPTION_SCHEMA = "eviscene-perception-example-v1"
# The views this module's functions read (a caller creates them, or computes them once);
# `trace_texts` reads only TRACE_VIEWS_READ.
TRACE_VIEWS_READ = "run_manifests episodes steps episode_evidence"
VIEWS_READ = f"{TRACE_VIEWS_READ} model_calls sft_export_rejections"
# seed 000's rollout-spec order (the `episodes` view's spec_order), every run directory file's
EPISODE_ORDER = "e.spec_order, e.case_id, e.rollout_index, e.episode_id"
_TRACE_SLICE = 5_000


def _source_metadata(con: duckdb.DuckDBPyConnection, run_id: str) -> tuple[dict[str, Any], Any]:
    """A record's source_metadata (seed 000's four keys), and the release manifest's
    process_reference_protocol_version the run recorded ("" for a run recorded before it was)."""
    row = con.execute(
        "SELECT git_commit, release_id, runtime_contract_version, manifest->'benchmark'->'process_reference_protocol_version' "
        "FROM run_manifests WHERE run_id = ?", [run_id]
    ).fetchall()[0]
    metadata = {"source_run_id": run_id, "runtime_commit": row[0], "release_id": row[1], "runtime_contract_version": row[2]}
    return metadata, "" if row[3] is None else json.loads(row[3])


def _image_locations(con: duckdb.DuckDBPyConnection, run_id: str) -> Callable[[str], str]:
    """An episode's image_path -> where it lies under the run's release root, joined once
    per distinct path (an episode's rollouts share their image; pathlib's join of every row
    was ~0.8 s of CPU per 100k records)."""
    benchmark = con.execute("SELECT manifest->'benchmark'->>'path' FROM run_manifests WHERE run_id = ?", [run_id]).fetchall()[0][0]
    root = Path(benchmark).parent.parent
    return functools.cache(lambda image_path: str(root / image_path))


# A trace file is canonical_json of the trace with a newline, its keys sorted; here its text
# is put together in SQL from the stored payloads (embedded verbatim, as orjson embeds a
# Fragment) in rows that follow each other, ordered by (episode_id, part, step): the part
# before the steps (0), each step with a comma after it (1), the part after them (2).
# decision_policy_version is the run's (its manifest's agent block): seed 002 reads it from
# each trace alone, to choose the dataset version.
# Each text is one concat() of its pieces (no piece is NULL): a chain of || copies every
# intermediate string (100k episodes, 3.1M steps: putting the texts together 9.2 -> 6.4 CPU s).
_TRACE_ROWS_SQL = f"""
WITH ep AS (
    SELECT * FROM episodes WHERE run_id = $run_id AND finished AND episode_id BETWEEN $first AND $last
),
perception AS (
    SELECT episode_id, arg_max(payload::VARCHAR, seq) AS payload FROM steps
    WHERE run_id = $run_id AND type = 'perception.reported' AND episode_id BETWEEN $first AND $last GROUP BY episode_id
),
evidence AS (
    SELECT episode_id, string_agg(concat(
        '{{"content_sha256":', {text_sql("content_sha256")}, ',"evidence_id":', {text_sql("evidence_id")},
        ',"published":', {text_sql("published")}, ',"source_family":', {text_sql("source_family")},
        ',"url":', {text_sql("url")}, ',"visited":', {integer_sql("visited")}, '}}'),
        ',' ORDER BY first_call_index, evidence_id) AS items
    FROM episode_evidence WHERE run_id = $run_id AND episode_id BETWEEN $first AND $last GROUP BY episode_id
)
SELECT ep.episode_id, 0 AS part, NULL AS step, NULL AS seq, concat(
    '{{"attempt":', {integer_sql("ep.final_attempt")}, ',"case_id":', {text_sql("ep.case_id")},
    ',"confidence":', {double_sql("ep.confidence")},
    ',"decision_policy_version":', {text_sql("run.decision_policy_version")},
    ',"episode_id":', {text_sql("ep.episode_id")}, ',"error":', {text_sql("ep.error")},
    ',"image_id":', {text_sql("ep.episode_id")}, ',"run_id":', {text_sql("$run_id")},
    ',"schema_version":"{TRACE_SCHEMA}","state":{{"investigation_state":{{"evidence":[', coalesce(evidence.items, ''),
    ']}},"perception":', coalesce(nullif(perception.payload, ''), 'null'),
    ',"rollout":{{"prompt_group_id":', {text_sql("ep.prompt_group_id")},
    ',"rollout_index":', {integer_sql("ep.rollout_index")}, ',"sampling_seed":', {integer_sql("ep.sampling_seed")},
    '}},"runtime_case":{{"case_id":', {text_sql("ep.case_id")}, ',"image_path":', {text_sql("ep.image_path")},
    ',"image_sha256":', {text_sql("ep.image_sha256")}, '}}}},"steps":[') AS text
FROM ep JOIN run_manifests run USING (run_id) LEFT JOIN perception USING (episode_id) LEFT JOIN evidence USING (episode_id)
UNION ALL
SELECT episode_id, 1, step, seq,
    concat('{{"payload":', payload::VARCHAR, ',"step":', step, ',"ts":"', strftime(ts, $ts_format), '","type":"', type, '"}},')
FROM steps WHERE run_id = $run_id AND episode_id BETWEEN $first AND $last
UNION ALL
SELECT episode_id, 2, NULL, NULL, concat(
    '],"termination":', {text_sql("termination")}, ',"verdict":', {text_sql("verdict")},
    ',"verdict_basis":', coalesce(verdict_basis::VARCHAR, 'null'), '}}', chr(10))
FROM ep
ORDER BY episode_id, part, step, seq
"""


def trace_texts(con: duckdb.DuckDBPyConnection, run_id: str) -> Iterator[tuple[str, tuple[memoryview, memoryview]]]:
    """(episode_id, parts) for every finished episode with steps, from its final attempt:
    the bytes of its trace file are the two parts one after the other (canonical_json of the
    trace and a newline). Episodes go in slices, so a large log's payloads are never held at
    once; the parts are views of one slice's text, not copies."""
    register_functions(con)
    ordered = [e for (e,) in con.execute(
        "SELECT episode_id FROM episodes WHERE run_id = ? AND finished ORDER BY episode_id", [run_id]
    ).fetchall()]
    for start in range(0, len(ordered), _TRACE_SLICE):
        params = {"run_id": run_id, "first": ordered[start], "last": ordered[min(start + _TRACE_SLICE, len(ordered)) - 1],
                  "ts_format": UTC_TS_FORMAT}
        table = con.sql(_TRACE_ROWS_SQL, params=params).to_arrow_table()
        # one buffer: an episode's rows lie side by side in it
        offsets, data = string_buffers(table.column("text").combine_chunks())
        parts = table.column("part").to_pylist()
        episode_ids = table.column("episode_id").to_pylist()
        heads = [i for i, part in enumerate(parts) if part == 0]
        tails = [i for i, part in enumerate(parts) if part == 2]
        for head, tail in zip(heads, tails):
            episode_id = episode_ids[head]
            if tail > head + 1:  # the comma after the last step dropped
                yield episode_id, (data[offsets[head]:offsets[tail] - 1], data[offsets[tail]:offsets[tail + 1]])


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


def trajectory_sft_records(
    con: duckdb.DuckDBPyConnection, run_id: str, *, process_reference_protocol_version: Any = None
) -> Iterator[dict[str, Any]]:
    """One SFT row per judged episode whose trajectory the export accepts (sft_export_rejections):
    the full transcript up to and including the judgment, read from the policy's model calls
    (a separate VLM's perception request has no tools and is not the transcript). Its
    source_metadata's `process_reference_protocol_version` is, as seed 000 writes it, the
    release manifest's (recorded in the run's manifest; "" for a run recorded before it was),
    unless given."""
    metadata, recorded = _source_metadata(con, run_id)
    metadata["process_reference_protocol_version"] = recorded if process_reference_protocol_version is None else process_reference_protocol_version
    image_location = _image_locations(con, run_id)
    for row in batch_rows(con.sql(
        f"""
        WITH calls AS (
            SELECT run_id, episode_id,
                   arg_max(request_sha256, step) AS last_request, arg_max(content, step) AS content,
                   arg_max(reasoning, step) AS reasoning, arg_min(request_sha256, step) AS first_request
            FROM model_calls WHERE run_id = $run_id AND stage IN {POLICY_STAGES_SQL} GROUP BY ALL
        )
        SELECT e.episode_id, e.case_id, e.prompt_group_id, e.rollout_index, e.image_path, e.verdict,
               decode(lb.content) AS last_request, c.content, c.reasoning, decode(fb.content) AS first_request
        FROM episodes e
        JOIN calls c USING (run_id, episode_id)
        JOIN blobs lb ON lb.sha256 = c.last_request
        JOIN blobs fb ON fb.sha256 = c.first_request
        WHERE e.run_id = $run_id AND e.finished AND e.verdict IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM sft_export_rejections x WHERE x.run_id = e.run_id AND x.episode_id = e.episode_id)
        ORDER BY {EPISODE_ORDER}
        """,
        params={"run_id": run_id},
    ), batch_size=2_000):
        final = {"role": "assistant", "content": row["content"], "reasoning_content": row["reasoning"]}
        yield {
            "schema_version": SFT_SCHEMA,
            "messages": _sft_messages(json.loads(row["last_request"]), final),
            "tools": json.loads(row["first_request"])["tools"],
            "images": [image_location(row["image_path"])],
            "episode_id": row["episode_id"],
            "case_id": row["case_id"],
            "prompt_group_id": row["prompt_group_id"],
            "rollout_index": row["rollout_index"],
            "verdict": row["verdict"],
            "source_metadata": metadata,
        }


def perception_records(con: duckdb.DuckDBPyConnection, run_id: str) -> Iterator[dict[str, Any]]:
    """One perception example per finished episode that perceived its image."""
    metadata, _ = _source_metadata(con, run_id)
    image_location = _image_locations(con, run_id)
    for row in batch_rows(
        con.sql(
            f"""
            SELECT e.episode_id, e.case_id, e.image_path, e.image_sha256, s.payload AS perception
            FROM episodes e JOIN steps s USING (run_id, episode_id)
            WHERE e.run_id = $run_id AND s.type = 'perception.reported'
            ORDER BY {EPISODE_ORDER}
            """,
            params={"run_id": run_id},
        ),
        ["perception"],
    ):
        yield {
            "schema_version": PERCEPTION_SCHEMA,
            "episode_id": row["episode_id"],
            "case_id": row["case_id"],
            "images": [image_location(row["image_path"])],
            "image_sha256": row["image_sha256"],
            "perception": row["perception"],
            "source_metadata": metadata,
        }
