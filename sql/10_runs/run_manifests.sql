-- view: run_manifests
-- grain: one row per run
-- key: run_id
-- The settings every score of a run depends on, from its run.started event: commit, release
-- stage, limits, training prohibition, the agent's decision policy version (which its trace
-- files carry), and whether the release is a reviewed scoring package. A merged sharded run
-- has one run.started per shard, alike but for the shard's own keys: the lowest shard's is
-- the run's, whatever order the shards were merged in (merging renumbers the later ones).
CREATE OR REPLACE VIEW run_manifests AS
WITH started AS (
    SELECT run_id, payload, (coalesce((payload->'benchmark'->>'shard_index')::INTEGER, 0), seq) AS shard_then_seq
    FROM events
    WHERE type = 'run.started'
)
SELECT
    run_id,
    arg_min(payload, shard_then_seq) AS manifest,
    arg_min(payload->>'git_commit', shard_then_seq) AS git_commit,
    arg_min(payload->'benchmark'->>'release_id', shard_then_seq) AS release_id,
    arg_min(payload->'benchmark'->>'release_stage', shard_then_seq) AS release_stage,
    arg_min(payload->'benchmark'->>'runtime_contract_version', shard_then_seq) AS runtime_contract_version,
    arg_min((payload->'agent'->>'max_tool_actions')::INTEGER, shard_then_seq) AS max_tool_actions,
    arg_min(payload->'agent'->>'decision_policy_version', shard_then_seq) AS decision_policy_version,
    arg_min((payload->'benchmark'->>'training_prohibited')::BOOLEAN, shard_then_seq) AS training_prohibited_flag,
    arg_min(payload->'config'->>'release_schema_version', shard_then_seq) = 'ifv-scoring-gold-v1' AS is_scoring_package,
    arg_min(from_json(payload->'config'->'label_set', '["VARCHAR"]'), shard_then_seq) AS label_set
FROM started
GROUP BY run_id;
