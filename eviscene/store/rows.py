"""Typed Python-side rows of the log's tables (sqlmodel models, used without an ORM session:
rows come from DuckDB as Arrow and are validated into these)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel import Field, SQLModel

from eviscene.events import PAYLOAD_ADAPTER


class EventRow(SQLModel):
    seq: int = Field(description="Gapless within the run, from 1.")
    event_id: str
    ts: datetime
    run_id: str
    episode_id: str | None = None
    attempt: int | None = None
    type: str
    step: int | None = None
    payload: dict[str, Any]
    prev_hash: str
    hash: str

    def typed_payload(self) -> Any:
        """The payload as its event model (RunStarted, ToolReturned, …)."""
        return PAYLOAD_ADAPTER.validate_python(self.payload)


class BlobRow(SQLModel):
    sha256: str
    media_type: str
    size: int
    content: bytes
