-- view: perception_examples
-- grain: one row per perception example the export writes
-- key: episode_id
-- The image-only perception task (seed 002): the perception example of every accepted
-- short-route episode in its split, plus one for every action-only episode of an accepted
-- release (excluded from reasoning SFT, but its perception target is valid) in its case's
-- fixed split. An action-only case missing from the fixed split is an export error.
-- Reads the export's snapshots of dataset_perception and action_only_episodes.
CREATE OR REPLACE VIEW perception_examples AS
SELECT r.episode_id, r.case_id, r.split, r.split_group_id, false AS action_only, p.example
FROM dataset_rows r
JOIN export_snapshot.dataset_perception p USING (episode_id)
WHERE r.sft_route = 'short_sft'
UNION ALL
SELECT a.episode_id, a.case_id, a.fixed_split, a.fixed_split_group_id, true, p.example
FROM export_snapshot.action_only_episodes a
JOIN export_snapshot.dataset_perception p USING (episode_id)
WHERE a.in_fixed_split;
