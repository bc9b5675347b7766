"""Tiny on-disk releases for the release tests: fake image bytes, no Pillow."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable

import pytest

LABELS = ["authentic", "out_of_context", "manipulated", "unverifiable"]


def write_jsonl(path: Path, rows: list[Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")


def _base_manifest(**overrides: Any) -> dict[str, Any]:
    manifest = {
        "schema_version": "ifv-runtime-release-v0.3",
        "release_id": "demo-release",
        "release_stage": "development_subset",
        "runtime_contract_version": "ifv-runtime-contract-v1",
        "input_mode": "image_only",
        "decision_policy_version": "unified-react-v1",
        "label_set": list(LABELS),
        "artifacts": {"evaluation_gold": "private/evaluation_gold.jsonl"},
    }
    manifest.update(overrides)
    return manifest


@pytest.fixture
def base_manifest() -> Callable[..., dict[str, Any]]:
    """A valid runtime-release manifest; keyword arguments replace its fields."""
    return _base_manifest


@pytest.fixture
def make_release(tmp_path: Path) -> Callable[..., Path]:
    """Build a release under tmp_path/release and return its cases.jsonl path.

    ``images`` maps case_id -> fake image bytes; each case row points at
    runtime_input/images/<case_id>.jpg with the bytes' true sha256 unless ``cases`` is
    given explicitly.
    """

    def build(
        *,
        images: dict[str, bytes] | None = None,
        cases: list[Any] | None = None,
        gold: list[Any] | None = None,
        manifest: dict[str, Any] | None = None,
    ) -> Path:
        root = tmp_path / "release"
        images = {"demo-0001": b"fake-jpeg-1", "demo-0002": b"fake-jpeg-2"} if images is None else images
        for case_id, data in images.items():
            image = root / "runtime_input" / "images" / f"{case_id}.jpg"
            image.parent.mkdir(parents=True, exist_ok=True)
            image.write_bytes(data)
        if cases is None:
            cases = [
                {
                    "case_id": case_id,
                    "image_path": f"runtime_input/images/{case_id}.jpg",
                    "image_sha256": hashlib.sha256(data).hexdigest(),
                }
                for case_id, data in images.items()
            ]
        if gold is None:
            gold = [{"case_id": case_id, "label": "authentic"} for case_id in images]
        write_jsonl(root / "runtime_input" / "cases.jsonl", cases)
        write_jsonl(root / "private" / "evaluation_gold.jsonl", gold)
        (root / "manifest.json").write_text(json.dumps(manifest or _base_manifest()), encoding="utf-8")
        return root / "runtime_input" / "cases.jsonl"

    return build
