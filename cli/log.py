"""`eviscene log …`: integrity and housekeeping of the log itself."""

from __future__ import annotations

import sys

import click

from eviscene.store import EventLog


@click.group()
def log() -> None:
    """Check and maintain the event log."""


@log.command()
@click.pass_obj
def verify(event_log: EventLog) -> None:
    """Check every run's hash chain; name each edited, deleted or reordered event.

    \b
    Example:
        eviscene log verify
    """
    report = event_log.verify()
    for problem in report.problems:
        click.echo(f"BROKEN {problem}")
    if not report.ok:
        click.echo(f"{len(report.problems)} problem(s) in {report.runs} run(s), {report.events} events", err=True)
        sys.exit(1)
    click.echo(f"ok: {report.runs} run(s), {report.events} events, every chain intact")


@log.command()
@click.argument("run_ids", nargs=-1)
@click.pass_obj
def seal(event_log: EventLog, run_ids: tuple[str, ...]) -> None:
    """Move finished runs' live segments into the DuckDB archive file (all, or RUN_IDS).

    Runs are sealed automatically when they finish; this catches up runs whose sealing
    was skipped (the archive was busy) or that were interrupted.

    \b
    Example:
        eviscene log seal
    """
    sealed = event_log.seal(list(run_ids) or None)
    click.echo(f"sealed {len(sealed)} run(s)" + (": " + ", ".join(sealed) if sealed else ""))


@log.command()
@click.argument("sources", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.pass_obj
def merge(event_log: EventLog, sources: tuple[str, ...]) -> None:
    """Fold other logs (e.g. the shards of a --shard-count run) into this log's archive;
    events already here are skipped, so merging twice changes nothing.

    \b
    Example:
        eviscene --db all.duckdb log merge shard0.duckdb shard1.duckdb
    """
    for source in sources:
        report = event_log.merge(source)
        click.echo(f"{report.source}: {report.events} events, {report.blobs} blobs merged")
    verify = event_log.verify()
    click.echo(f"{'ok' if verify.ok else 'BROKEN'}: {verify.runs} run(s), {verify.events} events")
    if not verify.ok:
        sys.exit(1)


COMMANDS = [log]
