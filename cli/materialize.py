"""`eviscene materialize`: write a run's views as the seed runner's run directory."""

from __future__ import annotations

from pathlib import Path

import click

from eviscene.cli.interrupts import interrupted_writing, on_interrupt_say
from eviscene.cli.output import say
from eviscene.exports.run_dir import FORMATS, materialize_run
from eviscene.log import EventLog
from eviscene.store.layout import check_not_the_log


@click.command(short_help="Write a run's directory (the seed's files) from the log.")
@click.argument("run_id")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="New or empty directory.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="jsonl", show_default=True, help="Tabular files as JSONL or Parquet.")
@click.option("--unfinished-as-errors", is_flag=True,
              help="Write a run whose episodes have not all finished (stopped, killed or still running), or whose "
                   "shards are not all merged into this log, anyway: each unfinished episode as an error row, a missing "
                   "shard's episodes not at all; without it such a run is refused.")
@click.pass_obj
def materialize(log: EventLog, run_id: str, out_dir: Path, fmt: str, unfinished_as_errors: bool) -> None:
    """Write RUN_ID's run directory: run_manifest.json, predictions, scores, rollout groups,
    rewards, SFT trajectories, summary.json and traces/ — byte-identical on every rerun.
    An imported run directory (RUN_ID is its import id) is written back byte for byte. A run
    with unfinished episodes is refused: `eviscene eval resume RUN_ID` finishes it; so is a
    sharded run with shards not merged into this log: `eviscene log merge` takes them in.

    \b
    Example:
        eviscene materialize 20261130_141502_offline_offline-react-v1 --out runs/demo
    """
    check_not_the_log("--out", out_dir, log.path, output_folder="new")
    with on_interrupt_say(lambda: interrupted_writing(out_dir, "the same command")):
        written = materialize_run(log, run_id, out_dir, fmt=fmt, unfinished_as_errors=unfinished_as_errors)
        for name, count in written.items():
            say(f"{count:>8}  {out_dir / name}")


COMMANDS = [materialize]
