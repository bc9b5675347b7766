"""`eviscene sql` and `eviscene views`: ask the log questions."""

from __future__ import annotations

from pathlib import Path

import click
import duckdb
from click.core import ParameterSource

from eviscene.cli.interrupts import earlier_stat, interrupted_writing, on_interrupt_say
from eviscene.cli.numbers import MEMORY_SIZE, ByteSize
from eviscene.cli.output import check_output_path, emit_result, emit_rows, format_option, output_needs_arrow, write_output
from eviscene.errors import EvisceneError
from eviscene.log import EventLog
from eviscene.store.snapshot import closest_name
from eviscene.views import view_definitions


@click.command(short_help="Run one SELECT over the log (its views, events and blobs).")
@click.argument("query")
@format_option
@click.option(
    "--read", "read", multiple=True, type=click.Path(exists=True, path_type=Path),
    help="A file or folder of your own the query may read (repeatable); nothing else outside the log is readable.",
)
@click.option(
    "--output", "output", type=click.Path(path_type=Path), default=None,
    help="Write the rows to this .csv, .json, .jsonl or .parquet file instead of stdout; its name sets the format (never the log's own files).",
)
@click.option("--memory-limit", type=MEMORY_SIZE, default=None, metavar="SIZE",
              help="The most memory DuckDB may take (e.g. 4GB); beyond it, it spills to disk. Default: 80% of RAM.")
@click.option("--spill-limit", type=ByteSize(), default=None, metavar="SIZE",
              help="The most disk its spill folder may take (e.g. 20GB). Default: 90% of that disk's free space.")
@click.pass_obj
def sql(log: EventLog, query: str, fmt: str, read: tuple[Path, ...], output: Path | None,
        memory_limit: int | None, spill_limit: int | None) -> None:
    """Run one SELECT over the log: the `events` and `blobs` relations and every view.

    The query runs in a sandbox: it reads the log and the files named with --read, and
    writes nothing (COPY, ATTACH, INSTALL, SET, CREATE, … are refused). Results stream to
    stdout in --format, or to --output FILE. A QUERY of `-` is read from standard input (a
    file of SQL, which may start with a `--` comment).

    \b
    Example:
        eviscene sql "SELECT type, count(*) AS n FROM events GROUP BY type ORDER BY n DESC"
        eviscene sql "SELECT * FROM runs" --format csv
        eviscene sql "SELECT e.episode_id, n.note FROM episodes e JOIN 'notes.csv' n USING (episode_id)" --read notes.csv
        eviscene sql "SELECT * FROM events" --output events.parquet
        eviscene sql - --csv < query.sql
    """
    log.require()
    if query == "-":
        sent = click.get_binary_stream("stdin").read()
        try:
            query = sent.decode("utf-8-sig")  # an editor's byte-order mark is no SQL
        except UnicodeDecodeError as exc:
            raise EvisceneError(f"the query on standard input is not UTF-8 text: byte {sent[exc.start]:#04x} at offset {exc.start}") from None
    target = check_output_path(output, log.path) if output is not None else None
    if target is not None and click.get_current_context().get_parameter_source("fmt") is not ParameterSource.DEFAULT \
            and f".{fmt}" != target.suffix:
        # The file's name sets what is written in it; a --format that says otherwise is a mistake to name.
        raise click.UsageError(f"--format {fmt} and --output {output} disagree: the file's name ({target.suffix}) sets its format")
    limits = {"memory_limit": memory_limit, "spill_limit": spill_limit}
    try:
        if target is None:
            with log.query(query, read=read, as_rows=True, **limits) as result:
                emit_result(result, fmt)
            return
        earlier = earlier_stat(target)
        with on_interrupt_say(lambda: interrupted_writing(output, "the same command", replacing=earlier)):
            with log.query(query, read=read, as_rows=not output_needs_arrow(target), **limits) as result:
                write_output(target, result)
    except duckdb.OutOfMemoryException as exc:
        # DuckDB's own remedies (SET memory_limit, SET threads) are statements the sandbox refuses.
        raise EvisceneError(
            f"the query ran out of {'disk to spill to' if 'max_temp_directory_size' in str(exc) else 'memory'} "
            f"({str(exc).splitlines()[0]}); narrow it, or raise --memory-limit or --spill-limit"
        ) from None


@click.command(short_help="List the SQL views: name, grain, key and meaning.")
@click.argument("names", nargs=-1, metavar="[VIEW]...")
@click.option("--columns", is_flag=True, help="Also list each view's columns.")
@format_option
@click.pass_obj
def views(log: EventLog, names: tuple[str, ...], columns: bool, fmt: str) -> None:
    """List the SQL views (or only each VIEW named): name, grain, key and meaning.

    \b
    Example:
        eviscene views --columns
        eviscene views episodes tool_calls --columns
    """
    definitions = view_definitions()
    if names:
        by_name = {d.name: d for d in definitions}
        for name in names:
            if name.lower() not in by_name:
                close = closest_name(name, by_name)
                raise EvisceneError(f"no view {name!r}" + (f'; did you mean "{close}"?' if close else "; `eviscene views` lists them"))
        definitions = tuple(by_name[name.lower()] for name in names)
    listed = list if fmt in ("json", "jsonl") else ", ".join  # a key's or columns' names: an array in JSON
    data = {
        "view": [d.name for d in definitions],
        "grain": [d.grain for d in definitions],
        "key": [listed(d.key) for d in definitions],
        "meaning": [d.meaning for d in definitions],
    }
    if columns:
        con = log.require().connect()
        try:
            data["columns"] = [listed(row[0] for row in con.execute(f'DESCRIBE "{d.name}"').fetchall()) for d in definitions]
        finally:
            con.close()
    emit_rows(list(data), zip(*data.values()), fmt)


COMMANDS = [sql, views]
