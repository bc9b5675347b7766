"""`eviscene materialize`: a run's views written out as the seed runner's run directory.

Every file is a view (or the run's events, for traces) ordered by a total key and written
with the one canonical serializer, so the same log gives byte-identical files; an unfinished
episode's stand-in rows hold the seed's keys alone (STAND_IN_KEYS).
"""

from __future__ import annotations

import json
import os
from collections import deque
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import islice
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from eviscene.errors import EvisceneError, no_run_error
from eviscene.exports.staging import staged_directory
from eviscene.exports.canonical_sql import column_sql, object_sql, register_functions, row_sql
from eviscene.exports.serialize import rows, write_json, write_jsonl, write_text_column
from eviscene.rules.canonical import canonical_json
from eviscene.rules.commands import command_line
from eviscene.rules.paths import PathEscapeError, resolve_inside
from eviscene.rules.traces import safe_trace_filename
from eviscene.exports.trajectories import (
    EPISODE_ORDER, TRACE_VIEWS_READ, VIEWS_READ, perception_records, trace_texts, trajectory_sft_records,
)
from eviscene.log import EventLog
from eviscene.store.layout import check_not_the_log, run_folder
from eviscene.store.locks import lock_holder
from eviscene.store.verify import intact_heads
from eviscene.views import drop_tables_unread, narrow_to_runs, sql_text

_TRACE_CHUNK = 256
_TRACES_IN_FLIGHT = 8

# file stem -> (view, ORDER BY); every view row carries run_id and, except predictions, episode_id.
TABULAR_FILES: dict[str, tuple[str, str]] = {
    "predictions": ("predictions", EPISODE_ORDER),
    "episode_predictions": ("episode_predictions", EPISODE_ORDER),
    "run_results": ("run_results", EPISODE_ORDER),
    "process_metrics": ("process_metrics", EPISODE_ORDER),
    "reference_chain_metrics": ("reference_chain_metrics", EPISODE_ORDER),
    "trajectory_scores": ("trajectory_scores", EPISODE_ORDER),
    "rollout_groups": ("rollout_groups", EPISODE_ORDER),
    "post_rollout_rewards": ("post_rollout_rewards", EPISODE_ORDER),
}
# The seed's row in these files for an episode that never finished (seed 000 `_run_eval`,
# "canonical trace is missing") has these keys alone. The view's row has every column (NULL,
# or computed, where the seed has no key: for SQL); a JSONL file's row has the seed's keys
# only, as its readers go by which keys are present (seed 002 keys a trajectory_scores row
# without episode_id by its case_id, and reads one without training_exclusion_reasons as
# missing_training_quality_score). A Parquet file's rows all have its columns. Each value is
# the view's column's, save those in STAND_IN_VALUES.
STAND_IN_KEYS: dict[str, tuple[str, ...]] = {
    "process_metrics": ("schema_version", "case_id", "engineering_error", "runtime_verdict", "result_correct", "first_error"),
    "reference_chain_metrics": ("schema_version", "case_id", "engineering_error", "error", "metrics"),
    "trajectory_scores": ("schema_version", "case_id", "components", "total"),
    "rollout_groups": (
        "schema_version", "prompt_group_id", "case_id", "episode_id", "rollout_index", "group_size", "sampling_seed",
        "policy_revision", "trace_path", "training_prohibited", "training_eligible", "sft_structured_eligibility_required",
    ),
    "post_rollout_rewards": (
        "schema_version", "prompt_group_id", "case_id", "episode_id", "classification_correct", "fatal_engineering_error",
        "strict_trace_audit_pass", "training_prohibited", "step_ids", "process_components",
    ),
}
# A finished episode of a reviewed scoring package (ifv-scoring-gold-v1): seed 000's
# reference_chain_metrics row says the reference protocol does not apply, with these keys alone.
NOT_APPLICABLE_KEYS: dict[str, tuple[str, ...]] = {
    "reference_chain_metrics": ("schema_version", "case_id", "applicable", "reason", "episode_id", "prompt_group_id"),
}
# (file stem, key) -> the seed's JSON text: no components is {} to the seed, NULL in the view
STAND_IN_VALUES: dict[tuple[str, str], str] = {("post_rollout_rewards", "process_components"): "{}"}
FORMATS = ("jsonl", "parquet")
RECORD_STEMS = (*TABULAR_FILES, "trajectory_sft", "perception_trajectories")
RUN_DIRECTORY_NAMES = frozenset(
    {f"{stem}.{extension}" for stem in RECORD_STEMS for extension in FORMATS} | {"summary.json", "run_manifest.json", "traces"}
)
"""Every name a run directory's top level may hold (in either format): what replacing one may delete."""
MANIFEST_VIEWS_READ = "episodes run_summary runs"  # run_manifest's (and summary.json's)
RUN_DIR_VIEWS = (
    *(view for view, _ in TABULAR_FILES.values()),
    *MANIFEST_VIEWS_READ.split(), *VIEWS_READ.split(),
)


