"""Writing a computed dataset export: seed 002's files and manifest, from the dataset views
of an open export connection, each file ordered by episode_id and written with the one
canonical serializer (Parquet copies with --format parquet)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterable, Iterator

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from eviscene.exports.canonical_sql import json_sql, object_sql, register_functions, value_sql
from eviscene.exports.dataset_views import ExportSettings
from eviscene.exports.serialize import JsonlFiles, read_ahead, rows, utf8_values, write_json
from eviscene.rules.canonical import canonical_json_exact
from eviscene.rules.jsonl import loads_exactly
from eviscene.views import sql_name, sql_text

FORMATS = ("jsonl", "parquet")
# The views write_dataset reads (the exporter drops what the decisions needed but these do not).
FILES_READ = "dataset_summary dataset_rows perception_examples excluded_episodes imported_rows imported_documents imported_files dataset_sources"
BATCH_ROWS = 2_000  # rows of text per Arrow batch: 10,000 held ~100 MiB more at 100k
SPLITS = ("train", "validation", "test")
# seed 002's episode_metadata fields; the last two only when the trajectory exported.
METADATA_KEYS = (
    "episode_id", "case_id", "source_run_id", "source_trace", "source_family_keys", "runtime_ids", "teacher_score",
    "training_eligible", "training_exclusion_reasons", "deterministic_hard_gate_pass", "deterministic_fatal_reasons",
    "deterministic_red_flags", "structured_eligibility_pass", "semantic_audit_pass", "sft_eligibility_artifact_id",
    "semantic_reward_artifact_id", "decision_policy_version", "runtime_store_path", "trajectory_export_error",
)
TRAJECTORY_METADATA_KEYS = ("trajectory_token_count_estimate", "tool_call_count")
# The manifest's counts, as the dataset_summary view has them.
SUMMARY_COUNTS = (
    "episode_count", "accepted_episode_count", "selected_release_case_count", "action_only_episode_count",
    "action_only_perception_count", "long_holdout_episode_count", "accepted_case_count", "short_sft_case_count",
    "candidate_episode_count", "excluded_episode_count", "group_count",
)
# Each metadata file's keys in the seed's order (the trajectory's only where there is one).
EPISODE_METADATA_KEYS = METADATA_KEYS + TRAJECTORY_METADATA_KEYS + (
    "split", "split_group_id", "sft_route", "short_max_tokens", "trajectory_approx_tokens",
)
EXCLUDED_METADATA_KEYS = METADATA_KEYS + TRAJECTORY_METADATA_KEYS + ("trajectory_sft_rows", "perception_example_count")
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


# The metadata files' lines are written by DuckDB, each the canonical JSON text of its object
# (eviscene.exports.canonical_sql: keys sorted), and copied out a batch at a time. The SFT and
# perception records are completed in Python: their dataset fields are built as JSON text in
# DuckDB in the seed dicts' key order and read by orjson (a Parquet copy's columns follow that
# order). That text only has to read back as the very values the rows hold: to_json writes
# doubles in shortest round-trip digits and strings with exact escapes; JSON columns go in as
# stored; NaN and infinities, which orjson writes as null, go in as null.
_TO_JSON_TYPES = {"VARCHAR", "VARCHAR[]", "BOOLEAN", "BIGINT", "INTEGER"}


def _value_sql(column: str, kind: str | duckdb.DuckDBPyType) -> str:
    quoted, kind = f'"{column}"', str(kind)
    if kind == "JSON":
        return f"coalesce({quoted}::VARCHAR, 'null')"
    if kind == "DOUBLE":
        return f"coalesce(to_json(CASE WHEN isfinite({quoted}) THEN {quoted} END)::VARCHAR, 'null')"
    if kind in _TO_JSON_TYPES:
        return f"coalesce(to_json({quoted})::VARCHAR, 'null')"
    raise TypeError(f"no exact JSON text for a {kind} column ({column})")


def _members_sql(kinds: dict[str, duckdb.DuckDBPyType], keys: Iterable[str]) -> str:
    """SQL text of `,"column":value` members, in order."""
    return "(" + " || ".join(f"{sql_text(',' + json.dumps(key) + ':')} || {_value_sql(key, kinds[key])}" for key in keys) + ")"


def _object_sql(*members: str) -> str:
    """A JSON object's text from `_members_sql` parts (the first comma dropped)."""
    return f"'{{' || substr({' || '.join(members)}, 2) || '}}'"


