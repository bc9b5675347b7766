-- view: trace_audit_failures
-- grain: one row per audit failure of a finished episode
-- key: run_id, episode_id, code, detail
-- Why an episode's trace cannot be trusted. Hard failures: missing_judgment,
-- basis_cites_unknown_evidence, source_policy_violation, tool_budget_exceeded,
-- step_order_violation. Strict-only: unanswered_tool_call, empty_reasoning,
-- overlapping_model_calls (the strict audit fails on both kinds). A source violates the
-- policy when the tools' own matcher (source_policy_block, eviscene.tools.policy) blocks
-- it: a source the tools allowed is never a violation.
CREATE OR REPLACE VIEW trace_audit_failures AS
WITH ep AS (
    SELECT e.*, m.max_tool_actions FROM episodes e JOIN run_manifests m USING (run_id) WHERE e.finished
),
failures AS (
    SELECT run_id, episode_id, 'missing_judgment' AS code, 'hard' AS severity,
           'the episode ended without a validated judgment' AS detail
    FROM ep WHERE verdict IS NULL

    UNION ALL
    SELECT ep.run_id, ep.episode_id, 'basis_cites_unknown_evidence', 'hard',
           'verdict_basis cites ' || (c.value->>'evidence_id') || ', which no tool returned'
    FROM ep, json_each(ep.verdict_basis) c
    WHERE NOT EXISTS (SELECT 1 FROM episode_evidence ev WHERE ev.run_id = ep.run_id AND ev.episode_id = ep.episode_id
                      AND ev.evidence_id = c.value->>'evidence_id')

    UNION ALL
    SELECT ev.run_id, ev.episode_id, 'source_policy_violation', 'hard',
           'a blocked source reached the model: ' || ev.url
    FROM episode_evidence ev
    JOIN source_policies p USING (run_id)
    WHERE source_policy_block(p.policy_file::VARCHAR, ev.url, ev.content_sha256) IS NOT NULL

    UNION ALL
    SELECT ep.run_id, ep.episode_id, 'tool_budget_exceeded', 'hard',
           ep.total_tool_calls || ' tool calls, more than the budget of ' || ep.max_tool_actions
    FROM ep WHERE ep.total_tool_calls > ep.max_tool_actions

    UNION ALL
    SELECT run_id, episode_id, 'step_order_violation', 'hard', detail
    FROM (
        SELECT run_id, episode_id,
               CASE
                   WHEN min(step) <> 0 OR max(step) <> count(*) - 1 THEN 'steps are not numbered 0..n-1'
                   WHEN arg_min(type, step) <> 'episode.started' THEN 'the first step is not episode.started'
                   WHEN arg_max(type, step) <> 'episode.finished' THEN 'the last step is not episode.finished'
               END AS detail
        FROM steps GROUP BY run_id, episode_id
    ) WHERE detail IS NOT NULL

    UNION ALL
    SELECT run_id, episode_id, 'step_order_violation', 'hard',
           'tool result for ' || call_id || ' without a preceding call'
    FROM tool_calls WHERE returned_step IS NOT NULL AND returned_step < called_step

    UNION ALL
    SELECT requested.run_id, requested.episode_id, 'unanswered_tool_call', 'strict',
           'tool call ' || requested.call.id || ' (' || requested.call.name || ') got no result'
    -- the list parsed and unnested, then an anti join: json_each and NOT EXISTS over its
    -- values grouped every requested call twice before joining (~1.5 of the view's 2.6 CPU s)
    FROM (SELECT run_id, episode_id, unnest(from_json(tool_calls, '[{"id": "VARCHAR", "name": "VARCHAR"}]')) AS call FROM model_calls) requested
    ANTI JOIN (SELECT run_id, episode_id, call_id FROM tool_calls WHERE returned_step IS NOT NULL) answered
      ON answered.run_id = requested.run_id AND answered.episode_id = requested.episode_id AND answered.call_id = requested.call.id

    UNION ALL
    SELECT run_id, episode_id, 'empty_reasoning', 'strict',
           'model call ' || call_index || ' acted with no reasoning or text'
    FROM model_calls
    WHERE stage = 'unified_react' AND tool_call_count > 0 AND coalesce(reasoning, '') = '' AND coalesce(content, '') = ''

    UNION ALL
    SELECT run_id, episode_id, 'overlapping_model_calls', 'strict',
           'model call ' || call_index || ' started before the previous one finished'
    FROM (
        SELECT *, lag(finished_at) OVER (PARTITION BY run_id, episode_id ORDER BY call_index) AS previous_finished_at
        FROM model_calls
    ) WHERE started_at < previous_finished_at
)
SELECT DISTINCT run_id, episode_id, code, severity, detail FROM failures;
