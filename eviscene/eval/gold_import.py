"""The files a run is scored and audited by (evaluation gold, protocols, source-access policy).

A run reads each once, when it starts (`read_scoring_files`): `run.started` pins their sha256
and size (never their content), the preflight checks those bytes, the tools enforce that
policy, and the run's end imports exactly those bytes as `artifact.imported` events (content in
a blob), so every score is a view over the log and a file edited mid-run changes nothing.
Only this scoring path reads gold; the agent never does. The policy is attached for the trace
audit only: it is never put into model context."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from eviscene.errors import ReleaseError
from eviscene.events import ArtifactImported, FileDescriptor
from eviscene.release import Release, sha256_file
from eviscene.release.gold import load_gold
from eviscene.rules.paths import special_file_kind
from eviscene.store import EventDraft, RunWriter

SCORING_KINDS = ("evaluation_gold", "classification_protocol", "process_reference_protocol", "source_access_policy")


@dataclass(frozen=True)
class ScoringFile:
    """One scoring file as the run read it when it started."""

    kind: str
    path: Path
    content: bytes = field(repr=False)
    sha256: str

    def descriptor(self) -> FileDescriptor:
        return FileDescriptor(path=str(self.path), sha256=self.sha256, size=len(self.content))

    def change_note(self, run_id: str) -> str | None:
        """One line when the file on disk no longer holds the bytes the run read, else None."""
        try:
            current = sha256_file(self.path)
        except OSError:
            current = None
        if current == self.sha256:
            return None
        now = f"the file is now sha256 {current}" if current else "the file is gone"
        return (f"{self.path} changed while run {run_id} ran; the run keeps the {self.kind} it read when it "
                f"started (sha256 {self.sha256}); {now}")


def read_scoring_files(release: Release, policy_path: Path | None) -> dict[str, ScoringFile]:
    """The release's gold and protocols and the policy the run enforces, by kind, each read once."""
    files = {}
    for kind in SCORING_KINDS:
        # the policy may be another file (--source-access-policy); the rest are the release's
        path = policy_path if kind == "source_access_policy" else getattr(release.artifacts, kind)
        if path is None:
            continue
        special = special_file_kind(path)
        if special:  # reading a named pipe would wait for a writer forever
            raise ReleaseError(f"{path}: the {kind.replace('_', ' ')} is {special}, not a regular file")
        try:
            content = path.read_bytes()
        except OSError as exc:
            raise ReleaseError(f"{path}: cannot read the {kind}: {exc.strerror or exc}") from None
        files[kind] = ScoringFile(kind, path, content, hashlib.sha256(content).hexdigest())
    return files


async def import_scoring_files(writer: RunWriter, release: Release, files: list[ScoringFile]) -> None:
    """Attach the files to the run as it read them when it started, whatever they hold now;
    the same bytes are stored once."""
    for file in files:
        rows = len(load_gold(release, file.content)) if file.kind == "evaluation_gold" else 1
        await writer.put_blob(file.content, "application/jsonl" if file.kind == "evaluation_gold" else "application/json")
        await writer.emit(
            EventDraft(
                ArtifactImported(
                    kind=file.kind,
                    path=str(file.path),
                    sha256=file.sha256,
                    blob_sha256=file.sha256,
                    rows=rows,
                    metadata={"release_id": release.release_id},
                )
            )
        )
