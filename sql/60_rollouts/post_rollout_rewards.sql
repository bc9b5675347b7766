-- view: post_rollout_rewards
-- grain: one row per scheduled episode
-- key: run_id, episode_id
-- The seed's post_rollout_rewards.jsonl row plus group statistics for RL: the episode's
-- reward (its trajectory score), the group's mean and sample standard deviation, the GRPO
-- advantage (r - mean) / (std + 1e-6) and the RLOO advantage r - mean(others); both are 0
-- and is_std_zero true for a zero-variance or single-member group. Its step_ids name the
-- policy's model calls (the agent model's stages; a separate VLM's perception call is not
-- one). Group sums are left folds over the members in episode_id order, so they never
-- depend on aggregation order; a group whose rewards are all equal has that reward as its
-- mean and a spread of exactly 0 (seven equal rewards' rounded sum ÷ 7 need not be the
-- reward, and would leave a spread of ~1e-16 that trainers read as signal). An
-- episode that never finished gets the seed's stand-in row (a fatal engineering error, no
-- steps, no components, reward 0) and takes no part in its group's statistics; its
-- materialized file row holds the seed's keys alone (run_dir.py's STAND_IN_KEYS).
CREATE OR REPLACE VIEW post_rollout_rewards AS
WITH members AS MATERIALIZED (
    SELECT
        s.run_id, s.episode_id, s.case_id, s.prompt_group_id, s.total AS reward, s.components,
        m.result_correct, m.engineering_error,
        a.strict_trace_audit_pass, a.hard_trace_audit_pass,
        -- seed 000: one code per failure of process_metrics' strict_trace_audit_failures, in its order
        list_transform(a.strict_trace_audit_failures, lambda f: f.code) AS strict_failure_codes,
        el.training_prohibited, el.rl_reward_eligible, p.step_ids
    FROM trajectory_scores s
    JOIN episode_metrics m USING (run_id, episode_id)
    JOIN trace_audit a USING (run_id, episode_id)
    JOIN sft_eligibility el USING (run_id, episode_id)
    LEFT JOIN (
        -- Ordered as numbers, then named: a list() of the names ordered by step cost ~0.3 CPU s more at 100k episodes.
        SELECT run_id, episode_id, list_transform(steps, lambda step: episode_id || ':' || step) AS step_ids
        FROM (SELECT run_id, episode_id, list(step ORDER BY step) AS steps FROM model_calls WHERE policy_stage(stage) GROUP BY ALL)
    ) p USING (run_id, episode_id)
),
groups AS (
    SELECT run_id, prompt_group_id, count(*) AS n, min(reward) = max(reward) AS all_equal, min(reward) AS lowest,
           list_reduce(list(reward ORDER BY episode_id), lambda a, b: a + b) AS reward_sum
    FROM members GROUP BY ALL
),
spread AS (
    SELECT m.run_id, m.prompt_group_id,
           list_reduce(list(power(m.reward - g.reward_sum / g.n, 2) ORDER BY m.episode_id), lambda a, b: a + b) AS squares
    FROM members m JOIN groups g USING (run_id, prompt_group_id)
    GROUP BY ALL
),
stats AS (
    SELECT g.run_id, g.prompt_group_id, g.n,
           g.reward_sum,
           CASE WHEN g.all_equal THEN g.lowest ELSE g.reward_sum / g.n END AS reward_mean,
           CASE WHEN g.n > 1 THEN CASE WHEN g.all_equal THEN 0.0 ELSE sqrt(s.squares / (g.n - 1)) END END AS reward_std
    FROM groups g JOIN spread s USING (run_id, prompt_group_id)
)
SELECT
    m.run_id,
    m.episode_id,
    'ifv-post-rollout-deterministic-v1' AS schema_version,
    m.prompt_group_id,
    m.case_id,
    m.result_correct AS classification_correct,
    m.engineering_error AS fatal_engineering_error,
    m.strict_trace_audit_pass,
    m.hard_trace_audit_pass,
    m.strict_failure_codes AS strict_trace_audit_failure_codes,
    m.training_prohibited,
    m.rl_reward_eligible,
    coalesce(m.step_ids, []) AS step_ids,
    m.components AS process_components,
    m.reward,
    st.n AS group_members,
    st.reward_mean,
    st.reward_std,
    coalesce(st.reward_std, 0) = 0 AS is_std_zero,
    CASE WHEN coalesce(st.reward_std, 0) = 0 THEN 0.0 ELSE (m.reward - st.reward_mean) / (st.reward_std + 1e-6) END AS grpo_advantage,
    CASE WHEN st.n < 2 OR coalesce(st.reward_std, 0) = 0 THEN 0.0
         ELSE m.reward - (st.reward_sum - m.reward) / (st.n - 1) END AS rloo_advantage
FROM members m
JOIN stats st USING (run_id, prompt_group_id)
UNION ALL BY NAME
SELECT
    e.run_id,
    e.episode_id,
    'ifv-post-rollout-deterministic-v1' AS schema_version,
    e.prompt_group_id,
    e.case_id,
    false AS classification_correct,
    true AS fatal_engineering_error,
    false AS strict_trace_audit_pass,
    el.training_prohibited,
    el.rl_reward_eligible,
    []::VARCHAR[] AS step_ids,
    0.0::DOUBLE AS reward,
    0.0::DOUBLE AS grpo_advantage,
    0.0::DOUBLE AS rloo_advantage
FROM episodes e
JOIN sft_eligibility el USING (run_id, episode_id)
WHERE NOT e.finished;
