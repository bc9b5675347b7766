"""The SQL views (sql/**/*.sql): applied in dependency order (a view after every view it
names; folder then file order otherwise), described by their header comments.

Each file starts with a header:
    -- view: <name>
    -- grain: one row per <thing>
    -- key: <column>[, <column>...]
    -- <one or more lines saying what the view means>
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from importlib import import_module, resources
from importlib.resources.abc import Traversable

import duckdb

from eviscene.rules import jsonl, python_text, stages
from eviscene.rules.runtime import mark_used, prune_unused, runtime_dir, write_replacing

_HEADER_FIELDS = ("view", "grain", "key")
# Part of the catalog cache's key: change it when what the cache holds changes.
_CATALOG_FORMAT = "view-catalog-v1"


@dataclass(frozen=True)
class ViewDefinition:
    name: str
    grain: str
    key: tuple[str, ...]
    meaning: str
    path: str
    sql: str
    reads: frozenset[str] = frozenset()  # the other views its SQL names

    @property
    def _header(self) -> str:
        return f"CREATE OR REPLACE VIEW {self.name} AS"  # every view file has it (a contract test checks)

    @property
    def select(self) -> str:
        """The SELECT the file creates its view as."""
        return self.sql.split(self._header, 1)[1].strip().removesuffix(";")

    @property
    def inputs_sql(self) -> str:
        """The statements before the view (the temporary tables an exporter fills, created
        empty where none does), or ""."""
        before = self.sql.split(self._header, 1)[0]
        return before if _LITERALS_AND_COMMENTS.sub("", before).strip() else ""

    @property
    def table_sql(self) -> str:
        """The file's SQL with the view made a temporary table, computed once."""
        return self.sql.replace(self._header, f"CREATE OR REPLACE TEMP TABLE {self.name} AS", 1)


def _walk(folder: Traversable, prefix: str = "") -> list[tuple[str, Traversable]]:
    found = []
    for entry in folder.iterdir():
        relative = f"{prefix}{entry.name}"
        if entry.is_dir():
            found += _walk(entry, relative + "/")
        elif entry.name.endswith(".sql"):
            found.append((relative, entry))
    return found


@functools.cache
def view_definitions() -> tuple[ViewDefinition, ...]:
    return tuple(_dependency_order(_read_definitions()))


def _cached_reads(texts: list[tuple[str, str]], names: set[str]) -> dict[str, frozenset[str]]:
    """Per view file, the other views its SQL names: finding them (without string literals
    and comments) is most of reading the catalog, so they are cached in the runtime
    directory under the sha256 of every file's path and text; the SQL itself is always
    read from the files."""
    digest = hashlib.sha256(_CATALOG_FORMAT.encode())
    for relative, text in texts:
        digest.update(f"\0{relative}\0{text}".encode())
    path = runtime_dir() / "view-catalog" / f"{digest.hexdigest()}.json"
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        if set(stored) == {relative for relative, _ in texts} and all(set(reads) <= names for reads in stored.values()):
            mark_used(path)
            return {relative: frozenset(reads) for relative, reads in stored.items()}
    except (OSError, ValueError, TypeError, AttributeError):  # none yet, or unreadable: find them
        pass
    found = {relative: frozenset(_names_in(_body(text), names)) for relative, text in texts}
    stored = json.dumps({relative: sorted(reads) for relative, reads in found.items()}).encode()
    write_replacing(path, lambda out: out.write(stored))  # unwritable: the next process finds them again
    prune_unused(path.parent)  # catalogs of code no longer run
    return found


_WORD = re.compile(r"\w+")


def _names_in(text: str, names: set[str]) -> set[str]:
    """The names (all lower case) `text` mentions as whole words, in any case, as SQL reads
    them (`FROM Episodes` reads `episodes`): one scan of the text, not a regex search per
    view name (that cost every CLI query half a second)."""
    return {word.lower() for word in _WORD.findall(text)} & names


# String literals and comments: a view named there ('tool_calls' as a JSON key, a gate
# kind) is not read, and binding it for nothing costs time.
_LITERALS_AND_COMMENTS = re.compile(r"'(?:[^']|'')*'|--[^\n]*")


