"""The `eviscene` command: global options, error handling, and the command groups."""

from __future__ import annotations

import sys

import click
import duckdb

from eviscene import __version__
from eviscene.errors import EvisceneError
from eviscene.store import EventLog
from eviscene.store.layout import DEFAULT_LOG


class _Eviscene(click.Group):
    """Turns the project's errors and SQL mistakes into one line on stderr and exit 2."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (EvisceneError, duckdb.Error) as exc:
            click.echo(f"Error: {exc}", err=True)
            sys.exit(2)


@click.group(cls=_Eviscene, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    envvar="EVISCENE_DB",
    default=DEFAULT_LOG,
    show_default=True,
    type=click.Path(),
    help="The event log (also EVISCENE_DB), or a folder of `log export-parquet` to read.",
)
@click.version_option(__version__, prog_name="eviscene")
@click.pass_context
def cli(ctx: click.Context, db: str) -> None:
    """Run image fact-verification agents into an append-only DuckDB event log, then
    score, audit and export datasets with SQL views over it.

    \b
    Example:
        eviscene eval run --benchmark examples/eviscene-demo-v1/runtime_input/cases.jsonl
        eviscene runs
        eviscene sql "SELECT type, count(*) AS n FROM events GROUP BY type ORDER BY n DESC"
    """
    ctx.obj = EventLog(db)


def _register() -> None:
    from eviscene.cli import dataset, eval, imports, log, materialize, profiles, query, runs, why

    for module in (eval, log, materialize, profiles, query, runs, why, dataset, imports):
        for command in module.COMMANDS:
            cli.add_command(command)


_register()
