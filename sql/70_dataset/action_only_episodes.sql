-- view: action_only_episodes
-- grain: one row per action-only episode of the export's accepted release
-- key: source_id, episode_id
-- Traces of an accepted release whose selected row's training_buckets lack reasoning_sft:
-- never reasoning SFT candidates, but their perception target is valid training data, in
-- the case's fixed split. The exporter snapshots this view into
-- export_snapshot.action_only_episodes for the decision views.
CREATE OR REPLACE VIEW action_only_episodes AS
SELECT
    a.source_id,
    a.episode_id,
    a.case_id,
    a.source_run_id,
    a.source_trace,
    a.runtime_store_path,
    f.case_id IS NOT NULL AS in_fixed_split,
    f.split AS fixed_split,
    f.split_group_id AS fixed_split_group_id
FROM imported_traces a
LEFT JOIN fixed_case_splits f ON f.case_id = a.case_id
WHERE a.action_only;
CREATE TABLE IF NOT EXISTS export_snapshot.action_only_episodes (
    source_id VARCHAR,
    episode_id VARCHAR,
    case_id VARCHAR,
    source_run_id JSON,
    source_trace VARCHAR,
    runtime_store_path VARCHAR,
    in_fixed_split BOOLEAN,
    fixed_split VARCHAR,
    fixed_split_group_id VARCHAR
);