def _body(sql: str) -> str:
    """A view's SQL after its name, without string literals and comments."""
    return _LITERALS_AND_COMMENTS.sub(" ", sql.split("AS", 1)[-1])


def views_needed_by(query: str) -> list[ViewDefinition]:
    """The views a query names, with everything they read, in creation order: binding a view
    costs time, so a query pays only for the views it uses."""
    definitions = view_definitions()
    names = {d.name for d in definitions}
    needed = _names_in(query, names)
    for definition in reversed(definitions):  # dependents come after their dependencies
        if definition.name in needed:
            needed |= definition.reads
    return [d for d in definitions if d.name in needed]


def _dependency_order(definitions: list[ViewDefinition]) -> list[ViewDefinition]:
    by_name = {d.name: d for d in definitions}
    ordered: list[ViewDefinition] = []
    placed: set[str] = set()

    def place(definition: ViewDefinition, trail: tuple[str, ...]) -> None:
        if definition.name in placed:
            return
        if definition.name in trail:
            raise ValueError(f"views reference each other in a cycle: {' -> '.join(trail + (definition.name,))}")
        for name, other in by_name.items():  # in file order, so the order stays as before
            if name != definition.name and name in definition.reads:
                place(other, trail + (definition.name,))
        placed.add(definition.name)
        ordered.append(definition)

    for definition in definitions:
        place(definition, ())
    return ordered


def _header_field(line: str) -> tuple[str, str] | None:
    """`-- view: runs` -> ("view", "runs"); None for a line of the meaning."""
    label, colon, value = line[2:].lstrip().partition(":")
    return (label, value.strip()) if colon and label in _HEADER_FIELDS and value.strip() else None


def _read_definitions() -> list[ViewDefinition]:
    texts = [(relative, entry.read_text(encoding="utf-8")) for relative, entry in sorted(_walk(resources.files("eviscene.sql")))]
    headers = []
    for relative, text in texts:
        fields: dict[str, str] = {}
        meaning: list[str] = []
        for line in text.splitlines():
            if not line.startswith("--"):
                break
            field = _header_field(line)
            if field:
                fields[field[0]] = field[1]
            else:
                meaning.append(line.lstrip("-").strip())
        if "view" not in fields:
            raise ValueError(f"sql/{relative} lacks its '-- view:' header")
        headers.append((relative, text, fields, meaning))
    names = {fields["view"] for _, _, fields, _ in headers}
    reads = _cached_reads(texts, names)
    return [
        ViewDefinition(
            name=fields["view"],
            grain=fields.get("grain", ""),
            key=tuple(k.strip() for k in fields.get("key", "").split(",") if k.strip()),
            meaning=" ".join(m for m in meaning if m),
            path=f"sql/{relative}",
            sql=text,
            reads=reads[relative] - {fields["view"]},
        )
        for relative, text, fields, meaning in headers
    ]


