"""One set of writers for every command's tabular output: --format table|csv|json|jsonl on
stdout, and --output FILE (.csv, .json, .jsonl, .parquet) for query results.

Rows arrive as a stream of tuples of Python values (a query's DuckDB rows, or Arrow batches
read into them) and leave as they arrive, so a result of any size prints in bounded memory;
a query printed as text never imports pyarrow (a third of `eviscene runs`'s start-up). csv,
json and jsonl stream row by row; the table format buffers only a preview (the first
`TABLE_PREVIEW_ROWS` rows) to size its columns, then streams every row with those widths: on
a terminal a wider cell wraps (unless the columns cannot fit even so); into a pipe or a file it
overflows (a line is a whole row).
"""

from __future__ import annotations

import csv
import functools
import json
import os
import re
import shutil
import sys
import tempfile
import textwrap
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import date, datetime, time, timezone
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence, TextIO
from uuid import UUID

import click
from click.core import ParameterSource

from eviscene.errors import EvisceneError, os_fault
from eviscene.rules.canonical import finite_or_null
from eviscene.rules.paths import special_file_kind
from eviscene.rules.timestamps import format_ts
from eviscene.store.layout import check_not_the_log

if TYPE_CHECKING:
    import pyarrow as pa

    from eviscene.store.log import QueryResult

FORMATS = ("table", "csv", "json", "jsonl")
OUTPUT_SUFFIXES = (".csv", ".json", ".jsonl", ".parquet")
TABLE_PREVIEW_ROWS = 1000
_COLUMN_GAP = "  "
_MIN_COLUMN_WIDTH = 8

def format_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """`--format table|csv|json|jsonl`, and `--table`, `--csv`, `--json`, `--jsonl` as its
    shorthands (sqlite-utils' spelling); two that disagree are a usage error."""

    @functools.wraps(command)  # keeps the options declared below this one
    def with_format(*args: Any, **kwargs: Any) -> Any:
        chosen = [name for name in FORMATS if kwargs.pop(f"format_{name}")]
        if chosen:
            ctx = click.get_current_context()
            named = ctx.get_parameter_source("fmt") is ParameterSource.COMMANDLINE
            asked = sorted({*chosen, *([kwargs["fmt"]] if named else [])})
            if len(asked) > 1:
                raise click.UsageError(f"choose one output format, not {' and '.join(asked)}")
            kwargs["fmt"] = chosen[0]
            ctx.set_parameter_source("fmt", ParameterSource.COMMANDLINE)  # as if --format named it (`sql --output` checks)
        return command(*args, **kwargs)

    options = [click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True, help="Output format.")]
    options += [click.option(f"--{name}", f"format_{name}", is_flag=True, help=f"Same as --format {name}.") for name in FORMATS]
    for option in reversed(options):
        with_format = option(with_format)
    return with_format


# One encoder for every row: json.dumps with options builds a new one per call.
_COMPACT_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_AS_IS = frozenset({str, int, bool, type(None)})


