"""An accepted release's per-episode runtime store (seed `_accepted_release_runtime_store`):
it must resolve inside the release, however spelled (`stores/../stores/0` and an absolute
path inside are taken, as the seed takes them; a link out is not), hold context manifests
and an artifact store. The log records its file listing (each file's sha256), not its contents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eviscene.imports.errors import ArtifactError
from eviscene.imports.files import inside_import, sha256_bytes, text
from eviscene.imports.plan import ImportedFile
from eviscene.rules.canonical import seed_canonical_json


def runtime_store_file(root: Path, row: dict[str, Any], *, required: bool) -> ImportedFile | None:
    raw, episode_id = text(row.get("runtime_store_path", "")), text(row.get("episode_id", ""))
    if not raw:
        if required:
            raise ArtifactError(f"accepted-release v4 selected episode has no runtime store: {episode_id}")
        return None
    root = root.resolve()
    what = f"accepted-release runtime store of {episode_id}"
    store = inside_import(root, raw, what=what, refuse_only_escapes=True)  # the seed's `(root / raw).resolve()` inside root
    if not store.is_dir():
        raise ArtifactError(f"accepted-release runtime store is missing: {episode_id}: {store}")
    if not any((store / "context").glob("*.json")):
        raise ArtifactError(f"accepted-release runtime store has no context manifests: {episode_id}")
    if not (store / "artifacts" / "sha256").is_dir():
        raise ArtifactError(f"accepted-release runtime store has no artifact store: {episode_id}")
    try:
        expected_files = int(row.get("runtime_store_file_count", 0) or 0)
    except (TypeError, ValueError):
        expected_files = 0
    if required and expected_files < 1:
        raise ArtifactError(f"accepted-release v4 selected episode has invalid runtime store metadata: {episode_id}")
    listing = {}
    for path in sorted(store.rglob("*")):
        if path.is_file():  # a link in the store must stay in the release: its hash vouches for the file
            file_bytes = inside_import(root, path.relative_to(root).as_posix(), what=what).read_bytes()
            listing[path.relative_to(store).as_posix()] = sha256_bytes(file_bytes)
    content = seed_canonical_json({"episode_id": episode_id, "files": listing}, ensure_ascii=True).encode("utf-8")
    relative = store.relative_to(root).as_posix()
    return ImportedFile(
        "runtime_store", store, f"{relative}/", content, rows=len(listing),
        metadata={"episode_id": episode_id, "runtime_store_path": str(store)},
    )