# name -> (module, function, parameter types, return type, NULLs passed to the function; without,
# a NULL argument gives NULL, as for a URL, which has no normalized form).
# A connection registers only the functions its views and query name: the rules' modules
# (pydantic for the source policy) and DuckDB's Python-function support (numpy) are loaded
# only then.
_FUNCTIONS: dict[str, tuple[str, str, tuple[str, ...], str, bool]] = {
    "normalize_url": ("eviscene.rules.urls", "normalize_url", ("VARCHAR",), "VARCHAR", False),
    "normalize_host": ("eviscene.rules.urls", "normalize_host", ("VARCHAR",), "VARCHAR", False),
    "url_host": ("eviscene.rules.urls", "url_host", ("VARCHAR",), "VARCHAR", False),
    "safe_trace_filename": ("eviscene.rules.traces", "safe_trace_filename", ("VARCHAR",), "VARCHAR", True),
    # trace_runtime_id_list(trace JSON) -> the runtime ids it mentions, sorted
    "trace_runtime_id_list": ("eviscene.rules.traces", "runtime_ids", ("VARCHAR",), "VARCHAR[]", False),
    "py_value_text": ("eviscene.rules.python_text", "py_value_text", ("VARCHAR",), "VARCHAR", True),
    # source_policy_block(policy file JSON, url, content_sha256) -> block reason or NULL
    "source_policy_block": (
        "eviscene.rules.source_policy", "policy_block_reason", ("VARCHAR", "VARCHAR", "VARCHAR"), "VARCHAR", True
    ),
    # cache_partition_name(cache_partition, policy_id) -> the partition a run's cached results live in
    "cache_partition_name": ("eviscene.rules.source_policy", "cache_partition_name", ("VARCHAR", "VARCHAR"), "VARCHAR", True),
    # json_ascii(text) -> json.dumps(text); NULL -> 'null', as Python's None
    "json_ascii": ("eviscene.rules.python_text", "json_ascii", ("VARCHAR",), "VARCHAR", True),
    # dataset_default(name) -> seed 002's split default as text (the SQL default row casts it)
    "dataset_default": ("eviscene.rules.dataset_split", "dataset_default", ("VARCHAR",), "VARCHAR", False),
    # py_mean_rounded(values, places) -> round(statistics.mean(values), places), 0.0 for none
    "py_mean_rounded": ("eviscene.rules.python_numbers", "mean_rounded", ("DOUBLE[]", "INTEGER"), "DOUBLE", False),
    # py_float_text(text) -> float(text), NULL where Python's float() refuses it
    "py_float_text": ("eviscene.rules.python_numbers", "float_text", ("VARCHAR",), "DOUBLE", True),
    # py_float_is_nan(text) -> whether float(text) is NaN (which py_float_text returns as NULL)
    "py_float_is_nan": ("eviscene.rules.python_numbers", "float_is_nan", ("VARCHAR",), "BOOLEAN", True),
    # verdict_correct(termination, verdict, gold label) -> never NULL
    "verdict_correct": ("eviscene.rules.verdicts", "verdict_correct", ("VARCHAR", "VARCHAR", "VARCHAR"), "BOOLEAN", True),
}

# name -> the macro's parameters and body: rules SQL reads as Python does (white space, JSONL lines).
_MACROS = {**python_text.SQL_MACROS, **jsonl.SQL_MACROS, **stages.SQL_MACROS}


def remove_functions(con: duckdb.DuckDBPyConnection) -> None:
    """Remove the rules' functions `con` has (to apply views to it again)."""
    for name in _FUNCTIONS:
        try:
            con.remove_function(name)
        except duckdb.InvalidInputException:  # not registered in this connection
            pass


def register_functions(con: duckdb.DuckDBPyConnection, names: set[str] | None = None) -> None:
    """SQL access to rules that live in Python once (`eviscene.rules`): URL normalization is
    shared by the tools, the source-access policy and the scoring views; the source-access
    policy's matcher by the tools and the trace audit; the tool-cache partition by the cache
    and its lookup; trace file names by the seed layout and the materialized run directory; a trace's runtime ids by the dataset views;
    verdict correctness by the metrics, the run report and run comparison; Python's `str()`
    and `json.dumps` of JSON values by the dataset views that reproduce the seed's hashes;
    seed 002's split defaults by the dataset settings' default row; Python's white space by
    every view that strips a text or skips a blank line, and which model calls are the
    policy's by the rollout views (SQL macros). All of them, or those in
    `names`."""
    for name, (module, function, parameters, returns, special_nulls) in _FUNCTIONS.items():
        if names is None or name in names:
            con.create_function(
                name, getattr(import_module(module), function), list(parameters), returns,
                **({"null_handling": "special"} if special_nulls else {}), side_effects=False,
            )
    for name, macro in _MACROS.items():
        if names is None or name in names:
            con.execute(f"CREATE OR REPLACE TEMP MACRO {name}{macro}")


# Views a materialized connection still reads through rather than copies: `steps` is every
# payload of the log behind a join (a temporary table of it held most of a 100k-episode
# run directory's memory), and the reads that use it scan only the columns they name.
KEPT_AS_VIEWS = frozenset({"steps"})


