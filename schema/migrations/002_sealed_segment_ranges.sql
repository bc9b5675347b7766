-- What each sealed segment held, copied from its manifest line at sealing (merge brings the
-- source's records along): verify checks the archive's rows against them, so a cut-off tail
-- or a deleted range of a sealed run shows. The run's final seq and hash are those of its
-- record with the highest last_seq. NULL in records sealed before this migration.
ALTER TABLE sealed_segments ADD COLUMN rows BIGINT;
ALTER TABLE sealed_segments ADD COLUMN sha256 VARCHAR;
ALTER TABLE sealed_segments ADD COLUMN first_seq BIGINT;  -- events segments only, as are the next three
ALTER TABLE sealed_segments ADD COLUMN last_seq BIGINT;
ALTER TABLE sealed_segments ADD COLUMN first_prev_hash VARCHAR;
ALTER TABLE sealed_segments ADD COLUMN last_hash VARCHAR;
