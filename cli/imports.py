"""`eviscene import`: bring existing run directories, accepted releases, case splits and
gate artifacts into the log."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import click
import pyarrow as pa

from eviscene.cli.interrupts import RERUN_FINISHES, on_interrupt_say
from eviscene.cli.output import emit, format_option
from eviscene.imports import (
    SOURCE_KINDS,
    ArtifactError,
    ImportResult,
    plan_import,
    record_import,
)
from eviscene.imports.sources import GATE_SUFFIXES
from eviscene.log import EventLog


@click.command("import", short_help="Import run directories and files into the log.")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--kind", type=click.Choice(SOURCE_KINDS), default=None, help="What PATH is (default: detected).")
@format_option
@click.pass_obj
def import_(log: EventLog, paths: tuple[Path, ...], kind: str | None, fmt: str) -> None:
    """Import each PATH as `artifact.imported` events (file sha256, content in a blob): a
    seed-style run directory, an accepted teacher release (v2-v4, every seed check), a fixed
    case split (.jsonl) or a directory of *.sft_eligibility.json / *.semantic_reward.json
    gate artifacts. Importing the same bytes again changes nothing. Every file of a run
    directory is imported: the run, named by the printed import id, is listed by `runs` and
    read by `why --run`, `runs compare` and `materialize` (which writes its files back).

    \b
    Example:
        eviscene import runs/20261130_141502_offline_offline-react-v1 splits/frozen_cases.jsonl
    """
    with on_interrupt_say(RERUN_FINISHES):
        results = [asdict(_import(log, path, kind)) for path in paths]
    emit(pa.Table.from_pylist(results), fmt)


def _import(log: EventLog, path: Path, kind: str | None) -> ImportResult:
    """One PATH imported; a folder named as gate artifacts that holds none is a mistake to say,
    not an import of nothing (an export's empty gate folder is read as none, as seed 002 does)."""
    plan = plan_import(path, kind)
    if plan.source_kind == "gate_artifacts" and not plan.files:
        raise ArtifactError(f"{plan.root} holds no gate artifacts ({', '.join('*' + suffix for suffix in GATE_SUFFIXES)})")
    return record_import(log, plan)


COMMANDS = [import_]