def _query(view: str, order: str, select: str = "v.* EXCLUDE (run_id)") -> str:
    join = (
        # a case's prediction is its rollout 0's, in that episode's place
        "JOIN episodes e ON e.run_id = v.run_id AND e.case_id = v.case_id AND e.rollout_index = 0"
        if view == "predictions" else "JOIN episodes e USING (run_id, episode_id)"
    )
    return f"SELECT {select} FROM {view} v {join} WHERE v.run_id = $run_id ORDER BY {order}"


def _columns(con, view: str) -> dict[str, Any]:
    """A file's columns (the view's but run_id) and their DuckDB types."""
    relation = con.sql(f"SELECT * EXCLUDE (run_id) FROM {view} LIMIT 0")
    return dict(zip(relation.columns, relation.types))


def _line_sql(stem: str, columns: dict[str, Any]) -> str:
    """SQL: a view row's JSONL line in the file `stem` (the view `v` joined to `episodes e`):
    the row's columns, or for an unfinished episode's stand-in row, or a row that does not
    apply, the seed's keys alone."""
    row = row_sql(columns, "v")
    if stem in NOT_APPLICABLE_KEYS:
        not_applicable = object_sql({key: column_sql("v", key, columns[key]) for key in NOT_APPLICABLE_KEYS[stem]})
        row = f"CASE WHEN v.applicable THEN {row} ELSE {not_applicable} END"
    if stem in STAND_IN_KEYS:
        stand_in = object_sql({
            key: sql_text(STAND_IN_VALUES[stem, key]) if (stem, key) in STAND_IN_VALUES else column_sql("v", key, columns[key])
            for key in STAND_IN_KEYS[stem]
        })
        row = f"CASE WHEN e.finished THEN {row} ELSE {stand_in} END"
    return f"concat({row}, chr(10))"


def _known_run(log: EventLog, run_id: str) -> dict[str, Any]:
    found = log.sql("SELECT manifest::VARCHAR AS manifest FROM run_manifests WHERE run_id = ?", [run_id]).to_pylist()
    if not found:
        raise no_run_error(run_id, log.path, log.sql("SELECT run_id FROM run_manifests")["run_id"].to_pylist())
    return json.loads(found[0]["manifest"])


