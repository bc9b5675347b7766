"""Writing a computed dataset export: seed 002's files and manifest, from the dataset views
of an open export connection, each file ordered by episode_id and written with the one
canonical serializer (Parquet copies with --format parquet)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from eviscene.exports.dataset_views import ExportSettings
from eviscene.exports.serialize import JsonlFiles, batch_rows, rows, write_json
from eviscene.rules.canonical import canonical_json

FORMATS = ("jsonl", "parquet")
SPLITS = ("train", "validation", "test")
# seed 002's episode_metadata fields; the last two only when the trajectory exported.
METADATA_KEYS = (
    "episode_id", "case_id", "source_run_id", "source_trace", "source_family_keys", "runtime_ids", "teacher_score",
    "training_eligible", "training_exclusion_reasons", "deterministic_hard_gate_pass", "deterministic_fatal_reasons",
    "deterministic_red_flags", "structured_eligibility_pass", "semantic_audit_pass", "sft_eligibility_artifact_id",
    "semantic_reward_artifact_id", "decision_policy_version", "runtime_store_path", "trajectory_export_error",
)
TRAJECTORY_METADATA_KEYS = ("trajectory_token_count_estimate", "tool_call_count")
ROUTE_KEYS = ("split", "split_group_id", "sft_route", "short_max_tokens", "trajectory_approx_tokens")
ACCEPTED_EPISODE_KEYS = (
    "case_id", "episode_id", "split", "split_group_id", "source_run_id", "source_trace", "sft_eligibility_artifact_id",
    "semantic_reward_artifact_id", "deterministic_hard_gate_pass", "deterministic_fatal_reasons",
    "deterministic_red_flags", "teacher_score", "trajectory_token_count_estimate", "tool_call_count", "sft_route",
)
ARTIFACTS = {
    "train": "train.jsonl",
    "validation": "validation.jsonl",
    "test": "test.jsonl",
    "perception_train": "perception.train.jsonl",
    "perception_validation": "perception.validation.jsonl",
    "perception_test": "perception.test.jsonl",
    "episode_metadata": "episode_metadata.jsonl",
    "accepted_episodes": "accepted_episodes.jsonl",
    "excluded_episode_metadata": "excluded_episode_metadata.jsonl",
    "long_holdout": "long_holdout.jsonl",
    "action_only": "action_only.jsonl",
}
# Not in seed 002: the SFT splits with the tool schemas in the system message, for vision
# pipelines that pass no `tools` to the chat template.
SYSTEM_TOOLS_ARTIFACTS = {f"{split}_system_tools": f"{split}.system_tools.jsonl" for split in SPLITS}
TOOLS_PREAMBLE = (
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
)
TOOLS_EPILOGUE = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


def _json_columns(relation: duckdb.DuckDBPyRelation) -> list[str]:
    return [name for name, kind in zip(relation.columns, relation.types) if str(kind) == "JSON"]


def _select(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    relation = con.sql(sql, params=params)
    return rows(relation.to_arrow_table(), _json_columns(relation))


def _stream(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> Iterator[dict[str, Any]]:
    """`_select`'s rows, read in Arrow batches so a large result never sits in memory whole."""
    relation = con.sql(sql, params=params)
    return batch_rows(relation, _json_columns(relation))


def _metadata(row: dict[str, Any]) -> dict[str, Any]:
    found = {key: row[key] for key in METADATA_KEYS}
    if row["has_trajectory"]:
        found.update({key: row[key] for key in TRAJECTORY_METADATA_KEYS})
    return found


def dataset_version(decision_policy_version: str) -> str:
    return "ifv-trajectory-sft-dataset-v3" if decision_policy_version == "unified-react-v1" else "ifv-trajectory-sft-dataset-v2"


def _sft_row(row: dict[str, Any], version: str) -> dict[str, Any]:
    """seed DatasetTrajectorySFTExample: the trajectory plus its dataset fields."""
    record = dict(row["record"])
    record.setdefault("token_count_estimate", row["trajectory_token_count_estimate"])
    record.setdefault("tool_call_count", row["tool_call_count"])
    record.update({
        "dataset_version": version,
        "split": row["split"],
        "split_group_id": row["split_group_id"],
        "source_family_keys": row["source_family_keys"],
        "teacher_score": row["teacher_score"],
    })
    return record


