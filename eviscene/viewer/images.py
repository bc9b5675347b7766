"""The pictures a page shows: the case image and the evidence pages' images, found through
the log (never through a path a request names). A file is served only when it lies inside
the run's release and its sha256 is the one the log recorded."""

from __future__ import annotations

import base64
import hashlib
import io
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eviscene.log import EventLog
from eviscene.rules.paths import PathEscapeError, resolve_inside
from eviscene.tools.pages import IMAGE_FRAGMENT

THUMBNAIL_PIXELS = 360
_MEDIA_TYPES = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png", ".gif": "image/gif", ".webp": "image/webp"}

_INDEX_SQL = """
SELECT m.manifest->'benchmark'->>'path' AS benchmark, e.image_sha256 AS sha256, e.image_path AS path, 'case' AS kind
FROM run_manifests m JOIN episodes e USING (run_id) WHERE m.run_id = $run
UNION
SELECT m.manifest->'benchmark'->>'path', NULL, t.data::VARCHAR, 'tool'
FROM run_manifests m JOIN tool_calls t USING (run_id) WHERE m.run_id = $run AND t.data::VARCHAR LIKE '%#image=%'
"""


def walk_dicts(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk_dicts(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk_dicts(value)


def page_images(data: Any) -> list[dict[str, Any]]:
    """Every image a tool result shows ({image_url, sha256, alt}), in order, once each."""
    found, seen = [], set()
    for node in walk_dicts(data):
        url, sha = node.get("image_url") or node.get("reference_image_url"), node.get("sha256") or node.get("reference_image_sha256")
        if isinstance(url, str) and isinstance(sha, str) and sha not in seen:
            seen.add(sha)
            found.append({"image_url": url, "sha256": sha, "alt": node.get("alt") or node.get("caption") or ""})
    return found


def _release_root(benchmark: str | None) -> Path | None:
    # <release>/runtime_input/cases.jsonl
    return Path(benchmark).resolve().parent.parent if benchmark else None


def _inside(root: Path, relative: str) -> Path | None:
    """The file `relative` names inside `root` (`resolve_inside`), else None."""
    try:
        path = resolve_inside(root, relative, root_name="release folder")
    except PathEscapeError:
        return None
    return path if path.is_file() else None


class RunImages:
    """sha256 -> file for one run's pictures, built on first use."""

    def __init__(self, log: EventLog, run_id: str):
        self.log, self.run_id = log, run_id
        self._paths: dict[str, Path] | None = None
        self._lock = threading.Lock()

    def _index(self) -> dict[str, Path]:
        import orjson

        paths: dict[str, Path] = {}
        for row in self.log.sql(_INDEX_SQL, {"run": self.run_id}).to_pylist():
            root = _release_root(row["benchmark"])
            if root is None:
                continue
            if row["kind"] == "case":
                found = _inside(root, row["path"]) if row["path"] else None
                if found:
                    paths[row["sha256"]] = found
                continue
            for image in page_images(orjson.loads(row["path"])):
                relative = image["image_url"].partition(IMAGE_FRAGMENT)[2]
                found = _inside(root / "corpus", relative) if relative else None
                if found:
                    paths.setdefault(image["sha256"], found)
        return paths

    def path(self, sha256: str) -> Path | None:
        with self._lock:
            if self._paths is None:
                self._paths = self._index()
        found = self._paths.get(sha256)
        if found is None or hashlib.sha256(found.read_bytes()).hexdigest() != sha256:
            return None
        return found

    def read(self, sha256: str) -> tuple[bytes, str] | None:
        found = self.path(sha256)
        if found is None:
            return None
        return found.read_bytes(), _MEDIA_TYPES.get(found.suffix.lower(), "application/octet-stream")

    def thumbnail_data_uri(self, sha256: str) -> str | None:
        """A small JPEG of the picture as a data: URI (the report embeds these), decoded as the
        agent's tools decode it (within their limits; a picture cut short as far as it goes); None
        for a picture they cannot read, whose episode the report shows without it."""
        from eviscene.tools.images import open_image

        found = self.path(sha256)
        if found is None:
            return None
        try:
            image, _size = open_image(found, max_side=THUMBNAIL_PIXELS)
        except ValueError:  # UndecodableImage, ImageTooLarge
            return None
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG", quality=78, optimize=True)
        return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
