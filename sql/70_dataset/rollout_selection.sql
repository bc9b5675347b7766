-- view: rollout_selection
-- grain: one row per candidate episode of the export
-- key: source_id, episode_id
-- Best rollout per case (seed 002): among the case's eligible episodes, the max of
-- (-len(red flags), teacher_score, episode_id), so a full tie goes to the larger
-- episode_id. The other eligible rollouts become ineligible with
-- lower_quality_rollout_for_case. An episode is accepted when it is its case's best
-- rollout and has an exportable trajectory: in derived mode the best rollout is chosen
-- before that check, so a best rollout without a trajectory drops its case (the runner-up
-- is not promoted); in frozen mode such episodes were already ineligible.
CREATE OR REPLACE VIEW rollout_selection AS
WITH ranked AS (
    SELECT
        *,
        CASE WHEN training_eligible THEN row_number() OVER best END AS case_rank,
        CASE WHEN training_eligible THEN first_value(episode_id) OVER best END AS case_best_episode_id,
        count(*) FILTER (WHERE training_eligible) OVER (PARTITION BY case_id) AS case_eligible_rollouts
    FROM dataset_candidates
    WINDOW best AS (
        PARTITION BY case_id, training_eligible
        ORDER BY len(deterministic_red_flags), teacher_score DESC, episode_id DESC
        ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING
    )
)
SELECT
    * EXCLUDE (training_eligible, training_exclusion_reasons, case_best_episode_id),
    max(case_best_episode_id) OVER (PARTITION BY case_id) AS case_best_episode_id,
    training_eligible AS eligible_before_selection,
    coalesce(case_rank = 1, false) AS selected,
    coalesce(case_rank = 1, false) AND has_trajectory AS accepted,
    coalesce(case_rank = 1, false) AS training_eligible,
    CASE WHEN case_rank > 1 THEN ordered_distinct(['lower_quality_rollout_for_case'] || training_exclusion_reasons)
         ELSE training_exclusion_reasons END AS training_exclusion_reasons
FROM ranked;
