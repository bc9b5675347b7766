-- view: native_dataset_records
-- grain: one row per finished episode of a native run the exporter rebuilt
-- key: run_id, episode_id
-- What Python builds once from a native run's events and hands to the dataset views: the
-- seed-style trace (and the sha256 of its materialized file), the SFT trajectory in TRL's
-- conversational format and the perception example (eviscene.exports.trajectories). The
-- exporter fills the temporary table `native_dataset_records_input`; it is empty
-- elsewhere, so outside an export native episodes have no exportable trajectory.
CREATE TEMP TABLE IF NOT EXISTS native_dataset_records_input (
    run_id VARCHAR, episode_id VARCHAR, trace JSON, trace_sha256 VARCHAR, trajectory JSON, perception JSON
);
CREATE OR REPLACE VIEW native_dataset_records AS
SELECT run_id, episode_id, trace, trace_sha256, trajectory, perception FROM native_dataset_records_input;
