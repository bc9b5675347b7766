-- view: imported_runs
-- grain: one row per run directory brought in with `eviscene import`
-- key: run_id
-- An imported run directory as a run: named by its import id (so it never collides with a
-- native run, or with the run it was materialized from), with the run directory's own
-- run_id, the path it was read from and its run_manifest.json, whose benchmark and agent
-- blocks have the shape of run.started's payload.
CREATE OR REPLACE VIEW imported_runs AS
SELECT
    s.import_id AS run_id,
    s.metadata->>'run_id' AS source_run_id,
    s.path,
    s.imported_at,
    decode(b.content)::JSON AS manifest
FROM import_sources s
JOIN imported_files f ON f.import_id = s.import_id AND f.kind = 'run_manifest'
JOIN blobs b ON b.sha256 = f.blob_sha256
WHERE s.source_kind = 'run_dir';
