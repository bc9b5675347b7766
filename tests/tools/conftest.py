"""Fixtures of the tools tests (helpers live in tools_fixtures.py, pictures in
tools_images.py: conftest modules share one name across test folders, so nothing is
imported from here)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from tools_fixtures import build_news_corpus  # noqa: E402


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def news_corpus(tmp_path: Path) -> dict[str, Any]:
    """A small web: an origin photo, a re-use of it, unrelated pages, an edited-photo case,
    and four pages the policy must hide (domain, subdomain, URL prefix, content hash)."""
    return build_news_corpus(tmp_path)
