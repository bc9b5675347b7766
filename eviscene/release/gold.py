"""The release's private evaluation gold.

Only scoring code paths may import this module; the agent (and anything that builds model
context, tool results or traces) never does. `eviscene.release` does not re-export it, so
the import stays visible and checkable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from eviscene.errors import ReleaseError
from eviscene.release.jsonl import read_jsonl_numbered
from eviscene.release.loader import Release


def load_gold(release: Release, content: bytes | None = None) -> dict[str, dict[str, Any]]:
    """Read ``artifacts.evaluation_gold`` (its bytes as `content` where a run read them
    already): one row per case, keyed by case_id, file order.

    Each row needs a non-empty string ``case_id`` and a ``label`` from the release's
    ``label_set``; a case_id may appear once. Rows are returned whole.
    """
    path = release.artifacts.evaluation_gold
    if path is None:
        raise ReleaseError(f"{release.manifest_path}: release declares no evaluation_gold artifact")
    gold: dict[str, dict[str, Any]] = {}
    first_line: dict[str, int] = {}
    for line_number, row in read_jsonl_numbered(path, content):
        where = f"{path}:{line_number}"
        case_id = row.get("case_id")
        if not isinstance(case_id, str) or not case_id.strip():
            raise ReleaseError(f"{where}: 'case_id' must be a non-empty string, got {case_id!r}")
        if case_id in first_line:
            raise ReleaseError(
                f"{where}: duplicate case_id {case_id!r} (first on line {first_line[case_id]})"
            )
        first_line[case_id] = line_number
        if "label" not in row:
            raise ReleaseError(f"{where}: case {case_id!r} has no 'label'")
        label = row["label"]
        if label not in release.label_set:
            raise ReleaseError(
                f"{where}: case {case_id!r} label {label!r} is not in the release label_set "
                f"({', '.join(release.label_set)})"
            )
        gold[case_id] = row
    return gold


def require_gold_for(gold: dict[str, dict[str, Any]], case_ids: Iterable[str], gold_file: Path) -> None:
    """Fail when a selected case has no gold row (`gold_file`, then the seed's wording; first 10 missing IDs named)."""
    missing = [case_id for case_id in case_ids if case_id not in gold]
    if missing:
        more = f" (and {len(missing) - 10} more)" if len(missing) > 10 else ""
        raise ReleaseError(
            f"{gold_file}: evaluation-gold rows missing runtime case IDs: " + ", ".join(missing[:10]) + more
        )
