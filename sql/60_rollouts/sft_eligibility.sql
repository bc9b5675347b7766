-- view: sft_eligibility
-- grain: one row per scheduled episode
-- key: run_id, episode_id
-- Whether each rollout may train a model, with every reason it may not: training is
-- prohibited for flagged runs and development releases; SFT needs a strict-audit pass, a
-- clean teacher score, an exportable trajectory and a non-scoring-package release; RL needs
-- no engineering error and at least one policy step (a model call of the agent model; a
-- separate VLM's perception call is not one). `sft_eligible_unless_prohibited` is
-- SFT eligibility but for the prohibition (`dataset export --allow-training-prohibited`).
CREATE OR REPLACE VIEW sft_eligibility AS
WITH base AS (
    SELECT
        e.run_id,
        e.episode_id,
        e.case_id,
        e.prompt_group_id,
        coalesce(r.training_prohibited_flag, false) OR r.release_stage = 'development_subset' AS training_prohibited,
        coalesce(r.is_scoring_package, false) AS sft_structured_eligibility_required,
        e.finished,
        coalesce(a.strict_trace_audit_pass, false) AS strict_trace_audit_pass,
        coalesce(a.strict_failure_codes, []) AS strict_failure_codes,
        coalesce(s.training_eligible, false) AS teacher_training_eligible,
        coalesce(s.training_exclusion_reasons, []) AS teacher_exclusion_reasons,
        coalesce(m.engineering_error, true) AS engineering_error,
        e.finished AND e.verdict IS NOT NULL AS exportable_trajectory,
        coalesce(mc.policy_steps, 0) AS policy_steps
    FROM episodes e
    LEFT JOIN (SELECT run_id, episode_id, count(*) AS policy_steps FROM model_calls WHERE policy_stage(stage) GROUP BY ALL) mc USING (run_id, episode_id)
    JOIN run_manifests r USING (run_id)
    LEFT JOIN trace_audit a USING (run_id, episode_id)
    LEFT JOIN trajectory_scores s USING (run_id, episode_id)
    LEFT JOIN episode_metrics m USING (run_id, episode_id)
)
SELECT
    run_id,
    episode_id,
    case_id,
    prompt_group_id,
    training_prohibited,
    sft_structured_eligibility_required,
    strict_trace_audit_pass
        AND teacher_training_eligible
        AND exportable_trajectory
        AND NOT sft_structured_eligibility_required AS sft_eligible_unless_prohibited,
    sft_eligible_unless_prohibited AND NOT training_prohibited AS sft_training_eligible,
    NOT engineering_error AND policy_steps > 0 AND NOT training_prohibited AS rl_reward_eligible,
    list_filter(
        [
            CASE WHEN NOT finished THEN 'episode_not_finished' END,
            CASE WHEN training_prohibited THEN 'training_prohibited' END,
            CASE WHEN sft_structured_eligibility_required THEN 'structured_eligibility_required' END,
            CASE WHEN finished AND NOT exportable_trajectory THEN 'no_exportable_trajectory' END
        ]
        || list_transform(strict_failure_codes, lambda code: 'trace_audit:' || code)
        || teacher_exclusion_reasons,
        lambda reason: reason IS NOT NULL
    ) AS exclusion_reasons
FROM base;
