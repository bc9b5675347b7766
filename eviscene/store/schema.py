"""Arrow schemas of the live segments; they mirror schema/migrations' tables column for column."""

import pyarrow as pa

EVENT_SCHEMA = pa.schema(
    [
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("event_id", pa.string(), nullable=False),
        pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("episode_id", pa.string()),
        pa.field("attempt", pa.int32()),
        pa.field("type", pa.string(), nullable=False),
        pa.field("step", pa.int32()),
        pa.field("payload", pa.string(), nullable=False),
        pa.field("prev_hash", pa.string(), nullable=False),
        pa.field("hash", pa.string(), nullable=False),
    ]
)

BLOB_SCHEMA = pa.schema(
    [
        pa.field("sha256", pa.string(), nullable=False),
        pa.field("media_type", pa.string(), nullable=False),
        pa.field("size", pa.int64(), nullable=False),
        pa.field("content", pa.binary(), nullable=False),
    ]
)

EVENT_COLUMNS = ", ".join(EVENT_SCHEMA.names)
BLOB_COLUMNS = ", ".join(BLOB_SCHEMA.names)
