"""Numbered DDL migrations (schema/migrations/NNN_name.sql), applied in order at open."""

from __future__ import annotations

import re
from importlib import resources

import duckdb

_MIGRATION = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")


def migrations() -> list[tuple[int, str, str]]:
    folder = resources.files("eviscene.schema").joinpath("migrations")
    found = []
    for entry in folder.iterdir():
        match = _MIGRATION.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found)


def latest_version() -> int:
    return migrations()[-1][0]


def apply_migrations(con: duckdb.DuckDBPyConnection, catalog: str = "archive") -> int:
    """Bring the archive up to the newest schema; returns the schema version."""
    con.execute(f"USE {catalog}")
    try:
        con.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL)"
        )
        applied = {row[0] for row in con.execute("SELECT version FROM schema_migrations").fetchall()}
        for version, name, ddl in migrations():
            if version in applied:
                continue
            con.execute("BEGIN")
            con.execute(ddl)
            con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", [version, name])
            con.execute("COMMIT")
        return con.execute("SELECT max(version) FROM schema_migrations").fetchone()[0]
    finally:
        con.execute("USE memory")
