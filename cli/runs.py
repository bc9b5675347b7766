"""`eviscene runs`: the runs in the log."""

from __future__ import annotations

import click

from eviscene.cli.output import emit, format_option
from eviscene.store import EventLog


@click.command()
@format_option
@click.pass_obj
def runs(log: EventLog, fmt: str) -> None:
    """List the runs in the log, newest first, with their progress.

    \b
    Example:
        eviscene runs --format json
    """
    emit(log.sql("SELECT * FROM runs ORDER BY started_at DESC NULLS LAST, run_id"), fmt)


COMMANDS = [runs]
