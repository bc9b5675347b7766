"""The Episodes page's filter box: a user's SQL predicate, accepted only when it is one
read-only boolean expression.

The predicate is parsed by DuckDB itself (`json_serialize_sql`) inside a fixed
`SELECT * FROM episodes WHERE (…)` and the parse tree must equal the fixed query's
everywhere but the WHERE clause: a `;`, a second statement, a closing parenthesis that
smuggles in UNION/ORDER/LIMIT, a comment eating the wrapper, all change the tree or fail to
parse. Subqueries over the views are allowed (the joins); table functions (files), the
settings and variables, DuckDB's catalogs (what else the process has open) and functions
that build values of a size they are given are not. It then runs inside the read-only
snapshot, for FILTER_TIME_LIMIT_S at most."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import duckdb

from eviscene.errors import EvisceneError
from eviscene.store.snapshot import new_connection
from eviscene.viewer.images import walk_dicts

_WRAPPER = "SELECT * FROM episodes WHERE ({})"
# A predicate may join the views into a query that runs for hours (a cross join of `events`):
# past this it is interrupted, so a filter costs the viewer seconds at most.
FILTER_TIME_LIMIT_S = 5.0
_POSITION_FIELDS = {"query_location", "query_location_length"}
# Scalar functions that read the process's settings, variables, environment or catalog (which
# databases and schemas are open, the session's ids), beside every one DuckDB keeps in
# pg_catalog (`current_schemas`, `has_table_privilege`, `pg_sleep`…; asked of DuckDB).
_REFUSED_FUNCTIONS = frozenset({
    "current_setting", "getvariable", "getenv", "in_search_path", "current_catalog", "current_role", "current_user",
    "session_user", "user", "current_connection_id", "current_transaction_id", "current_query_id", "txid_current",
})
# Functions that build a value of the size an argument names (`range(0, 200000000)`,
# `repeat('x', 3000000000)`, `lpad('', n, 'x')`, a `printf` width, `bitstring('1', n)`), and a
# recursive CTE, which doubles a string each step: one call fills the machine's memory before
# the time limit can stop it (DuckDB checks an interrupt between chunks of rows, and its
# memory_limit does not bound such values). Not a proof: nested calls that each multiply
# their input (`replace`, `||` over subqueries) still grow a value, a factor per level.
_SIZED_FUNCTIONS = frozenset({
    "range", "generate_series", "repeat", "lpad", "rpad", "list_resize", "array_resize", "bar", "printf", "format",
    "bitstring", "bitstring_agg",
})
_PG_CATALOG_FUNCTIONS = "SELECT DISTINCT lower(function_name) FROM duckdb_functions() WHERE schema_name = 'pg_catalog'"
# DuckDB's own catalogs: these schemas, and by name in any schema every view DuckDB itself
# defines and every table function, which a FROM names without parentheses
# (duckdb_databases, pragma_database_list, duckdb_settings…: asked of DuckDB, so a newer
# version's are refused too).
_CATALOG_SCHEMAS = frozenset({"information_schema", "pg_catalog"})
_CATALOG_NAMES = """
SELECT lower(view_name) FROM duckdb_views() WHERE internal
UNION SELECT lower(function_name) FROM duckdb_functions() WHERE function_type IN ('table', 'table_macro')
"""


class PredicateError(EvisceneError):
    """A filter that is not one read-only SQL predicate."""


def _parse(con: duckdb.DuckDBPyConnection, sql: str) -> dict[str, Any]:
    return json.loads(con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0])


def _strip_positions(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_positions(v) for k, v in node.items() if k not in _POSITION_FIELDS}
    if isinstance(node, list):
        return [_strip_positions(v) for v in node]
    return node


def _is_catalog(table: dict[str, Any], catalogs: set[str]) -> bool:
    names = [str(table.get(key) or "").lower() for key in ("catalog_name", "schema_name", "table_name")]
    return bool(_CATALOG_SCHEMAS.intersection(names)) or names[2] in catalogs


def validate_predicate(predicate: str) -> str:
    """The predicate, unchanged, when it is one read-only expression; else PredicateError."""
    text = predicate.strip()
    if ";" in text:
        raise PredicateError("the filter is one SQL predicate: no ';', no statements")
    con = new_connection()
    try:
        parsed = _parse(con, _WRAPPER.format(text))
        if parsed.get("error"):
            raise PredicateError(f"the filter is not a SQL predicate: {parsed.get('error_message', 'syntax error')}")
        baseline = _parse(con, _WRAPPER.format("true"))
        catalogs = {name for (name,) in con.execute(_CATALOG_NAMES).fetchall()}
        refused_functions = _REFUSED_FUNCTIONS | {name for (name,) in con.execute(_PG_CATALOG_FUNCTIONS).fetchall()}
    finally:
        con.close()
    statements = parsed["statements"]
    if len(statements) != 1:
        raise PredicateError("the filter is one SQL predicate, not statements")
    node = _strip_positions(statements[0]["node"])
    expected = _strip_positions(baseline["statements"][0]["node"])
    where = node.pop("where_clause", None)
    expected.pop("where_clause", None)
    if node != expected or where is None:
        raise PredicateError("the filter is one SQL predicate over the episodes' columns, nothing around it")
    for part in walk_dicts(where):  # every node of the parse tree
        if part.get("type") == "TABLE_FUNCTION":
            raise PredicateError("the filter may read the views, not table functions (files, settings)")
        if part.get("class") == "FUNCTION" and str(part.get("function_name", "")).lower() in refused_functions:
            raise PredicateError(f"the filter may read the views, not settings, variables or catalogs ({part['function_name']})")
        if (part.get("class") == "FUNCTION" and str(part.get("function_name", "")).lower() in _SIZED_FUNCTIONS
                or part.get("type") == "RECURSIVE_CTE_NODE"):
            name = part.get("function_name") or "WITH RECURSIVE"
            raise PredicateError(f"the filter may not build values of a size it names, nor recurse ({name})")
        # SHOW, DESCRIBE and SUMMARIZE as a subquery's source: the catalog, or any table's columns
        if part.get("type") == "SHOW_REF" or (part.get("type") == "BASE_TABLE" and _is_catalog(part, catalogs)):
            raise PredicateError("the filter may read the views, not DuckDB's catalogs (settings, databases, schemas)")
    return text


@contextmanager
def filter_time_limit(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """The queries inside run FILTER_TIME_LIMIT_S at most: then `con` is interrupted (it stays
    usable) and PredicateError says so."""
    seconds = FILTER_TIME_LIMIT_S
    timer = threading.Timer(seconds, con.interrupt)
    timer.start()
    try:
        yield
    except duckdb.InterruptException:
        raise PredicateError(f"the filter took longer than {seconds:g} s") from None
    finally:
        timer.cancel()