def tools_in_system_message(row: dict[str, Any]) -> dict[str, Any]:
    """The SFT row with its tool schemas rendered into the system message (Hermes-style
    <tools> block) and no `tools` column."""
    tools = "\n".join(canonical_json(tool) for tool in row.get("tools") or [])
    block = TOOLS_PREAMBLE + tools + TOOLS_EPILOGUE
    messages = list(row["messages"])  # only the system message changes: shallow copies suffice
    index = next((i for i, m in enumerate(messages) if m.get("role") == "system"), None)
    if index is None:
        messages.insert(0, {"role": "system", "content": [{"type": "text", "text": block.lstrip()}]})
    else:
        system = messages[index]
        content = system.get("content")
        if isinstance(content, list):
            content = [*content, {"type": "text", "text": block}]
        else:
            content = (content or "") + block
        messages[index] = {**system, "content": content}
    return {**{k: v for k, v in row.items() if k != "tools"}, "messages": messages}


def _parquet(path: Path, records: list[dict[str, Any]]) -> None:
    """Parquet beside a JSONL file; nested values that Arrow cannot type consistently
    across rows are stored as canonical JSON text."""
    try:
        table = pa.Table.from_pylist(records)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
        table = pa.Table.from_pylist([
            {k: canonical_json(v) if isinstance(v, (dict, list)) else v for k, v in record.items()} for record in records
        ])
    pq.write_table(table, path, compression="zstd")


def _write_parquet(out_dir: Path, files: dict[str, list[dict[str, Any]]], concurrency: int) -> None:
    """Parquet copies of the JSONL files, `concurrency` files at a time (seed 002's
    export_concurrency): each file by one thread, so the bytes do not depend on it."""
    work = [(out_dir / name.replace(".jsonl", ".parquet"), records) for name, records in files.items()]
    if concurrency == 1:
        for path, records in work:
            _parquet(path, records)
    else:
        with ThreadPoolExecutor(max_workers=min(concurrency, len(work)), thread_name_prefix="dataset-export") as pool:
            list(pool.map(lambda item: _parquet(*item), work))


def _frozen_inputs(con: duckdb.DuckDBPyConnection, settings: ExportSettings, paths: dict[str, Path | None]) -> dict[str, Any] | None:
    if not settings.frozen:
        return None
    sha = {
        (r["import_id"], r["kind"]): r["sha256"]
        for r in _select(con, "SELECT import_id, kind, sha256 FROM imported_files WHERE kind IN ('case_split', 'accepted_release_manifest')")
    }
    release = None
    if settings.accepted_release_import:
        document = _select(
            con, "SELECT document FROM imported_documents WHERE import_id = ? AND kind = 'accepted_release_manifest'",
            [settings.accepted_release_import],
        )[0]["document"]
        release = {
            "path": str(paths["accepted_release"]),
            "manifest_sha256": sha[(settings.accepted_release_import, "accepted_release_manifest")],
            "schema_version": document.get("schema_version"),
            "runtime_store_archive": document.get("runtime_store_archive"),
        }
    return {
        "case_split": {"path": str(paths["case_split"]), "sha256": sha[(settings.case_split_import, "case_split")]},
        "eligibility_dir": str(paths["eligibility_dir"]),
        "semantic_reward_dir": str(paths["semantic_reward_dir"]) if paths["semantic_reward_dir"] else None,
        "accepted_release": release,
    }


def _source_runs(con: duckdb.DuckDBPyConnection, settings: ExportSettings, log_path: Path) -> list[dict[str, Any]]:
    found = {r["source_id"]: r for r in _select(con, "SELECT source_id, source_run_id, path, git_commit, release_id FROM dataset_sources")}
    return [
        {
            "run_id": found[s]["source_run_id"],
            "path": found[s]["path"] or str(log_path),
            "git_commit": found[s]["git_commit"],
            "release_id": found[s]["release_id"],
        }
        for s in settings.sources
    ]


