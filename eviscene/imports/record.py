"""Writing an import into the log: one `artifact.imported` event for the source, one per
file with its content in a blob. The run id derives from the bytes, so a second import of
the same source finds its run and writes nothing (or what an interrupted one left out)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from eviscene.events import ArtifactImported
from eviscene.errors import LogLockedError
from eviscene.imports.errors import ArtifactError
from eviscene.imports.plan import ImportPlan
from eviscene.imports.sources import plan_import
from eviscene.rules.blocking import run_blocking
from eviscene.rules.settled_heap import settled_heap
from eviscene.log import EventLog
from eviscene.store import EventDraft


@dataclass(frozen=True)
class ImportResult:
    import_id: str
    source_kind: str
    path: str
    files: int
    status: str  # imported | already imported


def imported_whole(log: EventLog, plan: ImportPlan) -> bool:
    """Every event of the import is in the log: one an interrupt or a kill cut short between
    two of its writer's batches (a large source) holds only some, which the next import adds."""
    found = log.sql("SELECT count(*) AS n FROM events WHERE run_id = ? AND type = 'artifact.imported'", [plan.import_id])
    return found["n"][0].as_py() >= 1 + len(plan.files)  # the source's event and one per file (`_drafts`)


def _drafts(plan: ImportPlan) -> list[EventDraft]:
    source = ArtifactImported(
        kind=plan.source_kind,
        path=str(plan.root),
        sha256=plan.digest,
        rows=len(plan.files),
        metadata={**plan.metadata, "import_id": plan.import_id},
    )
    drafts = [EventDraft(source)]
    for item in sorted(plan.files, key=lambda f: (f.kind, f.relative_path)):
        drafts.append(
            EventDraft(
                ArtifactImported(
                    kind=item.kind,
                    path=str(item.path),
                    sha256=item.sha256,
                    blob_sha256=item.sha256,
                    rows=item.rows,
                    metadata={
                        **item.metadata,
                        "source_kind": plan.source_kind,
                        "relative_path": item.relative_path,
                        "media_type": item.media_type,
                    },
                ),
            )
        )
    return drafts


async def _write(log: EventLog, plan: ImportPlan) -> None:
    blobs = {item.sha256: item for item in plan.files}
    async with log.writer(plan.import_id) as writer:
        for item in blobs.values():
            await writer.put_blob(item.content, item.media_type)
        for draft in _drafts(plan):
            await writer.emit(draft)


def record_import(log: EventLog, plan: ImportPlan) -> ImportResult:
    """Append the plan's events (nothing when this source is already in the log) and seal them."""
    result = ImportResult(plan.import_id, plan.source_kind, str(plan.root), len(plan.files), "already imported")
    if imported_whole(log, plan):
        return result
    native = log.sql("SELECT count(*) AS n FROM events WHERE run_id = ? AND type <> 'artifact.imported'", [plan.import_id])
    if native["n"][0].as_py():  # a run named so before run ids of that form were refused: the two would read as one
        raise ArtifactError(f"{plan.root}: its import id {plan.import_id} names a run of this log that is no import; not imported")
    with settled_heap():  # the plan holds every file's content and metadata until the write ends
        run_blocking(_write, log, plan)
    try:
        log.seal([plan.import_id])
    except LogLockedError:
        pass  # readers see live segments too; `eviscene log seal` catches up later
    return ImportResult(plan.import_id, plan.source_kind, str(plan.root), len(plan.files), "imported")


def import_path(log: EventLog, path: str | Path, kind: str | None = None) -> ImportResult:
    """Check and import one source; raises ArtifactError naming the file (and line) at fault."""
    return record_import(log, plan_import(Path(path), kind))