def apply_views(
    con: duckdb.DuckDBPyConnection,
    *,
    materialize: bool = False,
    for_query: str | None = None,
    provided: frozenset[str] = frozenset(),
    drop_unnamed: bool = False,
) -> None:
    """Create every view (or, given `for_query`, the views and functions it reads); with
    `materialize`, as temporary tables computed once each (for exports that read many views
    over one snapshot). Views named in `provided` are left out: the caller has put their rows
    in the connection under their names (the viewer's rows of a live run, kept across looks).
    With `materialize` and `drop_unnamed`, a table `for_query` does not name is dropped once
    every view that reads it is created (its memory then serves the rest, not the spill file)."""
    definitions = view_definitions() if for_query is None else views_needed_by(for_query)
    definitions = [d for d in definitions if d.name not in provided]
    if for_query is None:
        register_functions(con)
    else:
        register_functions_named(con, for_query, definitions)
    last_reader = _last_readers(definitions, _names_in(for_query or "", {d.name for d in definitions})) if drop_unnamed else {}
    for definition in definitions:
        sql = definition.sql
        if materialize and definition.name not in KEPT_AS_VIEWS:
            sql = definition.table_sql
        execute_definition(con, definition, sql)
        for name in [name for name, reader in last_reader.items() if reader == definition.name]:
            con.execute(f"DROP TABLE {name}")


def execute_definition(con: duckdb.DuckDBPyConnection, definition: ViewDefinition, sql: str) -> None:
    """Run a view file's SQL (`sql`: its text, or its table_sql); an error names the file."""
    try:
        con.execute(sql)
    except duckdb.Error as exc:
        raise RuntimeError(f"{definition.path}: {exc}") from exc


def still_read(definitions: dict[str, ViewDefinition], named: Iterable[str], kept_as_views: Collection[str]) -> set[str]:
    """The views in `named` and everything they read through views kept as views (`kept_as_views`:
    such a view reads its inputs when it is queried): what a connection must keep while the
    views in `named` are still to be read. Names outside `definitions` are left out."""
    needed: set[str] = set()
    pending = [name for name in named if name in definitions]
    while pending:
        name = pending.pop()
        if name not in needed:
            needed.add(name)
            if name in kept_as_views:
                pending += [read for read in definitions[name].reads if read in definitions]
    return needed


