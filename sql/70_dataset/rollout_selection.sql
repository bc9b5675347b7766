-- view: rollout_selection
-- grain: one row per candidate episode of the export
-- key: source_id, episode_id
-- Which eligible rollouts the export keeps (seed 002). Derived mode (the seed's `else` of
-- `if require_frozen_gates`) keeps every eligible rollout with an exportable trajectory: no
-- per-case selection. Frozen mode (and a derived export with --one-rollout-per-case) keeps
-- the best rollout per case: among the case's eligible episodes with an exportable
-- trajectory, the max of (-len(red flags), teacher_score, episode_id), so a full tie goes to
-- the larger episode_id; the other eligible rollouts become ineligible with
-- lower_quality_rollout_for_case. An episode is accepted when it is selected and has an
-- exportable trajectory. In frozen mode an episode without one is ineligible already; with
-- --one-rollout-per-case an eligible one without one stays as derived mode has it (eligible,
-- not accepted: no exportable trajectory), and the best of the others is kept: were it
-- ranked, a best rollout without a trajectory would drop its whole case.
CREATE OR REPLACE VIEW rollout_selection AS
-- The ranking sorts only the eligible rollouts, and the per-case facts are a GROUP BY: three
-- windows over every candidate took 0.50-0.64 s at 100k candidates, this 0.37-0.41 s.
WITH ranked AS (
    SELECT
        source_id,
        episode_id,
        row_number() OVER (PARTITION BY case_id ORDER BY len(deterministic_red_flags), teacher_score DESC, episode_id DESC) AS case_rank
    FROM dataset_candidates
    WHERE training_eligible AND has_trajectory
),
cases AS (
    SELECT c.case_id, count(*) AS case_eligible_rollouts, max(c.episode_id) FILTER (WHERE r.case_rank = 1) AS best_episode_id
    FROM dataset_candidates c
    LEFT JOIN ranked r USING (source_id, episode_id)
    WHERE c.training_eligible
    GROUP BY c.case_id
),
selection AS (
    SELECT
        c.*,
        s.frozen OR s.one_rollout_per_case AS one_per_case,
        r.case_rank,
        coalesce(k.case_eligible_rollouts, 0) AS case_eligible_rollouts,
        k.best_episode_id,
        CASE WHEN s.frozen OR s.one_rollout_per_case THEN coalesce(r.case_rank = 1, c.training_eligible AND NOT c.has_trajectory)
             ELSE c.training_eligible END AS is_selected
    FROM dataset_candidates c
    CROSS JOIN dataset_settings s
    LEFT JOIN ranked r USING (source_id, episode_id)
    LEFT JOIN cases k USING (case_id)
)
SELECT
    * EXCLUDE (one_per_case, is_selected, training_eligible, training_exclusion_reasons, best_episode_id),
    CASE WHEN one_per_case THEN best_episode_id END AS case_best_episode_id,
    training_eligible AS eligible_before_selection,
    is_selected AS selected,
    is_selected AND has_trajectory AS accepted,
    is_selected AS training_eligible,
    CASE WHEN one_per_case AND case_rank > 1 THEN ordered_distinct(['lower_quality_rollout_for_case'] || training_exclusion_reasons)
         ELSE training_exclusion_reasons END AS training_exclusion_reasons
FROM selection;
