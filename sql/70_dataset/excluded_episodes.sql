-- view: excluded_episodes
-- grain: one row per candidate episode the export does not accept
-- key: source_id, episode_id
-- Seed 002's excluded_episode_metadata row (candidate metadata with the eligibility and
-- reasons after selection, whether it had a trajectory and a perception example) plus
-- `excluded_because`, the decisive reason in words: ineligible, a better rollout of the
-- same case, or the case's best rollout has no exportable trajectory.
CREATE OR REPLACE VIEW excluded_episodes AS
SELECT
    * EXCLUDE (accepted),
    has_trajectory::INTEGER AS trajectory_sft_rows,
    has_perception::INTEGER AS perception_example_count,
    CASE
        WHEN selected AND NOT has_trajectory THEN 'best rollout of its case has no exportable trajectory'
        WHEN eligible_before_selection AND NOT selected THEN 'a better rollout of the same case was selected: ' || case_best_episode_id
        ELSE 'not eligible: ' || coalesce(array_to_string(training_exclusion_reasons, ', '), '')
    END AS excluded_because
FROM rollout_selection
WHERE NOT accepted;
