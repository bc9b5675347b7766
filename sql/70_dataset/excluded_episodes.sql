-- view: excluded_episodes
-- grain: one row per candidate episode the export does not accept
-- key: source_id, episode_id
-- Seed 002's excluded_episode_metadata row (candidate metadata with the eligibility and
-- reasons after selection, whether it had a trajectory and a perception example) plus
-- `excluded_because`, the decisive reason in words: ineligible, a better rollout of the
-- same case, or an eligible rollout without an exportable trajectory (never the best of its
-- case where one per case is kept: only rollouts with one are ranked); and
-- `main_reason`, the decisive reason as a code (the first exclusion reason, or
-- no_exportable_trajectory_sft) that the export's summary counts.
CREATE OR REPLACE VIEW excluded_episodes AS
SELECT
    r.* EXCLUDE (accepted),
    r.has_trajectory::INTEGER AS trajectory_sft_rows,
    r.has_perception::INTEGER AS perception_example_count,
    CASE
        WHEN r.selected AND NOT r.has_trajectory THEN 'eligible, but has no exportable trajectory'
        WHEN r.eligible_before_selection AND NOT r.selected THEN 'a better rollout of the same case was selected: ' || r.case_best_episode_id
        ELSE 'not eligible: ' || coalesce(array_to_string(r.training_exclusion_reasons, ', '), '')
    END AS excluded_because,
    CASE
        WHEN r.selected AND NOT r.has_trajectory THEN 'no_exportable_trajectory_sft'
        ELSE coalesce(r.training_exclusion_reasons[1], 'not_eligible')
    END AS main_reason
FROM rollout_selection r
WHERE NOT r.accepted;
