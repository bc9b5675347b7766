-- view: rollout_selection
-- grain: one row per candidate episode of the export
-- key: source_id, episode_id
-- Which eligible rollouts the export keeps (seed 002). Derived mode (the seed's `else` of
-- `if require_frozen_gates`) keeps every eligible rollout with an exportable trajectory: no
-- per-case selection. Frozen mode (and a derived export with --one-rollout-per-case) keeps
-- the best rollout per case: among the case's eligible episodes, the max of
-- (-len(red flags), teacher_score, episode_id), so a full tie goes to the larger
-- episode_id; the other eligible rollouts become ineligible with
-- lower_quality_rollout_for_case. An episode is accepted when it is selected and has an
-- exportable trajectory: with --one-rollout-per-case the best rollout is chosen before that
-- check, so a best rollout without a trajectory drops its case (the runner-up is not
-- promoted); in frozen mode such episodes were already ineligible.
CREATE OR REPLACE VIEW rollout_selection AS
WITH ranked AS (
    SELECT
        c.*,
        s.frozen OR s.one_rollout_per_case AS one_per_case,
        CASE WHEN c.training_eligible THEN row_number() OVER best END AS case_rank,
        CASE WHEN c.training_eligible THEN first_value(c.episode_id) OVER best END AS case_best_episode_id,
        count(*) FILTER (WHERE c.training_eligible) OVER (PARTITION BY c.case_id) AS case_eligible_rollouts
    FROM dataset_candidates c
    CROSS JOIN dataset_settings s
    WINDOW best AS (
        PARTITION BY c.case_id, c.training_eligible
        ORDER BY len(c.deterministic_red_flags), c.teacher_score DESC, c.episode_id DESC
        ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING
    )
),
selection AS (
    SELECT
        *,
        CASE WHEN one_per_case THEN coalesce(case_rank = 1, false) ELSE training_eligible END AS is_selected
    FROM ranked
)
SELECT
    * EXCLUDE (one_per_case, is_selected, training_eligible, training_exclusion_reasons, case_best_episode_id),
    CASE WHEN one_per_case THEN max(case_best_episode_id) OVER (PARTITION BY case_id) END AS case_best_episode_id,
    training_eligible AS eligible_before_selection,
    is_selected AS selected,
    is_selected AND has_trajectory AS accepted,
    is_selected AS training_eligible,
    CASE WHEN one_per_case AND case_rank > 1 THEN ordered_distinct(['lower_quality_rollout_for_case'] || training_exclusion_reasons)
         ELSE training_exclusion_reasons END AS training_exclusion_reasons
FROM selection;
