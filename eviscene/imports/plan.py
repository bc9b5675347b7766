"""What one import brings into the log: a source (a run directory, an accepted release, a
case split, a directory of gate artifacts) and its files, checked before anything is written.

The import's run id is derived from the bytes it imports (`import-<sha256>`), so importing the
same source twice finds the run already in the log and writes nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from eviscene.imports.files import refuse_undecodable_name, sha256_bytes
from eviscene.rules.canonical import canonical_json

SOURCE_KINDS = ("run_dir", "accepted_release", "case_split", "gate_artifacts")
# File kinds holding one JSON object per line; every other kind is one JSON document.
JSONL_KINDS = frozenset(
    {"trajectory_scores", "trajectory_sft", "perception_trajectories", "selected_episodes", "action_only", "case_split",
     "predictions", "episode_predictions", "run_results", "process_metrics", "reference_chain_metrics", "rollout_groups",
     "post_rollout_rewards"}
)


@dataclass
class ImportedFile:
    kind: str  # run_manifest, trace, trajectory_scores, trajectory_sft, perception_trajectories, ...
    path: Path | str  # a trace's stays text: a Path per file cost seconds at 100k files
    relative_path: str
    content: bytes
    rows: int = 1
    metadata: dict[str, Any] = field(default_factory=dict)
    sha256: str = field(init=False)

    def __post_init__(self) -> None:
        refuse_undecodable_name(self.path)  # every file an import keeps is made here: the one place to check its name
        self.sha256 = sha256_bytes(self.content)  # read several times per file; content never changes

    @property
    def media_type(self) -> str:
        if self.kind == "run_file":
            return "application/octet-stream"
        return "application/jsonl" if self.kind in JSONL_KINDS else "application/json"


@dataclass
class ImportPlan:
    source_kind: str
    root: Path
    files: list[ImportedFile]
    metadata: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def digest(self) -> str:
        """sha256 over the source kind and each file's relative path and sha256."""
        listing = sorted([f.relative_path, f.sha256] for f in self.files)
        return sha256_bytes(canonical_json({"kind": self.source_kind, "files": listing}).encode("utf-8"))

    @property
    def import_id(self) -> str:
        return f"import-{self.digest[:32]}"


_IMPORT_ID = re.compile(r"import-[0-9a-f]{32}")


def is_import_id(run_id: str) -> bool:
    """Whether `run_id` has an import's form (ImportPlan.import_id): no native run may take one."""
    return _IMPORT_ID.fullmatch(run_id) is not None
