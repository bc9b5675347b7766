-- view: import_sources
-- grain: one row per import (a run directory, accepted release, case split or gate directory)
-- key: import_id
-- Each source `eviscene import` brought into the log, from its source event: the kind, the
-- path it was read from (in an export, the path the export was given: export_roots), the
-- sha256 over its files (which names the import), how many files and the kind-specific
-- metadata (a run directory's run_id, git_commit, release_id).
CREATE OR REPLACE VIEW import_sources AS
SELECT
    run_id AS import_id,
    payload->>'kind' AS source_kind,
    coalesce(r.root, payload->>'path') AS path,
    payload->>'sha256' AS sha256,
    (payload->>'rows')::BIGINT AS files,
    payload->'metadata' AS metadata,
    ts AS imported_at
FROM events
LEFT JOIN export_roots r ON r.import_id = events.run_id
WHERE type = 'artifact.imported' AND (payload->'metadata'->>'import_id') = run_id;