def drop_tables_unread(con: duckdb.DuckDBPyConnection, named: Iterable[str]) -> None:
    """Drop the views' temporary tables that the views in `named` no longer need (`still_read`
    through the views kept as views): their memory then serves what is still to be read."""
    definitions = {d.name: d for d in view_definitions()}
    needed = still_read(definitions, named, KEPT_AS_VIEWS)
    for (name,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall():
        if name in definitions and name not in needed:
            con.execute(f"DROP TABLE {name}")


def _last_readers(definitions: list[ViewDefinition], named: set[str]) -> dict[str, str]:
    """Temporary table -> the last view (in creation order) that reads it, for the tables
    still read neither by `named` nor by a view kept as a view."""
    kept = still_read({d.name: d for d in definitions}, named | KEPT_AS_VIEWS, KEPT_AS_VIEWS)
    last: dict[str, str] = {}
    for definition in definitions:
        for name in definition.reads:
            if name not in kept:
                last[name] = definition.name
    return last


def inline_views(con: duckdb.DuckDBPyConnection, query: str) -> str:
    """`query` with the views it reads as common table expressions (not materialized, so
    each is expanded where it is read, as a view is), and the functions they name
    registered on `con`. DuckDB binds a view when it is created and again in each query
    that reads it: a single query over a fresh snapshot (`eviscene runs`) binds them once
    this way (~30 ms of its CPU). For a query that does not itself start with WITH."""
    definitions = views_needed_by(query)
    register_functions_named(con, query, definitions)
    if not definitions:
        return query
    for definition in definitions:
        if definition.inputs_sql:
            execute_definition(con, definition, definition.inputs_sql)
    expressions = ",\n".join(f"{d.name} AS NOT MATERIALIZED (\n{d.select}\n)" for d in definitions)
    return f"WITH {expressions}\n{query}"


def register_functions_named(con: duckdb.DuckDBPyConnection, query: str, definitions: list[ViewDefinition]) -> None:
    """Register the functions and macros `query` and the `definitions` name."""
    register_functions(con, _names_in(" ".join([query, *(d.sql for d in definitions)]), {*_FUNCTIONS, *_MACROS}))


# ------------------------------------------------------------------- narrowed snapshots
# Events of some episodes lie anywhere in the log: they are read by seq ranges (a scan skips
# what lies outside them), apart where the gap is wider.
_SEQ_GAP = 100_000
_SEQ_RANGES_MAX = 32
# An episode's rollout group, from the events that schedule it (`episodes` reads the same).
_GROUP_MEMBERS_SQL = """
SELECT episode_id FROM events WHERE run_id = $run AND type = 'episode.scheduled' AND payload->>'prompt_group_id' = (
    SELECT payload->>'prompt_group_id' FROM events WHERE run_id = $run AND type = 'episode.scheduled' AND episode_id = $episode)
"""


# The columns of `events` the views read (none reads event_id or the chain's hashes, the
# largest columns after payload: a copy for the views leaves them out).
VIEWS_EVENT_COLUMNS = "seq, ts, run_id, episode_id, attempt, type, step, payload"


def copy_events(con: duckdb.DuckDBPyConnection, source: str, wanted: str, into: str, columns: str = "*") -> None:
    """The events of `source` that match `wanted` (over its episode_id and run_id), copied into
    the temporary table `into` (their `columns`): their seqs found first, then only the seq
    ranges around them read whole (a filter on episode_id alone read every payload of the log)."""
    seqs = [seq for (seq,) in con.execute(f"SELECT seq FROM {source} WHERE {wanted} ORDER BY seq").fetchall()]
    ranges = " UNION ALL ".join(f"SELECT {columns} FROM {source} WHERE seq BETWEEN {first} AND {last}" for first, last in _ranges(seqs))
    con.execute(f"CREATE TEMP TABLE {into} AS SELECT * FROM ({ranges or f'SELECT {columns} FROM {source} WHERE false'}) WHERE {wanted}")


def _ranges(seqs: list[int]) -> list[tuple[int, int]]:
    """Sorted `seqs` as at most _SEQ_RANGES_MAX ranges, split at the widest gaps over _SEQ_GAP."""
    gaps = sorted(range(1, len(seqs)), key=lambda i: seqs[i] - seqs[i - 1], reverse=True)[: _SEQ_RANGES_MAX - 1]
    splits = sorted(i for i in gaps if seqs[i] - seqs[i - 1] > _SEQ_GAP)
    bounds = [0, *splits, len(seqs)]
    return [(seqs[start], seqs[stop - 1]) for start, stop in zip(bounds, bounds[1:])]


def narrow_to_runs(con: duckdb.DuckDBPyConnection, run_ids: tuple[str, ...]) -> None:
    """`events` in `con` narrowed, before any view is created over it, to the events of
    `run_ids` (also named `run_events`; the whole log's stay readable as `log_events`): every
    view partitions by run, and a run's rows come from its own events (and blobs), so the
    views then compute those runs' rows only, whatever else the log holds."""
    con.execute("ALTER VIEW events RENAME TO log_events")
    con.execute(f"CREATE VIEW run_events AS SELECT * FROM log_events WHERE run_id IN ({', '.join(map(sql_text, run_ids))})")
    con.execute("CREATE VIEW events AS SELECT * FROM run_events")


def widen_to_log(con: duckdb.DuckDBPyConnection) -> None:
    """Undo `narrow_to_runs`: `events` is the whole log's again (drop the views made over the
    narrowed one first)."""
    con.execute("DROP VIEW events")
    con.execute("DROP VIEW run_events")
    con.execute("ALTER VIEW log_events RENAME TO events")


def narrow_to_group(con: duckdb.DuckDBPyConnection, run_id: str, episode_id: str) -> None:
    """`events` in `con` narrowed, before any view is created over it, to the events of the
    episode's rollout group (its statistics read every member) and the run's own: the rows of
    every per-episode view for those episodes come from them alone (and blobs). Copied once
    into a small table that every view then reads."""
    members = [e for (e,) in con.execute(_GROUP_MEMBERS_SQL, {"run": run_id, "episode": episode_id}).fetchall()]
    con.execute("ALTER VIEW events RENAME TO log_events")
    quoted = ", ".join(sql_text(e) for e in members)
    wanted = f"run_id = {sql_text(run_id)} AND (episode_id IS NULL" + (f" OR episode_id IN ({quoted}))" if members else ")")
    copy_events(con, "log_events", wanted, "events")


def sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def sql_name(name: str) -> str:
    """A column or table name quoted for SQL."""
    return '"' + name.replace('"', '""') + '"'
