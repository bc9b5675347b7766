-- The archive of sealed events. Live runs write Parquet segments beside this file
-- (<log>.live/<run_id>/); sealing copies them here in one transaction.
CREATE TABLE events (
    seq        BIGINT      NOT NULL,  -- gapless within a run, from 1, assigned by the run's writer
    event_id   VARCHAR     NOT NULL,  -- idempotency key
    ts         TIMESTAMPTZ NOT NULL,
    run_id     VARCHAR     NOT NULL,
    episode_id VARCHAR,               -- NULL for run-level events
    attempt    INTEGER,               -- episode attempt (resume starts a new one); NULL for run-level
    type       VARCHAR     NOT NULL,
    step       INTEGER,               -- index of the event within its episode attempt
    payload    JSON        NOT NULL,  -- canonical JSON of the typed payload
    prev_hash  VARCHAR     NOT NULL,
    hash       VARCHAR     NOT NULL,  -- sha256(prev_hash, canonical event): the run's chain
    PRIMARY KEY (event_id),
    UNIQUE (run_id, seq)
);

-- Content-addressed large content (page text, images, raw requests); events hold the hash.
CREATE TABLE blobs (
    sha256     VARCHAR NOT NULL PRIMARY KEY,
    media_type VARCHAR NOT NULL,
    size       BIGINT  NOT NULL,
    content    BLOB    NOT NULL
);

-- Live segment files already copied into the archive: readers skip them, so a crash
-- between the sealing commit and the file deletion never double-counts an event.
CREATE TABLE sealed_segments (
    run_id    VARCHAR NOT NULL,
    file_name VARCHAR NOT NULL,
    sealed_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run_id, file_name)
);
