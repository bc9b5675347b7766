"""`eviscene log …`: integrity and housekeeping of the log itself."""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
from pathlib import Path

import click

from eviscene.cli.interrupts import RERUN_FINISHES, on_interrupt_say
from eviscene.cli.output import check_output_file, echo, json_printable, say
from eviscene.errors import is_interruption
from eviscene.log import EventLog
from eviscene.store import VerifyReport
from eviscene.store.layout import check_not_the_log
from eviscene.store.parquet_export import export_parquet


@click.group()
def log() -> None:
    """Check and maintain the event log."""


@log.command(short_help="Check every run is intact and complete.")
@click.option("--save-heads", "save_to", type=click.Path(dir_okay=False, path_type=Path),
              help="Write each run's verified chain head (run id, seq, hash) to this file, as JSON lines.")
@click.option("--check-heads", "check_from", type=click.Path(dir_okay=False, path_type=Path),
              help="Check each run still holds the head a --save-heads file recorded (exit 1 where not).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: a line per problem, then a summary; json: one object for scripts (ok, intact, the counts, and "
                   "each problem, unfinished and running run with its fields and its line of text).")
@click.pass_obj
def verify(event_log: EventLog, save_to: Path | None, check_from: Path | None, fmt: str) -> None:
    """Check every run is intact and complete: its hash chain, its segments against their
    manifest and sealed records, its last event against the one recorded at commit, and
    that it ends with run.finished. Names the run and seq range of each edited, deleted,
    reordered or cut-off part (exit 1); a run being written is verified up to its last commit.

    Whoever can write the log could also rewrite an event and hash every later one again:
    the chain alone cannot show that. Keep the heads `--save-heads` writes where the log's
    writers cannot reach; `--check-heads` then names each run rewritten, cut back or deleted
    since (a run may have grown since: its events up to the recorded seq must be the same).

    \b
    Example:
        eviscene log verify
        eviscene log verify --save-heads heads.jsonl
        eviscene log verify --check-heads heads.jsonl
        eviscene log verify --format json
    """
    from eviscene.exports.serialize import write_text
    from eviscene.store.heads import heads_text, read_heads

    target = check_output_file("--save-heads", save_to, event_log.path) if save_to is not None else None
    recorded = read_heads(check_from) if check_from is not None else None
    report = event_log.verify(recorded)
    if fmt == "json":
        echo(json_printable(json.dumps(_report_data(report), ensure_ascii=False, indent=2)))
    else:
        _print_report(report)
    tell = say if fmt == "text" else functools.partial(click.echo, err=True)  # stdout holds the JSON alone
    if recorded and not report.problems:
        tell(f"every recorded head held: {len(recorded)} of {check_from}")
    if target is not None:
        if report.problems:
            click.echo(f"heads not saved to {save_to}: a broken log's heads would pin what was broken", err=True)
        elif not report.heads:  # an empty file, which --check-heads refuses as checking nothing
            click.echo(f"heads not saved to {save_to}: the log holds no run to save a head of", err=True)
        else:
            write_text(target, heads_text(report.heads))
            tell(f"saved {len(report.heads)} head(s) to {save_to}")
    if not report.ok:
        sys.exit(1)


def _report_data(report: VerifyReport) -> dict:
    """The report as `--format json` gives it: each finding with its fields, its kind and its line."""
    def found(item: object, kind: str) -> dict:
        return {"kind": kind, **dataclasses.asdict(item), "message": str(item)}

    return {
        "ok": report.ok, "intact": report.intact, "runs": report.runs, "imports": report.imports, "exports": report.exports,
        "events": report.events,
        "problems": [found(p, type(p).__name__.removesuffix("Problem").lower()) for p in report.problems],
        "unfinished": [found(note, "unfinished") for note in report.unfinished],
        "running": [found(note, "running") for note in report.running],
    }


def _print_report(report: VerifyReport) -> None:
    for problem in report.problems:  # run ids as the log has them: anyone's, control characters and all
        say(f"BROKEN {problem}")
    for note in report.unfinished:
        say(f"UNFINISHED {note}")
    for note in report.running:
        say(f"RUNNING {note}")
    summary = report.summary
    if report.problems:
        click.echo(f"{len(report.problems)} problem(s) in {summary}", err=True)
    elif report.unfinished:
        click.echo(f"incomplete: {len(report.unfinished)} unfinished run(s) in {summary}; every chain intact", err=True)
    else:
        say(f"ok: {summary}, every chain intact and complete")