def materialize_run(
    log: EventLog, run_id: str, out_dir: str | os.PathLike[str], *, fmt: str = "jsonl", replace: bool = False, unfinished_as_errors: bool = False
) -> dict[str, int]:
    """Write the run directory (whole, or not at all: see `staged_directory`); returns rows
    written per file. An imported run directory is written back as it was imported, file
    for file (files written per top-level name). `replace`: a folder at `out_dir` (one the
    caller knows may go) is replaced once the new one is whole, else it must be new or empty.
    A run with unfinished episodes (stopped, killed or still running), or a sharded run with
    shards not merged into this log, is refused, unless `unfinished_as_errors`: its files
    would show each unfinished episode as an `error` row, and hold no row of a missing shard."""
    if fmt not in FORMATS:
        raise EvisceneError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    out_dir = Path(out_dir)
    check_not_the_log("run directory", out_dir, log.path, output_folder="replaced" if replace else "new")
    intact_heads(log.path, [run_id])  # its events and files as recorded, or no directory
    imported = _imported_files(log, run_id)
    if imported:
        if fmt != "jsonl":
            raise EvisceneError(f"{run_id} is an imported run directory: it is written back as imported, without --format")
        with staged_directory(out_dir, replace=replace) as staging:
            return _write_imported(staging, imported)
    started = _known_run(log, run_id)
    if not unfinished_as_errors:
        _, unfinished = log.run_standing(run_id)
        writing = lock_holder(run_folder(log.path, run_id) / "writer.lock") if unfinished else None
        if writing:  # a resume would be refused: the run is not stopped, it is going on
            raise EvisceneError(
                f"run {run_id} is still being written by {writing} ({unfinished} episode(s) to go): materialize it when it "
                "ends (--unfinished-as-errors writes them as error rows now)"
            )
        if unfinished:
            raise EvisceneError(
                f"run {run_id} has {unfinished} unfinished episode(s): `{log.resume_line(run_id)}` finishes them "
                "(--unfinished-as-errors writes them as error rows now)"
            )
        if missing := shards_not_merged(log, run_id):  # the rest of its cases ran in other logs
            raise EvisceneError(
                f"run {run_id} is incomplete: {missing}; `{command_line('log', 'merge', log=log.path)}` the missing shards' logs "
                "into this one, then materialize it (--unfinished-as-errors writes the shards it holds now)"
            )
    with staged_directory(out_dir, replace=replace) as staging:
        return _write_run_dir(log, run_id, staging, started, fmt)


def shards_not_merged(log: EventLog, run_id: str) -> str:
    """Which shards that select cases a sharded run lacks in this log (`run_shards`), as a
    clause: `shard 2 of its 3 is not in this log`; "" for a run that is whole here."""
    found = log.sql("SELECT shard_count, shards_unmerged FROM run_shards WHERE run_id = ?", [run_id]).to_pylist()
    missing = found[0]["shards_unmerged"] if found else []
    if not missing:
        return ""
    count = found[0]["shard_count"]
    if len(missing) == 1:
        return f"shard {missing[0]} of its {count} is not in this log"
    if len(missing) <= 5:
        return f"shards {', '.join(map(str, missing[:-1]))} and {missing[-1]} of its {count} are not in this log"
    return f"shards {', '.join(map(str, missing[:5]))}, … ({len(missing)} of its {count}) are not in this log"


