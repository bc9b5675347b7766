"""Arrow schemas of the live segments; they mirror schema/migrations' tables column for column.

The column names are plain text (readers build SQL from them); the Arrow schemas are built on
first use, so a command that only reads the log never imports pyarrow."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    import pyarrow as pa

# (name, Arrow type from the pyarrow module, nullable)
_Field = tuple[str, Callable[[Any], "pa.DataType"], bool]

_EVENT_FIELDS: tuple[_Field, ...] = (
    ("seq", lambda pa: pa.int64(), False),
    ("event_id", lambda pa: pa.string(), False),
    ("ts", lambda pa: pa.timestamp("us", tz="UTC"), False),
    ("run_id", lambda pa: pa.string(), False),
    ("episode_id", lambda pa: pa.string(), True),
    ("attempt", lambda pa: pa.int32(), True),
    ("type", lambda pa: pa.string(), False),
    ("step", lambda pa: pa.int32(), True),
    ("payload", lambda pa: pa.string(), False),
    ("prev_hash", lambda pa: pa.string(), False),
    ("hash", lambda pa: pa.string(), False),
)

_BLOB_FIELDS: tuple[_Field, ...] = (
    ("sha256", lambda pa: pa.string(), False),
    ("media_type", lambda pa: pa.string(), False),
    ("size", lambda pa: pa.int64(), False),
    ("content", lambda pa: pa.binary(), False),
)

EVENT_COLUMNS = ", ".join(name for name, _, _ in _EVENT_FIELDS)
BLOB_COLUMNS = ", ".join(name for name, _, _ in _BLOB_FIELDS)

_SCHEMAS = {"EVENT_SCHEMA": _EVENT_FIELDS, "BLOB_SCHEMA": _BLOB_FIELDS}


def __getattr__(name: str) -> "pa.Schema":
    """EVENT_SCHEMA and BLOB_SCHEMA, built (and kept) on first use."""
    if name not in _SCHEMAS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import pyarrow as pa

    schema = pa.schema([pa.field(field, arrow_type(pa), nullable=nullable) for field, arrow_type, nullable in _SCHEMAS[name]])
    globals()[name] = schema
    return schema
