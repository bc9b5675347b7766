-- view: process_metrics
-- grain: one row per scheduled episode
-- key: run_id, episode_id
-- The seed's process_metrics.jsonl row: outcome, the protocol's recall and precision
-- metrics, action counts, the trace audit verdicts and the training exclusion reasons. An
-- episode that never finished has no trace: it gets the seed's stand-in row (an engineering
-- error, not correct, first_error 'canonical trace is missing', every metric NULL); its
-- materialized file row holds the seed's keys alone (run_dir.py's STAND_IN_KEYS).
CREATE OR REPLACE VIEW process_metrics AS
SELECT
    m.run_id,
    m.episode_id,
    'ifv-process-metrics-v2' AS schema_version,
    'ifv-process-score-v1' AS protocol_version,
    m.case_id,
    m.prompt_group_id,
    m.verdict AS runtime_verdict,
    m.termination,
    m.result_correct,
    m.engineering_error,
    m.evidence_recovery_recall,
    m.fact_recovery_recall,
    m.chain_recovery_recall,
    m.basis_reference_precision,
    m.tool_calls,
    m.duplicate_tool_calls,
    m.invalid_tool_calls,
    s.training_eligible,
    s.training_exclusion_reasons,
    a.strict_trace_audit_pass,
    a.hard_trace_audit_pass,
    a.strict_trace_audit_failures,
    NULL::JSON AS first_error
FROM episode_metrics m
JOIN trajectory_scores s USING (run_id, episode_id)
JOIN trace_audit a USING (run_id, episode_id)
UNION ALL BY NAME
SELECT
    run_id,
    episode_id,
    'ifv-process-metrics-v2' AS schema_version,
    case_id,
    prompt_group_id,
    verdict AS runtime_verdict,
    false AS result_correct,
    true AS engineering_error,
    '{"error":"canonical trace is missing"}'::JSON AS first_error
FROM episodes
WHERE NOT finished;
