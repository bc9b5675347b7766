"""The Episodes page's filter box: a user's SQL predicate, accepted only when it is one
read-only boolean expression.

The predicate is parsed by DuckDB itself (`json_serialize_sql`) inside a fixed
`SELECT * FROM episodes WHERE (…)` and the parse tree must equal the fixed query's
everywhere but the WHERE clause: a `;`, a second statement, a closing parenthesis that
smuggles in UNION/ORDER/LIMIT, a comment eating the wrapper, all change the tree or fail to
parse. Subqueries over the views are allowed (the joins), table functions (files, settings)
are not. It then runs inside the read-only snapshot."""

from __future__ import annotations

import json
from typing import Any

import duckdb

from eviscene.errors import EvisceneError
from eviscene.store.snapshot import new_connection

_WRAPPER = "SELECT * FROM episodes WHERE ({})"
_POSITION_FIELDS = {"query_location", "query_location_length"}


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


def _has_table_function(node: Any) -> bool:
    if isinstance(node, dict):
        return node.get("type") == "TABLE_FUNCTION" or any(_has_table_function(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_table_function(v) for v in node)
    return False


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
    if _has_table_function(where):
        raise PredicateError("the filter may read the views, not table functions (files, settings)")
    return text
