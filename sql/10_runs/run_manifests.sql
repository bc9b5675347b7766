-- view: run_manifests
-- grain: one row per run
-- key: run_id
-- The settings every score of a run depends on, from its run.started event: commit, release
-- stage, limits, training prohibition, the agent's decision policy version (which its trace
-- files carry), and whether the release is a reviewed scoring package.
CREATE OR REPLACE VIEW run_manifests AS
SELECT
    run_id,
    arg_min(payload, seq) AS manifest,
    arg_min(payload->>'git_commit', seq) AS git_commit,
    arg_min(payload->'benchmark'->>'release_id', seq) AS release_id,
    arg_min(payload->'benchmark'->>'release_stage', seq) AS release_stage,
    arg_min(payload->'benchmark'->>'runtime_contract_version', seq) AS runtime_contract_version,
    arg_min((payload->'agent'->>'max_tool_actions')::INTEGER, seq) AS max_tool_actions,
    arg_min(payload->'agent'->>'decision_policy_version', seq) AS decision_policy_version,
    arg_min((payload->'benchmark'->>'training_prohibited')::BOOLEAN, seq) AS training_prohibited_flag,
    arg_min(payload->'config'->>'release_schema_version', seq) = 'ifv-scoring-gold-v1' AS is_scoring_package,
    arg_min(from_json(payload->'config'->'label_set', '["VARCHAR"]'), seq) AS label_set
FROM events
WHERE type = 'run.started'
GROUP BY run_id;
