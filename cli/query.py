"""`eviscene sql` and `eviscene views`: ask the log questions."""

from __future__ import annotations

import click
import pyarrow as pa

from eviscene.cli.output import emit, format_option
from eviscene.store import EventLog
from eviscene.views import view_definitions


@click.command()
@click.argument("query")
@format_option
@click.pass_obj
def sql(log: EventLog, query: str, fmt: str) -> None:
    """Run a SQL query over the log: the `events` and `blobs` relations and every view.

    \b
    Example:
        eviscene sql "SELECT type, count(*) AS n FROM events GROUP BY type ORDER BY n DESC"
        eviscene sql "SELECT * FROM runs" --format csv
    """
    emit(log.sql(query), fmt)


@click.command()
@click.option("--columns", is_flag=True, help="Also list each view's columns.")
@format_option
@click.pass_obj
def views(log: EventLog, columns: bool, fmt: str) -> None:
    """List the SQL views: name, grain, key and meaning.

    \b
    Example:
        eviscene views --columns
    """
    definitions = view_definitions()
    data = {
        "view": [d.name for d in definitions],
        "grain": [d.grain for d in definitions],
        "key": [", ".join(d.key) for d in definitions],
        "meaning": [d.meaning for d in definitions],
    }
    if columns:
        con = log.connect()
        try:
            data["columns"] = [
                ", ".join(row[0] for row in con.execute(f'DESCRIBE "{d.name}"').fetchall()) for d in definitions
            ]
        finally:
            con.close()
    emit(pa.table(data), fmt)


COMMANDS = [sql, views]