def _write_run_dir(log: EventLog, run_id: str, out_dir: Path, started: dict[str, Any], fmt: str) -> dict[str, int]:
    written: dict[str, int] = {}
    # Only the views the run directory reads, each computed once, over the run's events only.
    con = log.connect(views=False, materialize=True)  # materialize: its memory limit, spilling to disk
    try:
        narrow_to_runs(con, (run_id,))
        log.add_views(con, materialize=True, for_query=" ".join(RUN_DIR_VIEWS), drop_unnamed=True)
        register_functions(con)  # canonical_json itself, for the few values row_sql leaves to it
        for stem, (view, order) in TABULAR_FILES.items():
            if fmt == "parquet":
                table = con.sql(_query(view, order), params={"run_id": run_id}).to_arrow_table()
                pq.write_table(table, out_dir / f"{stem}.parquet", compression="zstd")
                written[f"{stem}.parquet"] = table.num_rows
            else:  # each row's line written by DuckDB: the bytes canonical_json writes of its dict
                lines = con.sql(_query(view, order, _line_sql(stem, _columns(con, view))), params={"run_id": run_id})
                written[f"{stem}.jsonl"] = write_text_column(out_dir / f"{stem}.jsonl", lines)
        for stem, records in (
            ("trajectory_sft", trajectory_sft_records(con, run_id)),
            ("perception_trajectories", perception_records(con, run_id)),
        ):
            if fmt == "parquet":
                lines = [canonical_json(r) for r in records]
                pq.write_table(pa.table({"record": lines}), out_dir / f"{stem}.parquet")
                written[f"{stem}.parquet"] = len(lines)
            else:
                written[f"{stem}.jsonl"] = write_jsonl(out_dir / f"{stem}.jsonl", records)
        summary = rows(con.sql("SELECT * FROM run_summary WHERE run_id = ?", params=[run_id]).to_arrow_table())
        write_json(out_dir / "summary.json", summary[0] if summary else {"run_id": run_id, "num_samples": 0})
        # the tables only the files above read hold ~400 MiB of DuckDB's memory limit at 100k
        # episodes: the trace queries would evict and read back the log's blocks instead
        drop_tables_unread(con, f"{TRACE_VIEWS_READ} {MANIFEST_VIEWS_READ}".split())
        written["traces/"] = _write_traces(out_dir / "traces", trace_texts(con, run_id))
        write_json(out_dir / "run_manifest.json", run_manifest(con, run_id, started, fmt))
    finally:
        con.close()
    return written


def _imported_files(log: EventLog, run_id: str) -> list[dict[str, Any]]:
    """An imported run directory's files (relative path, bytes); none for a native run."""
    return log.sql(
        "SELECT f.relative_path, b.content FROM imported_runs r JOIN imported_files f ON f.import_id = r.run_id "
        "JOIN blobs b ON b.sha256 = f.blob_sha256 WHERE r.run_id = ? ORDER BY f.relative_path",
        [run_id],
    ).to_pylist()


def _write_imported(out_dir: Path, files: list[dict[str, Any]]) -> dict[str, int]:
    """Each imported file's bytes back at its relative path: the directory as it was imported.
    Returns what a native run's writing returns: rows per JSONL file, files per folder (and 1
    for any other file)."""
    root = out_dir.resolve()
    written: dict[str, int] = {}
    for item in files:
        try:
            target = resolve_inside(root, item["relative_path"], root_name="output directory")
        except PathEscapeError as exc:
            raise EvisceneError(f"imported file {exc}") from None
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(item["content"])
        name, _, inner = item["relative_path"].partition("/")
        rows = sum(1 for line in item["content"].splitlines() if line.strip()) if name.endswith(".jsonl") and not inner else 1
        key = f"{name}/" if inner else name
        written[key] = written.get(key, 0) + rows
    return written


