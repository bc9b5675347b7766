-- view: rollout_groups
-- grain: one row per scheduled episode (a member of its prompt group)
-- key: run_id, episode_id
-- The seed's rollout_groups.jsonl member: the group, rollout index, seed, policy revision,
-- trace path and the training flags of sft_eligibility. An episode that never finished has
-- no trace: its materialized file row holds the keys of the member seed 000 builds before it
-- looks for the trace (run_dir.py's STAND_IN_KEYS), without sft_training_eligible and
-- rl_reward_eligible, which the seed adds only where the trace exists.
CREATE OR REPLACE VIEW rollout_groups AS
SELECT
    e.run_id,
    e.episode_id,
    'ifv-rollout-group-member-v1' AS schema_version,
    e.prompt_group_id,
    e.case_id,
    e.rollout_index,
    e.group_size,
    e.sampling_seed,
    r.git_commit AS policy_revision,
    CASE WHEN e.finished THEN 'traces/' || safe_trace_filename(e.episode_id) END AS trace_path,
    s.training_prohibited,
    s.sft_training_eligible AS training_eligible,
    s.sft_structured_eligibility_required,
    s.sft_training_eligible,
    s.rl_reward_eligible
FROM episodes e
JOIN run_manifests r USING (run_id)
JOIN sft_eligibility s USING (run_id, episode_id);