def write_dataset(
    con: duckdb.DuckDBPyConnection, out_dir: Path, settings: ExportSettings, paths: dict[str, Path | None], *, log_path: Path, fmt: str,
    export_concurrency: int = 1,
) -> tuple[dict[str, Any], dict[str, int]]:
    summary = _select(con, "SELECT * FROM dataset_summary")[0]
    version = dataset_version(summary["decision_policy_version"])
    names = [
        name for split in SPLITS
        for name in (f"{split}.jsonl", SYSTEM_TOOLS_ARTIFACTS[f"{split}_system_tools"], f"perception.{split}.jsonl")
    ] + ["long_holdout.jsonl", "episode_metadata.jsonl", "accepted_episodes.jsonl", "excluded_episode_metadata.jsonl", "action_only.jsonl"]
    # One pass over each view's rows in episode order, in Arrow batches, fills every file.
    with JsonlFiles(out_dir, names, keep_records=fmt == "parquet") as files:
        for r in _stream(con, "SELECT * FROM dataset_rows ORDER BY episode_id"):
            metadata = {**_metadata(r), **{k: r[k] for k in ROUTE_KEYS}}
            files.add("episode_metadata.jsonl", metadata)
            files.add("accepted_episodes.jsonl", {k: metadata.get(k) for k in ACCEPTED_EPISODE_KEYS})
            if r["sft_route"] == "short_sft":
                sft = _sft_row(r, version)
                files.add(f"{r['split']}.jsonl", sft)
                files.add(SYSTEM_TOOLS_ARTIFACTS[f"{r['split']}_system_tools"], tools_in_system_message(sft))
            elif r["sft_route"] == "long_holdout":
                files.add("long_holdout.jsonl", {
                    **_sft_row(r, version), "holdout_reason": "trajectory_exceeds_short_token_budget",
                    "short_max_tokens": settings.short_max_tokens,
                })
        for r in _stream(con, "SELECT episode_id, split, split_group_id, example FROM perception_examples ORDER BY episode_id"):
            files.add(f"perception.{r['split']}.jsonl", {**r["example"], "split": r["split"], "split_group_id": r["split_group_id"]})
        for r in _stream(con, "SELECT * FROM excluded_episodes ORDER BY episode_id"):
            files.add("excluded_episode_metadata.jsonl", {
                **_metadata(r), "trajectory_sft_rows": r["trajectory_sft_rows"], "perception_example_count": r["perception_example_count"],
            })
        action_only = "SELECT row FROM imported_rows WHERE import_id = ? AND kind = 'action_only' ORDER BY line_number"
        for r in _stream(con, action_only, [settings.accepted_release_import]):
            files.add("action_only.jsonl", r["row"])
    if files.records is not None:
        _write_parquet(out_dir, files.records, export_concurrency)
    written = files.counts
    manifest = {
        "schema_version": "ifv-trajectory-sft-dataset-manifest-v1",
        "dataset_version": version,
        "trajectory_version": "ifv-trajectory-sft-v3",
        "decision_policy_version": summary["decision_policy_version"],
        "perception_version": "ifv-perception-v1",
        "legacy_step_policy_export": "disabled",
        "split_mode": "frozen_teacher_sft" if settings.frozen else "derived",
        "seed": settings.seed,
        "short_max_tokens": settings.short_max_tokens,
        "short_max_tokens_unit": "approximate_model_tokens",
        "token_estimate_unit": "utf8_bytes",
        "split_ratios": None if settings.frozen else {
            "train": settings.train_ratio,
            "validation": settings.validation_ratio,
            "test": 1 - settings.train_ratio - settings.validation_ratio,
        },
        "source_runs": _source_runs(con, settings, log_path),
        "frozen_inputs": _frozen_inputs(con, settings, paths),
        "source_mode": "canonical_accepted_release" if settings.accepted_release_import else "rollout_run",
        # Not in seed 002: which rollouts were kept, and whether training-prohibited sources could contribute.
        "rollout_selection": "one_rollout_per_case" if settings.frozen or settings.one_rollout_per_case else "every_eligible_rollout",
        "allow_training_prohibited": settings.allow_training_prohibited,
        "export_concurrency": export_concurrency,
        **{key: summary[key] for key in (
            "episode_count", "accepted_episode_count", "selected_release_case_count", "action_only_episode_count",
            "action_only_perception_count", "long_holdout_episode_count", "accepted_case_count", "short_sft_case_count",
            "candidate_episode_count", "excluded_episode_count", "group_count",
        )},
        # Not in seed 002: excluded candidates by their decisive reason (excluded_episodes.main_reason).
        "excluded_reason_counts": {
            r["main_reason"]: r["episodes"]
            for r in _select(con, "SELECT main_reason, count(*) AS episodes FROM excluded_episodes GROUP BY ALL ORDER BY episodes DESC, main_reason")
        },
        "example_counts": {split: summary["example_counts"][split] for split in SPLITS},
        "perception_example_counts": {split: summary["perception_example_counts"][split] for split in SPLITS},
        "artifacts": {**ARTIFACTS, **SYSTEM_TOOLS_ARTIFACTS},
    }
    write_json(out_dir / "manifest.json", manifest)
    return manifest, written
