"""A connection on which the sql/70_dataset views describe one dataset export.

The views read their options and native inputs from temporary tables; this module fills
them (export_settings, export_sources, export_root_input; native_candidate_input from the native_candidates
view; native_record_input from eviscene.exports.trajectories) and then computes every
dataset view once into a temporary table, in dependency order, or (a staging view) into the
export_snapshot table the decision views read. No dataset rule lives here.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from eviscene.exports.trajectories import VIEWS_READ, perception_records, trace_texts, trajectory_sft_records
from eviscene.log import EventLog
from eviscene.rules.canonical import canonical_json
from eviscene.store.columns import int_column, string_column
from eviscene.rules.dataset_split import SHORT_TRAJECTORY_MAX_TOKENS, SPLIT_SEED, TRAIN_RATIO, VALIDATION_RATIO
from eviscene.views import (
    KEPT_AS_VIEWS, apply_views, execute_definition, narrow_to_runs, register_functions_named, remove_functions, still_read,
    view_definitions, views_needed_by, widen_to_log,
)

DATASET_FOLDER = "sql/70_dataset/"
# Computed per run by the exporter (native_candidate_input), never materialized whole.
_NOT_MATERIALIZED = {"native_candidates"}
# Left as views: each is read once by a view computed after it, or its readers each read
# their own part (imported_rows: one file kind each), so a table would only hold a copy
# (imported_rows and dataset_rows held ~100 MiB of JSONL lines and SFT records each at 100k).
_READ_THROUGH = {"imported_rows", "imported_documents", "trace_runtime_ids", "teacher_quality", "dataset_candidates", "dataset_rows"}
# What a native run's candidates and records are computed from.
_NATIVE_READS = f"native_candidates {VIEWS_READ}"
# The split seed when none is given: sha256(seed:group_id) places each group. Stated here
# only; sql/70_dataset/dataset_settings.sql's default row (for `eviscene sql`) is checked
# against ExportSettings() by a test.
@dataclass(frozen=True)
class ExportSettings:
    """The export's options as the views read them (one row of export_settings)."""

    seed: str = SPLIT_SEED
    train_ratio: float = TRAIN_RATIO
    validation_ratio: float = VALIDATION_RATIO
    short_max_tokens: int = SHORT_TRAJECTORY_MAX_TOKENS
    frozen: bool = False
    minimum_accepted_cases: int | None = None
    require_all_validation_cases: bool = True
    one_rollout_per_case: bool = False
    allow_training_prohibited: bool = False
    case_split_import: str | None = None
    eligibility_import: str | None = None
    semantic_import: str | None = None
    accepted_release_import: str | None = None
    # Candidate sources in the user's order: native run ids and import ids.
    sources: tuple[str, ...] = field(default_factory=tuple)
    native_runs: tuple[str, ...] = field(default_factory=tuple)
    # (import id, path) of each source the export was given by path: its files are named there.
    source_roots: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        return {name: (list(value) if isinstance(value, tuple) else value) for name, value in self.__dict__.items()}

    @property
    def streams_read(self) -> list[str]:
        """Every stream of the log the export reads: its sources and the imports that decide them."""
        imports = (self.case_split_import, self.eligibility_import, self.semantic_import, self.accepted_release_import)
        return sorted({*self.sources, *(i for i in imports if i is not None)})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ExportSettings":
        known = {k: (tuple(v) if isinstance(v, list) else v) for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


def source_heads(con: duckdb.DuckDBPyConnection, sources: Sequence[str]) -> dict[str, list[Any]]:
    """Each source's chain head in `con`'s snapshot, `{run_id: [last seq, its hash]}`: what an
    export read, recorded with it so that a replay can tell whether a source has changed since."""
    found = con.execute(
        "SELECT run_id, max(seq), arg_max(hash, seq) FROM events WHERE list_contains(?, run_id) GROUP BY run_id ORDER BY run_id",
        [list(sources)],
    ).fetchall()
    return {run_id: [seq, head] for run_id, seq, head in found}


def _create_inputs(con: duckdb.DuckDBPyConnection, settings: ExportSettings) -> None:
    con.execute(
        """
        CREATE TEMP TABLE export_settings AS SELECT
            ?::VARCHAR AS seed, ?::DOUBLE AS train_ratio, ?::DOUBLE AS validation_ratio, ?::BIGINT AS short_max_tokens,
            ?::BOOLEAN AS frozen, ?::BIGINT AS minimum_accepted_cases, ?::BOOLEAN AS require_all_validation_cases,
            ?::BOOLEAN AS one_rollout_per_case, ?::BOOLEAN AS allow_training_prohibited, ?::VARCHAR AS case_split_import, ?::VARCHAR AS eligibility_import, ?::VARCHAR AS semantic_import,
            ?::VARCHAR AS accepted_release_import
        """,
        [
            settings.seed, settings.train_ratio, settings.validation_ratio, settings.short_max_tokens, settings.frozen,
            settings.minimum_accepted_cases, settings.require_all_validation_cases, settings.one_rollout_per_case,
            settings.allow_training_prohibited, settings.case_split_import,
            settings.eligibility_import, settings.semantic_import, settings.accepted_release_import,
        ],
    )
    con.execute("CREATE TEMP TABLE export_sources (source_id VARCHAR, position INTEGER)")
    if settings.sources:
        con.executemany("INSERT INTO export_sources VALUES (?, ?)", [[s, i] for i, s in enumerate(settings.sources, start=1)])
    con.execute("CREATE TEMP TABLE export_root_input (import_id VARCHAR, root VARCHAR)")
    if settings.source_roots:
        con.executemany("INSERT INTO export_root_input VALUES (?, ?)", [list(pair) for pair in settings.source_roots])


def _native_records(con: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table:
    """Traces (with the sha256 of the file `materialize` writes), SFT trajectories and
    perception examples of one native run, as eviscene.exports.trajectories builds them, with
    each example's line in the run's perception_trajectories.jsonl."""
    traces = {episode_id: b"".join(parts) for episode_id, parts in trace_texts(con, run_id)}
    # seed 002 takes process_reference_protocol_version from the run manifest's top level,
    # where seed 000 (and `materialize`) never write it: ""
    trajectories = {r["episode_id"]: canonical_json(r) for r in trajectory_sft_records(con, run_id, process_reference_protocol_version="")}
    perception = {r["episode_id"]: canonical_json(r) for r in perception_records(con, run_id)}
    episodes = sorted(traces)
    # columns built from buffers: `pa.table` of Python lists imports pandas where it is installed
    columns = {
        "run_id": [run_id] * len(episodes),
        "episode_id": episodes,
        "trace": [traces[e] for e in episodes],
        "trace_sha256": [hashlib.sha256(traces[e]).hexdigest() for e in episodes],
        "trajectory": [trajectories.get(e) for e in episodes],
        "perception": [perception.get(e) for e in episodes],
    }
    lines = {episode_id: line for line, episode_id in enumerate(perception, start=1)}
    return pa.Table.from_arrays(
        [*(string_column(values) for values in columns.values()), int_column([lines.get(e) for e in episodes], pa.int64())],
        names=[*columns, "perception_line"],
    )


def _native_inputs(con: duckdb.DuckDBPyConnection, run_ids: tuple[str, ...]) -> tuple[pa.Table, list[pa.Table]]:
    """The native runs' candidates (native_candidates) and records, computed with `events`
    narrowed to those runs and each view they read computed once; everything made for them is
    removed again, so that the dataset views are then created over the whole log."""
    narrow_to_runs(con, run_ids)
    try:
        apply_views(con, materialize=True, for_query=_NATIVE_READS)
        return con.sql("SELECT * FROM native_candidates").to_arrow_table(), [_native_records(con, run_id) for run_id in run_ids]
    finally:
        for definition in reversed(views_needed_by(_NATIVE_READS)):
            con.execute(f"DROP {'VIEW' if definition.name in KEPT_AS_VIEWS else 'TABLE'} IF EXISTS {definition.name}")
        widen_to_log(con)
        remove_functions(con)  # the dataset views register the functions they name again


def _fill_native(con: duckdb.DuckDBPyConnection, candidates: pa.Table, records: list[pa.Table]) -> None:
    con.register("native_candidates_batch", candidates)
    con.execute("INSERT INTO native_candidate_input BY NAME SELECT * FROM native_candidates_batch")
    con.unregister("native_candidates_batch")
    for batch in records:
        con.register("native_records_batch", batch)
        con.execute(
            "INSERT INTO native_record_input SELECT run_id, episode_id, trace::JSON, trace_sha256, trajectory::JSON, "
            "perception::JSON, perception_line FROM native_records_batch"
        )
        con.unregister("native_records_batch")


# A staging view's file also declares its snapshot table (the decision views read that).
_SNAPSHOT_TABLE = re.compile(r"CREATE TABLE IF NOT EXISTS export_snapshot\.(\w+)")
# The native runs' inputs: its file creates the tables the exporter fills.
_NATIVE_RECORDS = "native_dataset_records"


def _compute(con: duckdb.DuckDBPyConnection, dataset: str, native: tuple[pa.Table, list[pa.Table]] | None) -> None:
    """Create what the views in `dataset` read and compute each dataset view once, in
    dependency order: a temporary table of its rows, or for a staging view its export_snapshot
    table (the view then reads it); those in _READ_THROUGH stay views. A table's SQL binds once,
    over the tables below it (creating every view first, then each table, bound each twice: most
    of a small export's time). The native runs' inputs are filled once their tables exist."""
    definitions = views_needed_by(dataset)
    register_functions_named(con, dataset, definitions)
    snapshots = {name for definition in definitions for name in _SNAPSHOT_TABLE.findall(definition.sql)}
    for definition in definitions:
        name = definition.name
        computed = definition.path.startswith(DATASET_FOLDER) and name not in _NOT_MATERIALIZED and name not in _READ_THROUGH
        if computed and name not in snapshots and name != _NATIVE_RECORDS:
            execute_definition(con, definition, definition.table_sql)
            continue
        execute_definition(con, definition, definition.sql)
        if name == _NATIVE_RECORDS and native is not None:
            _fill_native(con, *native)
        if not computed:
            continue
        if name in snapshots:
            # computed once into its snapshot, which the view then reads (a second copy of
            # every trajectory record cost memory)
            con.execute(f"INSERT INTO export_snapshot.{name} BY NAME SELECT * FROM {name}")
            con.execute(f"DROP VIEW {name}")
            con.execute(f"CREATE TEMP VIEW {name} AS SELECT * FROM export_snapshot.{name}")
        else:
            con.execute(f"DROP VIEW {name}")
            execute_definition(con, definition, definition.table_sql)


def release_unread(con: duckdb.DuckDBPyConnection, files_read: str) -> None:
    """Drop the computed dataset tables (and snapshots) that the views named in `files_read`
    no longer need: once the decisions are made, the rows they were made from only hold
    memory (~100 MiB at 100k while the files are written). Views left in place over a
    dropped table fail loudly if read."""
    definitions = {d.name: d for d in view_definitions() if d.path.startswith(DATASET_FOLDER)}
    snapshots = {
        row[0] for row in con.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'export_snapshot'").fetchall()
    }
    needed = still_read(definitions, files_read.split(), _READ_THROUGH)
    for name in definitions:
        if name in needed or name in _READ_THROUGH or name in _NOT_MATERIALIZED:
            continue
        if name in snapshots:
            con.execute(f"DROP VIEW {name}")
            con.execute(f"DROP TABLE export_snapshot.{name}")
        else:
            con.execute(f"DROP TABLE {name}")


def open_export(log: EventLog, settings: ExportSettings, con: duckdb.DuckDBPyConnection | None = None) -> duckdb.DuckDBPyConnection:
    """A snapshot connection whose dataset views (as tables) are the export `settings`
    describe: `con` (a snapshot without views, which its caller closes) when given, so what
    else the caller read of that snapshot describes the same state, else a new one."""
    owned = con is None
    con = log.connect(views=False) if con is None else con
    try:
        _create_inputs(con, settings)
        native = _native_inputs(con, settings.native_runs) if settings.native_runs else None
        dataset = " ".join(
            d.name for d in view_definitions() if d.path.startswith(DATASET_FOLDER) and d.name not in _NOT_MATERIALIZED
        )
        _compute(con, dataset, native)
    except BaseException:
        if owned:
            con.close()
        raise
    return con
