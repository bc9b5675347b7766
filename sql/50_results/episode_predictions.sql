-- view: episode_predictions
-- grain: one row per episode that completed with a verdict
-- key: run_id, episode_id
-- A scorer row for each completed factual judgment of every rollout (the seed's
-- episode_predictions.jsonl); errored, timed-out and unjudged episodes have none.
CREATE OR REPLACE VIEW episode_predictions AS
SELECT run_id, episode_id, case_id, verdict AS prediction, confidence, prompt_group_id, rollout_index
FROM episodes
WHERE termination = 'completed' AND verdict IS NOT NULL;
