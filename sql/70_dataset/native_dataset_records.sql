-- view: native_dataset_records
-- grain: one row per finished episode of a native run the export reads
-- key: run_id, episode_id
-- Native episodes as the dataset views see them: the native_candidates facts of the
-- export's runs (copied by the exporter into the temporary table `native_candidate_input`,
-- so the dataset views never re-plan the scoring views) plus what Python builds once from
-- the events (eviscene.exports.trajectories, in `native_record_input`): the seed-style
-- trace and the sha256 of its materialized file, the SFT trajectory in TRL's
-- conversational format and the perception example with its line in the materialized
-- perception_trajectories.jsonl. Both tables are empty outside an export; query
-- native_candidates for the live facts.
CREATE TEMP TABLE IF NOT EXISTS native_candidate_input (
    run_id VARCHAR, episode_id VARCHAR, case_id VARCHAR, image_sha256 VARCHAR, source_family_keys VARCHAR[],
    score_present BOOLEAN, teacher_score DOUBLE, raw_reasons VARCHAR[], eligible_flag JSON,
    native_eligible BOOLEAN, native_reasons VARCHAR[], decision_policy_version VARCHAR, training_prohibited BOOLEAN
);
CREATE TEMP TABLE IF NOT EXISTS native_record_input (
    run_id VARCHAR, episode_id VARCHAR, trace JSON, trace_sha256 VARCHAR, trajectory JSON, perception JSON, perception_line BIGINT
);
CREATE OR REPLACE VIEW native_dataset_records AS
SELECT c.*, r.trace, r.trace_sha256, r.trajectory, r.perception, r.perception_line
FROM native_candidate_input c
LEFT JOIN native_record_input r USING (run_id, episode_id);