def _line_sql(kinds: dict[str, duckdb.DuckDBPyType], keys: Iterable[str], *, null_without_trajectory: Iterable[str] = ()) -> str:
    """SQL: one JSONL line (its newline included) of the object of the columns `keys`, as
    canonical_json writes the row's values; the keys in `null_without_trajectory` are null
    where the row has no trajectory."""
    nulled = set(null_without_trajectory)
    members = {}
    for key in keys:
        value = json_sql(sql_name(key)) if str(kinds[key]) == "JSON" else value_sql(sql_name(key), kinds[key])
        members[key] = f"CASE WHEN has_trajectory THEN {value} ELSE 'null' END" if key in nulled else value
    return f"{object_sql(members)} || chr(10)"


def _trajectory_line_sql(kinds: dict[str, duckdb.DuckDBPyType], keys: tuple[str, ...]) -> str:
    """`_line_sql` of `keys`, the trajectory's metadata keys among them only where the row has
    a trajectory (seed 002's episode metadata)."""
    without = tuple(key for key in keys if key not in TRAJECTORY_METADATA_KEYS)
    return f"CASE WHEN has_trajectory THEN {_line_sql(kinds, keys)} ELSE {_line_sql(kinds, without)} END"


def _batches(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> Iterator[pa.RecordBatch]:
    """The query's rows in Arrow batches, the next computed while the caller writes one."""
    return read_ahead(con.sql(sql, params=params).to_arrow_reader(BATCH_ROWS))


def _lists(batch: pa.RecordBatch, first: int = 0, end: int | None = None) -> list[list[Any]]:
    """The batch's columns from `first` on (up to `end`), one Python list each."""
    return [column.to_pylist() for column in batch.columns[first:end]]


def _kinds(con: duckdb.DuckDBPyConnection, view: str) -> dict[str, duckdb.DuckDBPyType]:
    relation = con.sql(f"SELECT * FROM {view}")
    return dict(zip(relation.columns, relation.types))


def dataset_version(decision_policy_version: str) -> str:
    return "ifv-trajectory-sft-dataset-v3" if decision_policy_version == "unified-react-v1" else "ifv-trajectory-sft-dataset-v2"


def tools_in_system_message(row: dict[str, Any]) -> dict[str, Any]:
    """The SFT row with its tool schemas rendered into the system message (Hermes-style
    <tools> block) and no `tools` column."""
    tools = "\n".join(canonical_json_exact(tool) for tool in row.get("tools") or [])
    block = TOOLS_PREAMBLE + tools + TOOLS_EPILOGUE
    messages = list(row["messages"])  # only the system message changes: shallow copies suffice
    for index, message in enumerate(messages):
        if message.get("role") == "system":
            content = message.get("content")
            if isinstance(content, list):
                content = [*content, {"type": "text", "text": block}]
            else:
                content = (content or "") + block
            messages[index] = {**message, "content": content}
            break
    else:
        messages.insert(0, {"role": "system", "content": [{"type": "text", "text": block.lstrip()}]})
    rendered = row.copy()  # the row's key order (a Parquet copy's columns follow it)
    rendered.pop("tools", None)
    rendered["messages"] = messages
    return rendered


# A file's columns whose values are JSON objects (a message, a tool's schema, a call's
# arguments) of no one shape: Arrow infers one struct for them all, each object gaining every
# other's keys as nulls (a tool call then shows every tool's arguments), or gives up for the
# whole column, which then differs from file to file. Each such value is stored as its
# canonical JSON text, typed JSON (Parquet's JSON logical type, which DuckDB reads as JSON and
# `datasets` as its `Json` feature: the objects as the JSONL line has them), and a list of them
# (`messages`, `tools`) as a list of such texts. The keys the export writes itself have declared
# types, so a file's schema does not follow what its rows happen to hold (a column no row fills,
# every score a whole number); a key only an imported row has is inferred.
_JSON_LIST = pa.list_(pa.json_())
_LIST_OF_TEXTS = pa.list_(pa.string())
_DECLARED_TYPES = {
    "messages": _JSON_LIST, "tools": _JSON_LIST,
    **dict.fromkeys(("training_eligible", "deterministic_hard_gate_pass", "structured_eligibility_pass",
                     "semantic_audit_pass"), pa.bool_()),
    **dict.fromkeys(("token_count_estimate", "tool_call_count", "trajectory_token_count_estimate", "short_max_tokens",
                     "trajectory_approx_tokens", "trajectory_sft_rows", "perception_example_count"), pa.int64()),
    "teacher_score": pa.float64(),
    **dict.fromkeys(("source_family_keys", "runtime_ids", "training_exclusion_reasons", "deterministic_fatal_reasons",
                     "deterministic_red_flags"), _LIST_OF_TEXTS),
}


def _declared_type(key: str) -> pa.DataType:
    return _DECLARED_TYPES.get(key, pa.string())


def _json_values(values: list[Any]) -> pa.Array:
    texts = [None if value is None else canonical_json_exact(value) for value in values]
    return pa.ExtensionArray.from_storage(pa.json_(), pa.array(texts, pa.string()))


def _json_lists(values: list[list[Any] | None]) -> pa.Array:
    texts = pa.array([None if value is None else [canonical_json_exact(item) for item in value] for value in values], _LIST_OF_TEXTS)
    items = pa.ExtensionArray.from_storage(pa.json_(), texts.values)
    return pa.ListArray.from_arrays(texts.offsets, items, mask=texts.is_null())


def _column(key: str, values: list[Any]) -> pa.Array:
    """One column of a dataset Parquet file (see `_DECLARED_TYPES` above): lists holding objects
    as lists of JSON values, other objects as JSON values, a declared key as its type, the rest
    as Arrow infers them, and whatever fits none of these (5 in one row, "5" in another) as JSON."""
    declared = _DECLARED_TYPES.get(key)
    present = [value for value in values if value is not None]
    if declared == _JSON_LIST or any(
        isinstance(value, dict) or (isinstance(value, list) and any(isinstance(item, (dict, list)) for item in value))
        for value in present
    ):
        return _json_lists(values) if all(isinstance(value, list) for value in present) else _json_values(values)
    try:
        if declared is not None:
            return pa.array(values, declared)
        array = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        return _json_values(values)
    if pa.types.is_null(array.type):  # no row has a value: its kind is unknown, text by default
        return pa.array(values, pa.string())
    if pa.types.is_list(array.type) and pa.types.is_null(array.type.value_type):
        return pa.array(values, _LIST_OF_TEXTS)
    return array


def _table(records: list[dict[str, Any]]) -> pa.Table:
    """A file's rows as Arrow: a column for every key a row has, in the order keys first appear
    (null where a row lacks it: from_pylist took the first row's keys alone, and a metadata
    file whose first episode had no trajectory lost its trajectory columns)."""
    columns = list(dict.fromkeys(key for record in records for key in record))
    return pa.Table.from_arrays([_column(key, [record.get(key) for record in records]) for key in columns], names=columns)


# Files whose rows are built alike: an empty one takes the columns of the first non-empty one
# (a zero-column Parquet file is one DuckDB and `datasets` cannot read).
_SFT_FILES = tuple(f"{split}.jsonl" for split in SPLITS)
_SIBLINGS = (_SFT_FILES, tuple(SYSTEM_TOOLS_ARTIFACTS.values()), tuple(f"perception.{split}.jsonl" for split in SPLITS))
# A long-holdout row is an SFT row and these (write_dataset's holdout_fields), so either kind's
# columns give the other's.
_HOLDOUT_COLUMNS = pa.schema([("holdout_reason", pa.string()), ("short_max_tokens", pa.int64())])
# Where no file of a kind has a row, the keys every row of it would have (as declared): the
# metadata files' keys, an SFT row's messages and the fields the export adds to it, a
# perception example's episode id and split fields, an action-only row's episode id.
_SFT_KEYS = ("messages", "token_count_estimate", "tool_call_count", "dataset_version", "split", "split_group_id",
             "source_family_keys", "teacher_score")
_KEYS_WITHOUT_ROWS = {
    **dict.fromkeys(_SFT_FILES + tuple(SYSTEM_TOOLS_ARTIFACTS.values()), _SFT_KEYS),
    "long_holdout.jsonl": _SFT_KEYS + tuple(_HOLDOUT_COLUMNS.names),
    **dict.fromkeys((f"perception.{split}.jsonl" for split in SPLITS), ("episode_id", "split", "split_group_id")),
    "episode_metadata.jsonl": EPISODE_METADATA_KEYS,
    "accepted_episodes.jsonl": ACCEPTED_EPISODE_KEYS,
    "excluded_episode_metadata.jsonl": EXCLUDED_METADATA_KEYS,
    "action_only.jsonl": ("episode_id",),
}


def _empty_schema(name: str, filled: dict[str, pa.Schema]) -> pa.Schema:
    """The columns of the empty file `name`, given those of the files with rows: a sibling's,
    else the SFT or long-holdout files' (one derived from the other), else its kind's keys."""
    for siblings in _SIBLINGS:
        if name in siblings and (found := next((filled[other] for other in siblings if other in filled), None)):
            return found
    sft = next((filled[other] for other in _SFT_FILES if other in filled), None)
    if name == "long_holdout.jsonl" and sft is not None:
        return pa.schema(list(sft) + list(_HOLDOUT_COLUMNS))
    if name in _SFT_FILES and "long_holdout.jsonl" in filled:
        return pa.schema([column for column in filled["long_holdout.jsonl"] if column.name not in _HOLDOUT_COLUMNS.names])
    return pa.schema([(key, _declared_type(key)) for key in _KEYS_WITHOUT_ROWS[name]])


def _write_parquet(out_dir: Path, files: dict[str, list[dict[str, Any]]], concurrency: int) -> None:
    """Parquet copies of the JSONL files, `concurrency` files at a time (seed 002's
    export_concurrency): each file by one thread, so the bytes do not depend on it. The files
    with rows go first; an empty one then takes the columns a file of its kind with rows has
    (_empty_schema)."""
    filled: dict[str, pa.Schema] = {}

    def write(name: str) -> None:
        path = out_dir / name.replace(".jsonl", ".parquet")
        if not files[name]:
            # no row group at all: `datasets` reads a file's first row group's size as its batch size
            pq.ParquetWriter(path, _empty_schema(name, filled), compression="zstd").close()
            return
        table = _table(files[name])
        pq.write_table(table, path, compression="zstd")
        filled[name] = table.schema

    for batch in ([name for name in files if files[name]], [name for name in files if not files[name]]):
        if concurrency == 1 or len(batch) <= 1:
            for name in batch:
                write(name)
        else:
            with ThreadPoolExecutor(max_workers=min(concurrency, len(batch)), thread_name_prefix="dataset-export") as pool:
                list(pool.map(write, batch))


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
    rows_kinds, excluded_kinds = _kinds(con, "dataset_rows"), _kinds(con, "excluded_episodes")
    register_functions(con)
    metadata = _trajectory_line_sql(rows_kinds, EPISODE_METADATA_KEYS)
    accepted = _line_sql(rows_kinds, ACCEPTED_EPISODE_KEYS, null_without_trajectory=TRAJECTORY_METADATA_KEYS)
    # seed DatasetTrajectorySFTExample: the trajectory, its counts unless it has them, then its dataset fields
    sft_fields = _object_sql(
        sql_text(f',"dataset_version":{json.dumps(version)}'),
        _members_sql(rows_kinds, ("split", "split_group_id", "source_family_keys", "teacher_score")),
    )
    holdout_fields = {"holdout_reason": "trajectory_exceeds_short_token_budget", "short_max_tokens": settings.short_max_tokens}
    dataset_rows = f"""
        SELECT {metadata}, {accepted}, sft_route, split, trajectory_token_count_estimate, tool_call_count, {sft_fields},
               record::VARCHAR
        FROM (SELECT * FROM dataset_rows ORDER BY episode_id)"""
    excluded = _trajectory_line_sql(excluded_kinds, EXCLUDED_METADATA_KEYS)
    perception_fields = _object_sql(_members_sql(_kinds(con, "perception_examples"), ("split", "split_group_id")))
    perception = f"SELECT split, example::VARCHAR, {perception_fields} FROM perception_examples ORDER BY episode_id"
    action_only = "SELECT row::VARCHAR FROM imported_rows WHERE import_id = ? AND kind = 'action_only' ORDER BY line_number"
    # One pass over each view's rows in episode order, in Arrow batches, fills every file.
    # The texts are built after the sort (DuckDB keeps a sorted subquery's order through a
    # projection), so the sort does not carry them: ~100 MiB less peak at 100k.
    with JsonlFiles(out_dir, names, keep_records=fmt == "parquet") as files:
        for batch in _batches(con, dataset_rows):
            files.add_lines("episode_metadata.jsonl", batch.column(0), EPISODE_METADATA_KEYS)
            files.add_lines("accepted_episodes.jsonl", batch.column(1), ACCEPTED_EPISODE_KEYS)
            records = utf8_values(batch.column(7))
            for route, split, token_count_estimate, tool_call_count, fields, record in zip(*_lists(batch, 2, 7), records):
                if route not in ("short_sft", "long_holdout"):
                    continue
                sft = loads_exactly(record)
                sft.setdefault("token_count_estimate", token_count_estimate)
                sft.setdefault("tool_call_count", tool_call_count)
                sft.update(loads_exactly(fields))
                if route == "short_sft":
                    files.add(f"{split}.jsonl", sft)
                    files.add(SYSTEM_TOOLS_ARTIFACTS[f"{split}_system_tools"], tools_in_system_message(sft))
                else:
                    files.add("long_holdout.jsonl", {**sft, **holdout_fields})
        for batch in _batches(con, perception):
            for split, example_text, fields_text in zip(*_lists(batch)):
                example = loads_exactly(example_text)
                example.update(loads_exactly(fields_text))
                files.add(f"perception.{split}.jsonl", example)
        for batch in _batches(con, f"SELECT {excluded} FROM (SELECT * FROM excluded_episodes ORDER BY episode_id)"):
            files.add_lines("excluded_episode_metadata.jsonl", batch.column(0), EXCLUDED_METADATA_KEYS)
        for batch in _batches(con, action_only, [settings.accepted_release_import]):
            for text in batch.column(0).to_pylist():
                files.add_json("action_only.jsonl", text)
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
        **{key: summary[key] for key in SUMMARY_COUNTS},
        # Not in seed 002: excluded candidates by their decisive reason (excluded_episodes.main_reason).
        "excluded_reason_counts": {
            r["main_reason"]: r["episodes"]
            for r in _select(con, "SELECT main_reason, count(*) AS episodes FROM excluded_episodes GROUP BY ALL ORDER BY episodes DESC, main_reason")
        },
        "example_counts": {split: summary["example_counts"][split] for split in SPLITS},
        "perception_example_counts": {split: summary["perception_example_counts"][split] for split in SPLITS},
        "artifacts": {**ARTIFACTS, **SYSTEM_TOOLS_ARTIFACTS},
    }
    if files.records is not None:  # Not in seed 002: `--format parquet`'s copies, by the same keys
        manifest["parquet_artifacts"] = {
            key: name.removesuffix(".jsonl") + ".parquet" for key, name in manifest["artifacts"].items() if name in files.records
        }
    write_json(out_dir / "manifest.json", manifest)
    return manifest, written
