"""Fixtures shared by the dataset export tests."""

from __future__ import annotations

import pytest

from eviscene.log import EventLog


@pytest.fixture
def log(tmp_path) -> EventLog:
    """A fresh event log for one test."""
    return EventLog(tmp_path / "log.duckdb")