def _write_traces(folder: Path, traces: Iterable[tuple[str, tuple[memoryview, ...]]]) -> int:
    """One file per episode in a new folder, each the concatenation of its parts. Files are
    written in chunks on one thread beside the queries, with at most `_TRACES_IN_FLIGHT`
    chunks pending: creating a file is the kernel's work, and more threads creating files in
    one folder only contend for it (100k files: ~11 s of system CPU on four threads, ~8 s on one)."""
    folder.mkdir()
    root = str(folder)

    def write(chunk: list[tuple[str, tuple[memoryview, ...]]]) -> None:
        for episode_id, parts in chunk:
            name = safe_trace_filename(episode_id)
            try:  # the folder is new: a file there is another episode's, whose id maps to the same name
                fd = os.open(os.path.join(root, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            except FileExistsError:
                raise EvisceneError(
                    f"episode {episode_id!r} and another episode of the run both have the trace file traces/{name} "
                    "(their ids differ only in characters a file name cannot hold); one would overwrite the other"
                ) from None
            try:
                for part in parts:
                    while part:
                        part = part[os.write(fd, part):]
            finally:
                os.close(fd)

    written = 0
    pending: deque[Future[None]] = deque()
    with ThreadPoolExecutor(max_workers=1) as pool:
        traces = iter(traces)
        while chunk := list(islice(traces, _TRACE_CHUNK)):
            if len(pending) >= _TRACES_IN_FLIGHT:
                pending.popleft().result()  # surfaces the first failed write
            pending.append(pool.submit(write, chunk))
            written += len(chunk)
        for write_done in pending:
            write_done.result()
    return written


def run_manifest(con, run_id: str, started: dict[str, Any], fmt: str) -> dict[str, Any]:
    """The seed's run_manifest.json: run.started's blocks (merged shards: the lowest shard's,
    with the run's sample and episode counts and no shard index), the run's status over every episode
    (the `runs` view; a crashed run's error with it), the gold descriptor and the artifact
    file names."""
    finished = _first(con.execute(
        # the last to finish, as the `runs` view's status reads it (by time: merged shards are renumbered)
        "SELECT payload::VARCHAR FROM events WHERE run_id = ? AND type = 'run.finished' ORDER BY ts DESC, seq DESC LIMIT 1", [run_id]
    ))
    gold = _first(con.execute(
        "SELECT payload->>'path', payload->>'sha256' FROM events WHERE run_id = ? AND type = 'artifact.imported' "
        "AND payload->>'kind' = 'evaluation_gold' ORDER BY seq DESC LIMIT 1",
        [run_id],
    ))
    counts = _first(con.execute(
        "SELECT count(DISTINCT e.case_id), count(*), any_value(s.num_errors) "
        "FROM episodes e JOIN run_summary s USING (run_id) WHERE e.run_id = ?",
        [run_id],
    ))
    finished_payload = json.loads(finished[0]) if finished else None
    status = _first(con.execute("SELECT status FROM runs WHERE run_id = ?", [run_id]))
    benchmark = dict(started["benchmark"])
    benchmark.pop("process_reference_protocol_version", None)  # for the SFT rows (trajectories.py); seed 000's block has no such key
    shards = _first(con.execute(
        "SELECT count(*), sum(TRY_CAST(payload->'benchmark'->>'sample_count' AS BIGINT)), "
        "sum(TRY_CAST(payload->'benchmark'->>'episode_count' AS BIGINT)) FROM events WHERE run_id = ? AND type = 'run.started'",
        [run_id],
    ))
    if shards[0] > 1:  # merged shards: the run's counts, not its lowest shard's share (merge.PER_SHARD), and no one shard's index
        benchmark.update(sample_count=shards[1], episode_count=shards[2], shard_index=None)
    benchmark["evaluation_gold"] = {"path": gold[0], "sha256": gold[1]} if gold else None
    extension = "parquet" if fmt == "parquet" else "jsonl"
    manifest = {
        "schema_version": started["schema_version"],
        "run_id": run_id,
        # the `runs` view's status, not seed 000's "running": a run directory is written from
        # the log, so no writer is behind it (running_or_interrupted, incomplete: episodes unfinished or shards not merged)
        "status": status[0],
        "started_at": started["started_at"],
        "completed_at": finished_payload["completed_at"] if finished_payload else None,
        "git_commit": started["git_commit"],
        "benchmark": benchmark,
        "agent": started["agent"],
        "source_access_policy": started["source_access_policy"],
        "artifacts": {**{stem: f"{stem}.{extension}" for stem in RECORD_STEMS}, "summary": "summary.json", "traces": "traces/"},
        "result": {"num_samples": counts[0], "num_episodes": counts[1], "num_errors": counts[2]},
    }
    if finished_payload and finished_payload.get("status") == "failed":
        manifest["error"] = finished_payload.get("error", "")
    return manifest


def _first(result) -> tuple | None:
    found = result.fetchall()
    return found[0] if found else None
