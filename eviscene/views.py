"""The SQL views (sql/**/*.sql): applied in path order, described by their header comments.

Each file starts with a header:
    -- view: <name>
    -- grain: one row per <thing>
    -- key: <column>[, <column>...]
    -- <one or more lines saying what the view means>
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable

import duckdb

_HEADER = re.compile(r"^--\s*(view|grain|key):\s*(.+?)\s*$")


@dataclass(frozen=True)
class ViewDefinition:
    name: str
    grain: str
    key: tuple[str, ...]
    meaning: str
    path: str
    sql: str


def _walk(folder: Traversable, prefix: str = "") -> list[tuple[str, Traversable]]:
    found = []
    for entry in folder.iterdir():
        relative = f"{prefix}{entry.name}"
        if entry.is_dir():
            found += _walk(entry, relative + "/")
        elif entry.name.endswith(".sql"):
            found.append((relative, entry))
    return found


def view_definitions() -> list[ViewDefinition]:
    definitions = []
    for relative, entry in sorted(_walk(resources.files("eviscene.sql"))):
        text = entry.read_text(encoding="utf-8")
        fields: dict[str, str] = {}
        meaning: list[str] = []
        for line in text.splitlines():
            if not line.startswith("--"):
                break
            match = _HEADER.match(line)
            if match:
                fields[match.group(1)] = match.group(2)
            else:
                meaning.append(line.lstrip("-").strip())
        if "view" not in fields:
            raise ValueError(f"sql/{relative} lacks its '-- view:' header")
        definitions.append(
            ViewDefinition(
                name=fields["view"],
                grain=fields.get("grain", ""),
                key=tuple(k.strip() for k in fields.get("key", "").split(",") if k.strip()),
                meaning=" ".join(m for m in meaning if m),
                path=f"sql/{relative}",
                sql=text,
            )
        )
    return definitions


def apply_views(con: duckdb.DuckDBPyConnection) -> None:
    for definition in view_definitions():
        try:
            con.execute(definition.sql)
        except duckdb.Error as exc:
            raise RuntimeError(f"{definition.path}: {exc}") from exc
