-- view: dataset_perception
-- grain: one row per source episode with a perception example
-- key: source_id, episode_id
-- The image-only perception example of each episode (the target is its perception
-- report): rebuilt from a native run's perception.reported event, or the row of an
-- imported source's perception_trajectories.jsonl; with the source's position among the
-- export's sources and the example's line in that file (a materialized run's, for a native
-- one): the order in which seed 002 reads them. An imported example's episode_id is kept as
-- written, as the seed keys it (` a-r0 ` names no episode whose trace is `a-r0`).
-- The exporter snapshots it into export_snapshot.dataset_perception for the decision views.
CREATE OR REPLACE VIEW dataset_perception AS
SELECT s.source_id, s.source_position, n.perception_line AS line_number, n.episode_id, n.perception AS example
FROM dataset_sources s
JOIN native_dataset_records n ON n.run_id = s.source_id
WHERE s.source_kind = 'run' AND n.perception IS NOT NULL
UNION ALL
SELECT s.source_id, s.source_position, r.line_number, py_text(r.row->'episode_id'), r.row
FROM dataset_sources s
JOIN imported_rows r ON r.import_id = s.source_id AND r.kind = 'perception_trajectories';
CREATE TABLE IF NOT EXISTS export_snapshot.dataset_perception (
    source_id VARCHAR,
    source_position BIGINT,
    line_number BIGINT,
    episode_id VARCHAR,
    example JSON
);
