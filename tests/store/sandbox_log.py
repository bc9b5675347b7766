"""A small real log for the sandbox tests, written by the real writer: run `sealed` in the
archive, run `live` still in its live folder, so both kinds of file are under test."""

import hashlib
import shutil
from pathlib import Path

from eviscene.events import GateDecided, RunStarted
from eviscene.log import EventLog
from eviscene.store import EventDraft

LOG_NAME = "log.duckdb"
EVENTS = {"sealed": 41, "live": 21}  # run.started and the gate decisions of each run


def _drafts(gates: int):
    yield EventDraft(RunStarted(
        started_at="2026-11-30T00:00:00+00:00", git_commit="", benchmark={}, agent={}, source_access_policy={}
    ))
    for step in range(gates):
        yield EventDraft(
            GateDecided(gate="demo", subject=f"s{step}", passed=step % 2 == 0), episode_id="e", attempt=1, step=step
        )


def build(folder: Path) -> Path:
    log = EventLog(folder / LOG_NAME)
    log.append("sealed", _drafts(EVENTS["sealed"] - 1))
    log.seal(["sealed"])
    log.append("live", _drafts(EVENTS["live"] - 1))
    return log.path


def copy(original: Path, folder: Path) -> Path:
    """A copy of the log (archive and live folder) in `folder`."""
    shutil.copy2(original, folder / LOG_NAME)
    shutil.copytree(original.with_name(LOG_NAME + ".live"), folder / (LOG_NAME + ".live"))
    return folder / LOG_NAME


def fingerprint(folder: Path) -> dict[str, str]:
    """Every file under `folder` (the log, its live folder, anything else) by sha256."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }
