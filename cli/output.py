"""One set of writers for every command's tabular output: --format table|csv|json|jsonl."""

from __future__ import annotations

import csv
import io
import json
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import click
import pyarrow as pa

from eviscene.store.chain import format_ts

FORMATS = ("table", "csv", "json", "jsonl")

format_option = click.option(
    "--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True, help="Output format."
)


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return format_ts(value) if value.tzinfo else value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _cell(value: Any) -> str:
    value = _plain(value)
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if isinstance(value, float):
        return repr(value)
    return str(value)


def render(table: pa.Table, fmt: str, *, max_width: int = 60) -> str:
    rows = table.to_pylist()
    names = table.column_names
    if fmt == "json":
        return json.dumps([_plain(r) for r in rows], ensure_ascii=False, indent=2) + "\n"
    if fmt == "jsonl":
        return "".join(json.dumps(_plain(r), ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows)
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(names)
        writer.writerows([[_cell(r[n]) for n in names] for r in rows])
        return buffer.getvalue()
    cells = [[_clip(_cell(r[n]), max_width) for n in names] for r in rows]
    widths = [max([len(n)] + [len(row[i]) for row in cells]) for i, n in enumerate(names)]
    lines = ["  ".join(n.ljust(w) for n, w in zip(names, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    return "\n".join(lines) + "\n"


def _clip(text: str, width: int) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def emit(table: pa.Table, fmt: str) -> None:
    click.echo(render(table, fmt), nl=False)
