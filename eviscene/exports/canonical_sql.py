"""canonical_json's very bytes, written by DuckDB: SQL expressions giving the text
`eviscene.rules.canonical.canonical_json` writes of a value, so a large export's lines are put
together in SQL, with no Python object per row (trace files, the run directory's tables).

DuckDB's to_json writes what orjson writes but for three cases, which go elsewhere:
- nine control characters it escapes in upper-case hex (`\\u001F` where orjson writes `\\u001f`):
  a string holding one goes through canonical_json itself (canonical_json_text);
- doubles outside 1e-5 <= |x| < 1e16, which it writes as 0.000001 and 10000000000000000.0 where
  orjson writes 1e-6 and 1e+16: they go through canonical_json too (canonical_json_number);
- NaN and infinities, which orjson writes as null.
A JSON value (`json_sql`) is written as canonical_json writes what orjson reads of it: null,
booleans and strings in SQL, anything else (objects, whose keys get sorted, and numbers) re-read
by canonical_json itself.
tests/exports/test_canonical_sql.py holds DuckDB and orjson to this, value by value.
"""

from __future__ import annotations

import duckdb
import orjson

from eviscene.rules.canonical import canonical_json
from eviscene.views import sql_name, sql_text

_UPPER_HEX_ESCAPES = r"[\x0b\x0e\x0f\x1a-\x1f]"
# Integers orjson writes (it refuses more than 64 bits) and DuckDB casts to the same digits.
_INTEGER_TYPES = {"boolean", "tinyint", "smallint", "integer", "bigint", "utinyint", "usmallint", "uinteger", "ubigint"}


def _canonical_json_of_json(text: str) -> str:
    return canonical_json(orjson.loads(text))


def register_functions(con: duckdb.DuckDBPyConnection) -> None:
    """canonical_json itself, for the values SQL cannot write as it does (once per connection)."""
    for name, function, kind in (
        ("canonical_json_text", canonical_json, "VARCHAR"),
        ("canonical_json_number", canonical_json, "DOUBLE"),
        ("canonical_json_of_json", _canonical_json_of_json, "VARCHAR"),
    ):
        try:
            con.create_function(name, function, [kind], "VARCHAR", side_effects=False)
        except duckdb.NotImplementedException:  # registered by an earlier export on this connection
            pass


def text_sql(expr: str) -> str:
    """SQL: the VARCHAR `expr` as canonical_json writes it (NULL as null)."""
    return (f"CASE WHEN {expr} IS NULL THEN 'null' WHEN regexp_matches({expr}, '{_UPPER_HEX_ESCAPES}') "
            f"THEN canonical_json_text({expr}) ELSE to_json({expr})::VARCHAR END")


def integer_sql(expr: str) -> str:
    """SQL: an integer or boolean `expr` as JSON (NULL as null)."""
    return f"coalesce({expr}::VARCHAR, 'null')"


def double_sql(expr: str) -> str:
    """SQL: a DOUBLE (or FLOAT, as the double Python reads) `expr` as canonical_json writes it."""
    value = f"({expr})::DOUBLE"
    return (f"CASE WHEN {value} IS NULL OR NOT isfinite({value}) THEN 'null' "
            f"WHEN {value} = 0 OR (abs({value}) >= 1e-5 AND abs({value}) < 1e16) THEN to_json({value})::VARCHAR "
            f"ELSE canonical_json_number({value}) END")


def json_sql(expr: str) -> str:
    """SQL: a JSON `expr` as canonical_json writes the value orjson reads from its text (NULL as null)."""
    kind, string = f"json_type({expr})", text_sql(f"({expr} ->> '$')")
    return (f"CASE WHEN {expr} IS NULL OR {kind} = 'NULL' THEN 'null' "
            f"WHEN {kind} = 'BOOLEAN' THEN CASE WHEN {expr}::BOOLEAN THEN 'true' ELSE 'false' END "
            f"WHEN {kind} = 'VARCHAR' THEN {string} ELSE canonical_json_of_json({expr}::VARCHAR) END")


def value_sql(expr: str, kind: duckdb.DuckDBPyType, depth: int = 0) -> str:
    """SQL: `expr`, of DuckDB type `kind`, as canonical_json writes the Python value DuckDB
    hands over for it (a struct as a dict, its keys sorted; a list; a JSON value as its text)."""
    if kind.id == "varchar":  # JSON too: Python reads its text
        return text_sql(expr)
    if kind.id in ("double", "float"):
        return double_sql(expr)
    if kind.id in _INTEGER_TYPES:
        return integer_sql(expr)
    if kind.id == "struct":
        fields = {name: value_sql(f"struct_extract({expr}, {sql_text(name)})", child, depth) for name, child in kind.children}
        return f"CASE WHEN ({expr}) IS NULL THEN 'null' ELSE {object_sql(fields)} END"
    if kind.id == "list" and str(kind.child) == "VARCHAR":  # to_json writes the list whole where no string needs Python
        return (f"CASE WHEN ({expr}) IS NULL THEN 'null' WHEN NOT regexp_matches(array_to_string({expr}, ''), '{_UPPER_HEX_ESCAPES}') "
                f"THEN to_json({expr})::VARCHAR ELSE {_each_item_sql(expr, kind, depth)} END")
    if kind.id == "list":
        return f"CASE WHEN ({expr}) IS NULL THEN 'null' ELSE {_each_item_sql(expr, kind, depth)} END"
    raise TypeError(f"no canonical JSON text in SQL for a {kind} value ({expr})")


def _each_item_sql(expr: str, kind: duckdb.DuckDBPyType, depth: int) -> str:
    """SQL: a list `expr` (not NULL) as a JSON array of its items' texts."""
    item = f"item{depth}"
    return f"concat('[', array_to_string(list_transform({expr}, lambda {item}: {value_sql(item, kind.child, depth + 1)}), ','), ']')"


def object_sql(members: dict[str, str]) -> str:
    """SQL: a JSON object of `members` (key -> SQL of its value's JSON text), keys sorted, as
    canonical_json writes it."""
    parts = []
    for key in sorted(members):
        parts += [sql_text(("," if parts else "{") + canonical_json(key) + ":"), members[key]]
    return f"concat({', '.join(parts) if parts else sql_text('{')}, '}}')"


def row_sql(columns: dict[str, duckdb.DuckDBPyType], table: str) -> str:
    """SQL: a row of `table`'s `columns` (name -> type) as canonical_json writes it: an object of
    its columns, keys sorted."""
    return object_sql({name: column_sql(table, name, kind) for name, kind in columns.items()})


def column_sql(table: str, name: str, kind: duckdb.DuckDBPyType) -> str:
    """SQL: `table`'s column `name`, of type `kind`, as canonical_json writes it; a JSON column
    embedded as stored (as orjson embeds a Fragment)."""
    column = f"{table}.{sql_name(name)}"
    return f"coalesce({column}::VARCHAR, 'null')" if str(kind) == "JSON" else value_sql(column, kind)