@log.command(short_help="Move finished runs' live segments into the archive.")
@click.argument("run_ids", nargs=-1)
@click.pass_obj
def seal(event_log: EventLog, run_ids: tuple[str, ...]) -> None:
    """Move the live segments of runs no writer holds (all, or RUN_IDS) into the DuckDB
    archive file: finished runs, and interrupted ones (`eval resume` goes on from the archive).

    Runs are sealed automatically when they finish; this catches up runs whose sealing
    was skipped (the archive was busy) or that were interrupted. Each run is checked first
    (segments against their manifest, the chain): a broken one is refused, exit 2, and the
    archive is left unchanged. An unknown RUN_ID is an error. Each sealed run's numbers for
    `eviscene view` (its runs row and dashboard) are then filed beside the log, in
    LOG.results/; a RUN_ID sealed earlier gets them too.

    \b
    Example:
        eviscene log seal
        eviscene log seal 20261130_153714_offline_offline-react-v1
    """
    with on_interrupt_say(RERUN_FINISHES):
        sealed = event_log.seal(list(run_ids) or None)
    asked = [run_id for run_id in dict.fromkeys(run_ids) if run_id not in sealed]
    held = {row["run_id"] for row in event_log.sql(
        "SELECT DISTINCT run_id FROM events WHERE list_contains(?, run_id)", [asked]).to_pylist()} if asked else set()
    earlier = [run_id for run_id in asked if run_id in held]
    empty = [run_id for run_id in asked if run_id not in held]  # a run folder its writer left before its first batch
    say(f"sealed {len(sealed)} run(s)" + (": " + ", ".join(sealed) if sealed else "")
        + (f"; sealed already: {', '.join(earlier)}" if earlier else "")
        + (f"; nothing to seal: {', '.join(empty)}" if empty else ""))
    file_viewer_numbers(event_log, [*sealed, *earlier])


def file_viewer_numbers(event_log: EventLog, run_ids: list[str]) -> None:
    """File sealed runs' viewer numbers beside the log (`eviscene.viewer.data.precompute`), so
    `eviscene view`'s first look at a large run reads them. The CLI does it after a seal (the
    log layer may not import the viewer); a failure leaves the seal standing and the viewer
    computes the numbers itself."""
    import duckdb

    from eviscene.viewer.data import precompute

    try:
        precompute(event_log, run_ids)
    except (duckdb.Error, OSError) as exc:
        if is_interruption(exc):  # a Ctrl-C stopping the query is the user's, not a failure
            raise
        click.echo(f"note: viewer numbers not filed beside {event_log.path}: {exc}", err=True)


@log.command(short_help="Fold other logs (e.g. shards') into this one.")
@click.argument("sources", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.pass_obj
def merge(event_log: EventLog, sources: tuple[str, ...]) -> None:
    """Fold other logs (e.g. the shards of a --shard-count run) into this log's archive;
    events already here are skipped, so merging twice changes nothing. Each source is
    verified in full first: a broken one (one still being written, or holding an unfinished
    shard) is refused, exit 2, before anything is taken in.

    \b
    Example:
        eviscene --db all.duckdb log merge shard0.duckdb shard1.duckdb
    """
    with on_interrupt_say(RERUN_FINISHES):
        for report in event_log.merge_all(sources):
            say(f"{report.source}: {report.events} events, {report.blobs} blobs merged")
    verify = event_log.verify()
    _print_report(verify)
    if not verify.ok:
        sys.exit(1)


@log.command("export-parquet", short_help="Write the log's events and blobs as Parquet files.")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.pass_obj
def export_parquet_command(event_log: EventLog, directory: Path) -> None:
    """Write the log's events and blobs as Parquet under DIRECTORY, partitioned by run (hive
    layout: DIRECTORY/events/run_id=R/…parquet, DIRECTORY/blobs/…parquet), for Spark, Trino,
    Polars or DuckDB. Incremental: runs exported already and unchanged are skipped, a run
    that grew is rewritten, a run being written (or sealed) is left for a later export, its
    holder named. Every read command
    reads such a folder as a log: `eviscene --db DIRECTORY sql …`.

    \b
    Example:
        eviscene log export-parquet history/
        eviscene --db history/ sql "SELECT count(*) FROM episodes"
    """
    target = check_not_the_log("DIRECTORY", directory, event_log.path)
    con = event_log.connect(views=False)
    try:
        report = export_parquet(event_log.path, target, con)
    finally:
        con.close()
    say(
        f"exported {report.streams} ({report.events} events) and {report.blobs} blob(s) to {directory}; "
        f"{report.unchanged} unchanged"
        + (f"; held, not exported (run this again when it ends): {', '.join(f'{run} (by {holder})' for run, holder in report.running.items())}"
           if report.running else "")
    )


COMMANDS = [log]
