-- view: dataset_candidates
-- grain: one row per candidate episode of the export
-- key: source_id, episode_id
-- Each candidate's training eligibility before rollout selection, with seed 002's
-- episode-metadata fields. Derived mode: a native episode is eligible when sft_eligibility
-- says so (audit, teacher score, trajectory, training not prohibited), an imported one when
-- its score says training_eligible. Frozen mode: eligible when the structured gate passes
-- (the eligibility artifact names this case and episode, engineering_valid and
-- sft_eligibility_pass are true, it pins this trace's sha256, and the fixed split's image
-- sha256 equals the trace's) and the deterministic hard gate passes; reasons then lead
-- with structured_teacher_gate_failed and the fatal reasons, and an episode without an
-- exportable trajectory is ineligible (no_exportable_trajectory_sft) before selection. A
-- source whose release prohibits training contributes no eligible episode (reason
-- training_prohibited) unless the export allows it (--allow-training-prohibited).
-- `semantic_mismatch` marks a semantic-reward artifact that names another case, episode or
-- trace (an export error); `source_position` is its source's place in the order seed 002
-- reads the sources. Reads the export's snapshot of candidate_episodes.
CREATE OR REPLACE VIEW dataset_candidates AS
WITH gated AS (
    SELECT
        c.*,
        teacher_quality(c.release_row, c.score_present, c.raw_reasons, c.eligible_flag) AS q,
        s.frozen,
        s.allow_training_prohibited,
        c.eligibility_artifact AS eligibility,
        c.semantic_artifact AS semantic,
        CASE WHEN s.frozen THEN
            py_get_text(c.eligibility_artifact, 'case_id', '') = c.case_id
            AND py_get_text(c.eligibility_artifact, 'episode_id', '') = c.episode_id
            AND is_json_true(c.eligibility_artifact->'gates'->'engineering_valid')
            AND is_json_true(c.eligibility_artifact->'gates'->'sft_eligibility_pass')
            AND py_get_text(c.eligibility_artifact->'source_trace', 'sha256', '') = coalesce(c.trace_sha256, '')
            AND coalesce(c.fixed_split_image_sha256, '') = c.image_sha256
        END AS structured_gate_pass,
        c.semantic_artifact IS NOT NULL AND NOT coalesce(
            py_get_text(c.semantic_artifact, 'case_id', '') = c.case_id
            AND py_get_text(c.semantic_artifact->'rollout', 'episode_id', py_get_text(c.semantic_artifact, 'episode_id', '')) = c.episode_id
            AND py_get_text(c.semantic_artifact->'source_trace', 'sha256', '') = coalesce(c.trace_sha256, ''),
            false
        ) AS semantic_mismatch
    FROM export_snapshot.candidate_episodes c
    CROSS JOIN dataset_settings s
),
judged AS (
    SELECT
        *,
        CASE
            WHEN frozen THEN structured_gate_pass AND q.hard_gate_pass
            WHEN source_kind = 'run' THEN coalesce(native_eligible, false)
            ELSE py_truthy(eligible_flag)
        END AS gate_eligible,
        CASE WHEN NOT score_present OR raw_reasons IS NULL THEN ['missing_training_quality_score'] ELSE raw_reasons END AS base_reasons
    FROM gated
),
reasoned AS (
    SELECT
        *,
        CASE
            WHEN frozen AND NOT gate_eligible
                THEN CASE WHEN structured_gate_pass THEN []::VARCHAR[] ELSE ['structured_teacher_gate_failed'] END || q.fatal_reasons || base_reasons
            WHEN frozen THEN []::VARCHAR[]
            WHEN source_kind = 'run' THEN coalesce(native_reasons, [])
            ELSE base_reasons
        END AS gate_reasons
    FROM judged
),
prohibited AS (
    SELECT
        *,
        gate_eligible AND (NOT training_prohibited OR allow_training_prohibited) AS allowed,
        CASE WHEN training_prohibited AND NOT allow_training_prohibited THEN ordered_distinct(['training_prohibited'] || gate_reasons)
             ELSE gate_reasons END AS allowed_reasons
    FROM reasoned
)
SELECT
    source_id,
    source_position,
    source_kind,
    episode_id,
    case_id,
    source_run_id,
    source_trace,
    trace_sha256,
    source_family_keys,
    runtime_ids,
    teacher_score,
    allowed AND (NOT frozen OR has_trajectory) AS training_eligible,
    CASE WHEN frozen AND NOT has_trajectory THEN ordered_distinct(['no_exportable_trajectory_sft'] || allowed_reasons) ELSE allowed_reasons END
        AS training_exclusion_reasons,
    q.hard_gate_pass AS deterministic_hard_gate_pass,
    q.fatal_reasons AS deterministic_fatal_reasons,
    q.red_flags AS deterministic_red_flags,
    structured_gate_pass,
    eligibility->'gates'->'sft_eligibility_pass' AS structured_eligibility_pass,
    semantic->'gates'->'semantic_audit_pass' AS semantic_audit_pass,
    eligibility->'artifact_id' AS sft_eligibility_artifact_id,
    semantic->'artifact_id' AS semantic_reward_artifact_id,
    decision_policy_version,
    runtime_store_path,
    CASE WHEN has_trajectory THEN '' ELSE 'no trajectory_sft row for this episode' END AS trajectory_export_error,
    token_count_estimate AS trajectory_token_count_estimate,
    tool_call_count,
    has_trajectory,
    has_perception,
    semantic_mismatch,
    training_prohibited,
    in_fixed_split,
    fixed_split,
    fixed_split_group_id
FROM prohibited;