def _plain(value: Any, for_json: bool = False, nested: bool = False) -> Any:
    """`value` as JSON-like data; `nested`: inside a list or struct, which prints as JSON text."""
    if type(value) in _AS_IS:
        return value
    if type(value) is float:  # tables and CSV print `nan` and `inf`; JSON, and JSON text in a cell, has no such numbers
        return finite_or_null(value) if for_json or nested else value
    if isinstance(value, date):  # a datetime too
        if id(value) in _ROW_INFINITIES:
            return _ROW_INFINITIES[id(value)]
        return format_ts(value) if isinstance(value, datetime) and value.tzinfo else value.isoformat()
    if isinstance(value, time):
        return _timetz_text(value) if value.tzinfo else value.isoformat()
    if isinstance(value, Decimal):
        # HUGEINT (every sum() of integers) and DECIMAL(p, 0) arrive as Decimal: integers stay
        # integers; other decimals keep every digit (a double keeps ~16), a number in JSON.
        if value.as_tuple().exponent >= 0:
            return int(value)
        return _NUMBER_MARK + format(value, "f") if for_json or nested else format(value, "f")
    if type(value).__name__ == "MonthDayNano":  # an INTERVAL read from Arrow (pyarrow need not be loaded)
        return _interval_text(value.months, value.days, value.nanoseconds // 1000)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, dict):
        return {k: _plain(v, for_json, nested=True) for k, v in value.items()}
    # DuckDB hands fixed-size ARRAY values over as plain tuples.
    if isinstance(value, list) or type(value) is tuple:
        return [_plain(v, for_json, nested=True) for v in value]
    return value


# DuckDB's Python rows hand an infinite DATE or TIMESTAMP over as Python's own last or first
# date (clamped), as these very objects (a real 9999-12-31 is a new one): printed as the Arrow
# path prints them (`_INFINITIES`), not as a date that looks real.
_ROW_INFINITIES = {id(date.max): "infinity", id(datetime.max): "infinity", id(date.min): "-infinity", id(datetime.min): "-infinity"}


# A decimal's digits in JSON text are a number's: its string is marked so (a mark no text of the
# data can hold: random per process) and written without quotes (`_exact_numbers`).
_NUMBER_MARK = f"\ue000{os.urandom(8).hex()}:"
_MARKED_NUMBER = re.compile(f'"{re.escape(_NUMBER_MARK)}(-?[0-9.]+)"')


def _exact_numbers(json_text: str) -> str:
    return _MARKED_NUMBER.sub(r"\1", json_text) if _NUMBER_MARK in json_text else json_text


def _timetz_text(value: time) -> str:
    """A TIMETZ as DuckDB writes it (`12:00:00.5+05`), as a result read as Arrow has it (the
    store casts it to text there: Arrow's times hold no offset)."""
    text = _TIME_FRACTION_ZEROS.sub(r"\1", value.isoformat())
    return _WHOLE_HOUR_OFFSET.sub(r"\1", text)


_TIME_FRACTION_ZEROS = re.compile(r"(\.\d*[1-9])0+(?=[+-])")  # isoformat writes a fraction's six digits
_WHOLE_HOUR_OFFSET = re.compile(r"([+-]\d\d):00$")


def _interval_text(months: int, days: int, micros: int) -> str:
    """An INTERVAL as DuckDB writes it: `1 year 2 months 3 days 04:05:06.789`, `-00:00:01`,
    `00:00:00` for none. (Intervals arrive from Arrow: DuckDB's rows would make months days.)"""
    years, months = int(months / 12), months - int(months / 12) * 12  # both toward zero, as DuckDB
    words = [f"{n} {unit}{'' if abs(n) == 1 else 's'}" for n, unit in ((years, "year"), (months, "month"), (days, "day")) if n]
    if micros or not words:
        seconds, fraction = divmod(abs(micros), 1_000_000)
        clock = f"{'-' if micros < 0 else ''}{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        words.append(clock + (f".{fraction:06d}".rstrip("0") if fraction else ""))
    return " ".join(words)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return _exact_numbers(_COMPACT_JSON(value))
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _json_without_non_finite(text: str) -> Any:
    """A JSON column's value, in every format: DuckDB's JSON may hold NaN and Infinity, and a
    number past a double's range (`1e400`, which Python reads as inf): null there, as JSON holds them."""
    return json.loads(text, parse_constant=lambda _: None, parse_float=lambda number: finite_or_null(float(number)))


def _rows(names: list[str], rows: Iterable[Sequence[Any]], json_columns: frozenset[str], for_json: bool = False,
          ) -> Iterator[dict[str, Any]]:
    """Plain rows; JSON columns parsed so that they print as JSON values, not as strings
    holding JSON."""
    is_json = [name in json_columns for name in names]
    for values in rows:
        yield {
            name: (None if value is None else _json_without_non_finite(value)) if json_column else _plain(value, for_json)
            for name, value, json_column in zip(names, values, is_json)
        }


def _arrow_rows(batches: Iterable[pa.RecordBatch]) -> Iterator[tuple[Any, ...]]:
    """Arrow record batches as tuples of Python values, one batch in memory at a time."""
    for batch in batches:
        yield from zip(*(_arrow_values(column) for column in batch.columns))


def _arrow_values(column: pa.Array) -> list[Any]:
    try:
        return _python_values(column)
    except (OverflowError, ValueError):  # a date or time past Python's years 1-9999
        return [_python_value(column.slice(index, 1)) for index in range(len(column))]


def _python_values(column: pa.Array) -> list[Any]:
    import pyarrow as pa

    kind = column.type
    if pa.types.is_timestamp(kind) and kind.tz is not None:
        # Arrow holds UTC instants; reading them without the time zone skips pyarrow's
        # time-zone conversion, which imports pandas (a second of start-up for `runs`).
        naive = column.cast(pa.timestamp(kind.unit)).to_pylist()
        return [None if v is None else v.replace(tzinfo=timezone.utc) for v in naive]
    return column.to_pylist()


# DuckDB's infinite DATE and TIMESTAMP values, as the integers Arrow holds them in.
_INFINITIES = {2**31 - 1: "infinity", -(2**31 - 1): "-infinity", 2**63 - 1: "infinity", -(2**63 - 1): "-infinity"}


def _python_value(one: pa.Array) -> Any:
    """The value of a one-row column, as text where Python cannot hold it: DuckDB's
    `infinity`, or Arrow's rendering of a date past year 9999 (`20000-01-01`); in a list or a
    struct too (a map's values not)."""
    import pyarrow as pa

    try:
        return _python_values(one)[0]
    except (OverflowError, ValueError):
        pass
    kind = one.type
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        items = one[0].values
        return [_python_value(items.slice(index, 1)) for index in range(len(items))]
    if pa.types.is_struct(kind):
        return {field.name: _python_value(child) for field, child in zip(kind, one.flatten())}
    if pa.types.is_date32(kind) or pa.types.is_timestamp(kind):
        stored = one.view(pa.int32() if pa.types.is_date32(kind) else pa.int64())[0].as_py()
        if stored in _INFINITIES:
            return _INFINITIES[stored]
    try:
        return one.cast(pa.string())[0].as_py()
    except (pa.ArrowException, OverflowError, ValueError):
        raise EvisceneError(f"a {kind} value Python cannot hold (past year 9999?); cast that column to VARCHAR in the query") from None


def write_rows(
    names: list[str],
    values: Iterable[Sequence[Any]],
    fmt: str,
    out: TextIO,
    *,
    json_columns: frozenset[str] = frozenset(),
    width: int | None = None,
    terminal: bool = False,
) -> None:
    """`values` in `fmt` on `out`; csv for a `terminal` has its control characters written
    out, as a table's have (csv into a pipe or a file keeps every character: it is data)."""
    rows = _rows(names, values, json_columns, for_json=fmt in ("json", "jsonl"))
    if fmt == "jsonl":
        for row in rows:
            out.write(_exact_numbers(json_printable(_COMPACT_JSON(row))) + "\n")
    elif fmt == "json":
        # The layout of json.dumps(list_of_rows, indent=2), one row at a time.
        out.write("[")
        written = 0
        for row in rows:
            body = _exact_numbers(json_printable(json.dumps(row, ensure_ascii=False, indent=2))).replace("\n", "\n  ")
            out.write(("," if written else "") + "\n  " + body)
            written += 1
        out.write("\n]\n" if written else "]\n")
    elif fmt == "csv":
        writer = csv.writer(_Printable(out) if terminal else out, lineterminator="\n")
        writer.writerow(names)
        cells = [_json_cell if name in json_columns else _text_cell for name in names]
        writer.writerows([cell(value) for cell, value in zip(cells, row)] for row in values)
    else:
        _write_table(names, ({n: _json_text(r[n], n in json_columns) for n in names} for r in rows), out, width)


# C0 and C1 control characters but tab and newline, and DEL: text from the log (a web page's
# title, a model's words, a case id) would reach the terminal as escape sequences that recolour,
# retitle or hide what is printed, or set the clipboard. Shown as `\x1b`. So are the bidi
# overrides and isolates (`\u202e`), which make a line read in another order than it is.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` for a terminal: its control characters written out, not obeyed."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if m.group() < "\u0100" else f"\\u{ord(m.group()):04x}", text)


# What JSON text may still hold raw after the encoder (which escapes C0 only): DEL, C1 and the
# bidi controls, escaped as JSON itself escapes (`\u009b`), so the text parses to the same values.
_JSON_CONTROL = re.compile(r"[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def json_printable(text: str) -> str:
    """JSON text for a terminal: the same JSON, no character a terminal would obey."""
    return _JSON_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class _Printable:
    """A text stream that writes `printable` text."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    def write(self, text: str) -> int:
        return self._out.write(printable(text))


_TEXT_CELL_BY_TYPE = {str: str, int: str, bool: str, float: repr, type(None): lambda _: ""}


def _text_cell(value: Any) -> str:
    as_text = _TEXT_CELL_BY_TYPE.get(type(value))
    return as_text(value) if as_text else _cell(_plain(value))


def _json_cell(stored: str | None) -> str:
    """A JSON column's csv cell: compact JSON text (stored text is parsed and written again,
    so it reads as the table and json formats show it)."""
    return "" if stored is None else _COMPACT_JSON(_json_without_non_finite(stored))


def _json_text(value: Any, is_json: bool) -> Any:
    """A JSON column's cell in csv and table output: compact JSON text, as stored."""
    return _COMPACT_JSON(value) if is_json and value is not None else value


def _write_table(names: list[str], rows: Iterator[dict[str, Any]], out: TextIO, width: int | None) -> None:
    preview: list[list[str]] = []
    for row in rows:
        preview.append([_table_cell(row[n]) for n in names])
        if len(preview) == TABLE_PREVIEW_ROWS:
            break
    header = [_table_cell(name) for name in names]  # a column's name is the query's (or a file's) text
    natural = [max([_columns(n)] + [_columns(cells[i]) for cells in preview]) for i, n in enumerate(header)]
    widths = _fit(natural, width)
    if width is not None and sum(widths) + len(_COLUMN_GAP) * (len(widths) - 1) > width:
        # Too many columns to fit even wrapped: each row on one line, as into a pipe (`less -S`
        # reads it), not every cell in pieces of a few characters that overflow all the same.
        width, widths = None, natural

    def emit_row(cells: list[str]) -> None:
        if width is None:  # a pipe or a file: a row is one line, a cell wider than the preview's overflows
            out.write(_COLUMN_GAP.join(_padded(c, w) for c, w in zip(cells, widths)).rstrip() + "\n")
            return
        wrapped = [_wrapped(c, w) for c, w in zip(cells, widths)]
        for line in range(max(len(parts) for parts in wrapped) if wrapped else 1):
            out.write(_COLUMN_GAP.join(_padded(parts[line] if line < len(parts) else "", w) for parts, w in zip(wrapped, widths)).rstrip() + "\n")

    emit_row(header)
    out.write(_COLUMN_GAP.join("-" * w for w in widths) + "\n")
    for cells in preview:
        emit_row(cells)
    for row in rows:
        emit_row([_table_cell(row[n]) for n in names])


def _columns(text: str) -> int:
    """How many terminal columns `text` takes: a wide (East Asian, emoji) character two, a
    combining mark or a format character (a zero-width joiner) none."""
    return len(text) if text.isascii() else sum(map(_character_columns, text))


def _character_columns(character: str) -> int:
    if unicodedata.category(character) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(character) in "WF" else 1


def _wrapped(cell: str, width: int) -> list[str]:
    """`cell`'s lines within `width` columns: at spaces, and a piece still wider (wide characters
    count two) cut where the columns run out."""
    lines = []
    for piece in textwrap.wrap(cell, width, break_on_hyphens=False) or [""]:
        used, start = 0, 0
        for at, character in enumerate(piece):
            columns = _character_columns(character) if not character.isascii() else 1
            if used + columns > width and at > start:
                lines.append(piece[start:at])
                used, start = 0, at
            used += columns
        lines.append(piece[start:])
    return lines


def _padded(text: str, width: int) -> str:
    return text + " " * (width - _columns(text))


def _table_cell(value: Any) -> str:
    return printable(_cell(value).replace("\n", " "))


def _fit(natural: list[int], width: int | None) -> list[int]:
    """Column widths within `width` characters: the widest columns give way first, none
    below a few characters (past that they do not fit: `_write_table` then writes whole rows)."""
    widths = list(natural)
    if width is None:
        return widths
    budget = width - len(_COLUMN_GAP) * (len(widths) - 1)
    while sum(widths) > budget:
        widest = max(range(len(widths)), key=lambda i: widths[i])
        if widths[widest] <= _MIN_COLUMN_WIDTH:
            break
        widths[widest] -= 1
    return widths


def terminal_width() -> int | None:
    """The width tables wrap to: $COLUMNS, else the terminal's; none when stdout is a pipe
    or a file (lines are then whole)."""
    if os.environ.get("COLUMNS", "").isdigit():
        return int(os.environ["COLUMNS"])
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def emit(table: pa.Table, fmt: str) -> None:
    emit_rows(table.schema.names, _arrow_rows(table.to_batches()), fmt)


def emit_result(result: QueryResult, fmt: str) -> None:
    """A query's rows (`query(as_rows=True)`) on stdout."""
    emit_rows(result.columns, _result_rows(result), fmt, json_columns=result.json_columns)


def _result_rows(result: QueryResult) -> Iterator[tuple[Any, ...]]:
    return iter(result.rows) if result.rows is not None else _arrow_rows(result.batches)


def emit_rows(
    names: list[str], rows: Iterable[Sequence[Any]], fmt: str, *, json_columns: frozenset[str] = frozenset()
) -> None:
    # sys.stdout itself: block-buffered into a pipe or file (click's text stream is line-buffered,
    # a system call per row, three quarters of a large CSV's time).
    with writing_stdout():
        write_rows(names, rows, fmt, sys.stdout, json_columns=json_columns, width=terminal_width(), terminal=sys.stdout.isatty())


@contextmanager
def writing_stdout() -> Iterator[None]:
    """Writes to stdout whose failure (a full disk, `> /dev/full`) is said naming standard output,
    which is muted so that the exit's flush does not fail again; a reader gone (`| head`) stays
    a BrokenPipeError, for the caller to end quietly."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as exc:
        mute_stdout()
        raise os_fault(exc, path="standard output") from None


def check_output_file(option: str, path: Path, log_path: Path) -> Path:
    """Where a command may write its one output file: not the log's own, not a folder or a
    special file, in a folder that exists. Checked before the command's work, so a mistyped
    path costs nothing."""
    target = check_not_the_log(option, path, log_path)
    if target.is_dir():
        raise EvisceneError(f"{option} {path}: is a folder")
    kind = special_file_kind(target)
    if kind:  # the file written whole is renamed over it: a pipe, or /dev/full itself, would be gone
        raise EvisceneError(f"{option} {path}: is {kind}, not a regular file: the output, written whole, would replace it")
    if not target.parent.is_dir():
        raise EvisceneError(f"{option} {path}: no folder {target.parent}")
    return target


def check_output_path(path: Path, log_path: Path) -> Path:
    """Where --output may write: a .csv, .json, .jsonl or .parquet file that is not the log's own."""
    target = check_output_file("--output", path, log_path)
    if target.suffix not in OUTPUT_SUFFIXES:
        raise EvisceneError(f"--output {path}: the name must end in {', '.join(OUTPUT_SUFFIXES)}")
    return target


def output_needs_arrow(target: Path | None) -> bool:
    """Whether `write_output` reads the rows as Arrow batches (a Parquet file) or as tuples."""
    return target is not None and target.suffix == ".parquet"


def write_output(target: Path, result: QueryResult) -> None:
    """Stream the rows into `target` through a temporary name in its folder, renamed into
    place once complete: an interrupted write leaves no half file under the real name.
    `result` holds Arrow batches when `output_needs_arrow(target)`, else rows if it can."""
    from eviscene.exports.staging import pending_file_prefix, remove_abandoned_files

    remove_abandoned_files(target)
    handle, pending_name = tempfile.mkstemp(prefix=pending_file_prefix(target), suffix=".tmp", dir=target.parent)
    pending = Path(pending_name)
    try:
        if target.suffix == ".parquet":
            os.close(handle)
            import pyarrow.parquet as pq

            with pq.ParquetWriter(pending, result.schema) as writer:
                for batch in result.batches:
                    writer.write_batch(batch)
        else:
            try:
                with open(handle, "w", encoding="utf-8", newline="") as out:
                    fmt = target.suffix.removeprefix(".")  # csv, json or jsonl
                    write_rows(result.columns, _result_rows(result), fmt, out, json_columns=result.json_columns)
            except OSError as exc:  # a full disk: a file object's fault names no file
                raise os_fault(exc, path=target, verb="write") from None
        os.chmod(pending, 0o644 & ~_umask())
        os.replace(pending, target)
    except BaseException:
        pending.unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def mute_stdout() -> None:
    """The reader of stdout has gone (`| head`): whatever is printed from now on, and the exit's
    flush, goes to /dev/null instead of failing again with a broken pipe."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def echo(text: str, *, nl: bool = True) -> None:
    """`text` on stdout as it is (JSON made printable already, a TOML file); a full disk is said
    naming standard output (`writing_stdout`)."""
    with writing_stdout():
        click.echo(text, nl=nl)


def say(line: str) -> None:
    """A line of a command's report on stdout, its control characters written out (its words
    may be a web page's or a model server's), a newline among them too: an id holding one
    would print a line of its own making (`outcome: completed`). A reader that stops early
    (`| head -1`) ends no work still to do (a run's directory, the next log to merge): the rest
    of the lines go nowhere. Rows of results (`sql`, `runs`) stop at once instead (main.py)."""
    try:
        with writing_stdout():
            click.echo(printable(line).replace("\n", "\\n"))
    except BrokenPipeError:
        mute_stdout()
