-- view: dataset_sources
-- grain: one row per source of candidate episodes in the export
-- key: source_id
-- The runs whose episodes are candidates: native runs of the log (source_kind `run`),
-- imported run directories (`run_dir`) and an imported accepted release
-- (`accepted_release`), each with the fields of the seed manifest's `source_runs` entry and
-- whether its release prohibits training. run_id, git_commit and release_id are JSON: seed 002
-- copies them from a run manifest as the values they are (a number stays a number). The
-- exporter names the sources in the temporary table `export_sources`, each with its
-- `position` in the user's order (seed 002 reads its run directories in the order given,
-- which orders the errors it raises); when it is empty (eviscene sql) every native run is a
-- source, in run id order.
CREATE TEMP TABLE IF NOT EXISTS export_sources (source_id VARCHAR, position INTEGER);
CREATE OR REPLACE VIEW dataset_sources AS
WITH chosen AS (
    SELECT source_id, position FROM export_sources
    UNION ALL
    SELECT run_id, row_number() OVER (ORDER BY run_id) FROM run_manifests WHERE NOT EXISTS (SELECT 1 FROM export_sources)
),
imported_manifests AS (
    SELECT f.import_id, decode(b.content)::JSON AS manifest
    FROM imported_files f
    JOIN chosen c ON c.source_id = f.import_id
    JOIN blobs b ON b.sha256 = f.blob_sha256
    WHERE f.kind = 'run_manifest'
)
SELECT
    r.run_id AS source_id,
    c.position AS source_position,
    'run' AS source_kind,
    to_json(r.run_id) AS source_run_id,
    NULL::VARCHAR AS path,
    to_json(r.git_commit) AS git_commit,
    to_json(r.release_id) AS release_id,
    coalesce(r.training_prohibited_flag, false) OR r.release_stage = 'development_subset' AS training_prohibited
FROM run_manifests r
JOIN chosen c ON c.source_id = r.run_id
UNION ALL
SELECT
    s.import_id,
    c.position,
    s.source_kind,
    m.manifest->'run_id',
    s.path,
    m.manifest->'git_commit',
    m.manifest->'benchmark'->'release_id',
    coalesce(TRY_CAST(m.manifest->'benchmark'->>'training_prohibited' AS BOOLEAN), false)
        OR coalesce((m.manifest->'benchmark'->>'release_stage') = 'development_subset', false)
FROM import_sources s
JOIN imported_manifests m USING (import_id)
JOIN chosen c ON c.source_id = s.import_id
WHERE s.source_kind IN ('run_dir', 'accepted_release');
