-- view: predictions
-- grain: one row per case with a completed rollout 0
-- key: run_id, case_id
-- The seed's predictions.jsonl, consumable by a classification scorer: one row per public
-- case, from rollout 0 only; multi-rollout analysis belongs to episode_predictions.
CREATE OR REPLACE VIEW predictions AS
SELECT run_id, case_id, prediction, confidence
FROM episode_predictions
WHERE rollout_index = 0;
