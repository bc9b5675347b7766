"""`eviscene report RUN --out report.html`: one self-contained HTML file of a run."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from eviscene.cli.interrupts import earlier_stat, interrupted_writing, on_interrupt_say
from eviscene.cli.output import check_output_file, say
from eviscene.log import EventLog


@click.command(short_help="Write a run's report: one HTML file that works offline.")
@click.argument("run_id")
@click.option("--compare", "compare_with", default=None, help="Another run to compare with, paired by case.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="The HTML file to write.")
@click.pass_obj
def report(log: EventLog, run_id: str, compare_with: str | None, out: Path) -> None:
    """Write a run's dashboard, episode list and every episode page as ONE self-contained
    HTML file (plots, scripts and thumbnails inline; opens from disk, needs no network).

    \b
    Example:
        eviscene report 20261130_153714_offline_offline-react-v1 --out report.html
        eviscene report RUN_B --compare RUN_A --out b-vs-a.html
    """
    from eviscene.viewer.report import build_report

    check_output_file("--out", out, log.path)
    bars: list = []

    def progress(done: int, total: int) -> None:
        if not bars:  # opened at the first episode, so a mistake is one line, not a bar and a line
            bars.append(click.progressbar(length=total, label="rendering episodes", file=sys.stderr))
            bars[0].__enter__()
        bars[0].update(done - bars[0].pos)

    earlier = earlier_stat(out)
    try:
        with on_interrupt_say(lambda: interrupted_writing(out, "the same command", replacing=earlier)):
            summary = build_report(log, run_id, out, compare_with=compare_with, progress=progress)
    finally:
        if bars:
            bars[0].__exit__(None, None, None)
    say(f"wrote {out}: {summary['episodes']} episodes, {summary['images']} images, {summary['bytes'] / 1e6:.1f} MB")


COMMANDS = [report]
