-- view: imported_files
-- grain: one row per file an import brought into the log
-- key: import_id, kind, relative_path
-- Every imported file with its kind (run_manifest, trace, trajectory_scores,
-- trajectory_sft, perception_trajectories, accepted_release_manifest, selected_episodes,
-- action_only, sft_eligibility, semantic_reward, case_split, runtime_store), the path it
-- was read from (in an export, under the path the export was given: export_roots), its sha256, the blob holding its bytes and whether it is JSONL (one object
-- per line) or one JSON document.
-- Each payload is parsed once for all its fields (a `->>` per field parsed it ten times).
CREATE OR REPLACE VIEW imported_files AS
WITH fields AS (
    SELECT
        run_id,
        json_extract_string(payload, [
            '$.kind', '$.metadata.source_kind', '$.metadata.relative_path', '$.path', '$.sha256', '$.blob_sha256', '$.rows',
            '$.metadata.episode_id', '$.metadata.media_type'
        ]) AS f
    FROM events
    WHERE type = 'artifact.imported' AND starts_with(run_id, 'import-')
)
SELECT
    run_id AS import_id,
    f[1] AS kind,
    f[2] AS source_kind,
    f[3] AS relative_path,
    CASE WHEN r.import_id IS NULL THEN f[4] ELSE r.root || substr(f[4], length(r.recorded_root) + 1) END AS path,
    f[5] AS sha256,
    f[6] AS blob_sha256,
    f[7]::BIGINT AS rows,
    f[8] AS episode_id,
    f[9] = 'application/jsonl' AS is_jsonl
FROM fields
LEFT JOIN export_roots r ON r.import_id = fields.run_id
WHERE f[2] IS NOT NULL;
