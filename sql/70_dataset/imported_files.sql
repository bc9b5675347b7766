-- view: imported_files
-- grain: one row per file an import brought into the log
-- key: import_id, kind, relative_path
-- Every imported file with its kind (run_manifest, trace, trajectory_scores,
-- trajectory_sft, perception_trajectories, accepted_release_manifest, selected_episodes,
-- action_only, sft_eligibility, semantic_reward, case_split, runtime_store), the path it
-- was read from, its sha256, the blob holding its bytes and whether it is JSONL (one object
-- per line) or one JSON document.
CREATE OR REPLACE VIEW imported_files AS
SELECT
    run_id AS import_id,
    payload->>'kind' AS kind,
    payload->'metadata'->>'source_kind' AS source_kind,
    payload->'metadata'->>'relative_path' AS relative_path,
    payload->>'path' AS path,
    payload->>'sha256' AS sha256,
    payload->>'blob_sha256' AS blob_sha256,
    (payload->>'rows')::BIGINT AS rows,
    payload->'metadata'->>'episode_id' AS episode_id,
    (payload->'metadata'->>'media_type') = 'application/jsonl' AS is_jsonl
FROM events
WHERE type = 'artifact.imported' AND starts_with(run_id, 'import-') AND (payload->'metadata'->>'source_kind') IS NOT NULL;
