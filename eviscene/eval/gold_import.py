"""Scoring artifacts enter the log as `artifact.imported` events (content in a blob), so
every score is a view over the log. Only this scoring path reads gold; the agent never does.
The source-access policy is attached the same way, for the trace audit only: it is never
put into model context."""

from __future__ import annotations

import hashlib
from pathlib import Path

from eviscene.events import ArtifactImported
from eviscene.release import Release
from eviscene.release.gold import load_gold
from eviscene.store import EventDraft, RunWriter


async def import_scoring_artifacts(writer: RunWriter, release: Release, *, policy_path: Path | None) -> None:
    """Attach the release's gold and protocols, and the policy the run enforced, to the run;
    the same bytes are stored once."""
    artifacts = release.artifacts
    for kind, path, media_type in (
        ("evaluation_gold", artifacts.evaluation_gold, "application/jsonl"),
        ("classification_protocol", artifacts.classification_protocol, "application/json"),
        ("process_reference_protocol", artifacts.process_reference_protocol, "application/json"),
        ("source_access_policy", policy_path, "application/json"),
    ):
        if path is None:
            continue
        content = path.read_bytes()
        rows = len(load_gold(release)) if kind == "evaluation_gold" else 1  # validates gold rows
        digest = hashlib.sha256(content).hexdigest()
        await writer.put_blob(content, media_type)
        await writer.emit(
            EventDraft(
                ArtifactImported(
                    kind=kind,
                    path=str(path),
                    sha256=digest,
                    blob_sha256=digest,
                    rows=rows,
                    metadata={"release_id": release.release_id},
                )
            )
        )
