-- view: imported_episodes
-- grain: one row per episode of an imported run directory (a run_results.jsonl row)
-- key: run_id, episode_id
-- An imported run's episodes with the columns of `episodes` its run_results.jsonl holds
-- (the seed writes a row only for a finished episode), the correctness and trace audit its
-- process_metrics.jsonl recorded (NULL where its row has none) with its audit failures and
-- reference-chain recalls, the correctness the run is
-- scored by (`scored_correct`: the recorded one, an episode without one wrong, as seed 000
-- writes an engineering error's row without its episode id; NULL throughout a run that
-- recorded none), its trajectory_scores.jsonl row (and its total as `reward`) and its trace's path. An episode is named
-- as Python strips its id (a row naming none is no episode); of several rows naming one, the
-- last counts, as seed 002 reads trajectory_scores.jsonl (keyed by episode_id, else case_id,
-- as candidate_episodes keys it for an id that is text). A value of another type than its column's (a
-- rollout_index "first", say) reads as NULL: one odd row of one import must not stop every
-- reader of the log's runs.
CREATE OR REPLACE VIEW imported_episodes AS
WITH results AS (
    SELECT run_id, py_strip(coalesce(row->>'episode_id', '')) AS episode_id, row FROM imported_run_rows
    WHERE kind = 'run_results'
    QUALIFY episode_id <> '' AND row_number() OVER (PARTITION BY run_id, episode_id ORDER BY line_number DESC) = 1
),
metrics AS (
    SELECT run_id, py_strip(coalesce(row->>'episode_id', '')) AS episode_id,
           TRY_CAST(row->>'result_correct' AS BOOLEAN) AS result_correct,
           TRY_CAST(row->>'hard_trace_audit_pass' AS BOOLEAN) AS hard_trace_audit_pass,
           TRY_CAST(row->>'strict_trace_audit_pass' AS BOOLEAN) AS strict_trace_audit_pass,
           row->'strict_trace_audit_failures' AS strict_trace_audit_failures,
           TRY_CAST(row->>'evidence_recovery_recall' AS DOUBLE) AS evidence_recovery_recall,
           TRY_CAST(row->>'fact_recovery_recall' AS DOUBLE) AS fact_recovery_recall,
           TRY_CAST(row->>'chain_recovery_recall' AS DOUBLE) AS chain_recovery_recall,
           TRY_CAST(row->>'basis_reference_precision' AS DOUBLE) AS basis_reference_precision
    FROM imported_run_rows WHERE kind = 'process_metrics'
    QUALIFY row_number() OVER (PARTITION BY run_id, episode_id ORDER BY line_number DESC) = 1
),
scores AS (
    SELECT run_id, py_strip(coalesce(nullif(row->>'episode_id', ''), row->>'case_id', '')) AS episode_id,
           row AS trajectory_score
    FROM imported_run_rows WHERE kind = 'trajectory_scores'
    QUALIFY row_number() OVER (PARTITION BY run_id, episode_id ORDER BY line_number DESC) = 1
)
SELECT
    r.run_id,
    r.episode_id,
    r.row->>'case_id' AS case_id,
    r.row->>'prompt_group_id' AS prompt_group_id,
    TRY_CAST(r.row->>'rollout_index' AS INTEGER) AS rollout_index,
    TRY_CAST(r.row->>'sampling_seed' AS BIGINT) AS sampling_seed,
    r.row->>'termination' AS termination,
    nullif(r.row->>'error', '') AS error,
    TRY_CAST(r.row->>'time_taken' AS DOUBLE) AS time_taken,
    TRY_CAST(r.row->>'total_tool_calls' AS INTEGER) AS total_tool_calls,
    TRY_CAST(r.row->>'llm_api_calls' AS INTEGER) AS llm_api_calls,
    r.row->'token_usage' AS token_usage,
    r.row->>'verdict' AS verdict,
    TRY_CAST(r.row->>'confidence' AS DOUBLE) AS confidence,
    r.row->'verdict_basis' AS verdict_basis,
    r.row->>'trace_path' AS trace_path,
    m.result_correct,
    CASE WHEN count(m.result_correct) OVER (PARTITION BY r.run_id) > 0 THEN coalesce(m.result_correct, false) END AS scored_correct,
    m.hard_trace_audit_pass,
    m.strict_trace_audit_pass,
    m.strict_trace_audit_failures,
    m.evidence_recovery_recall,
    m.fact_recovery_recall,
    m.chain_recovery_recall,
    m.basis_reference_precision,
    s.trajectory_score,
    TRY_CAST(s.trajectory_score->>'total' AS DOUBLE) AS reward
FROM results r
LEFT JOIN metrics m USING (run_id, episode_id)
LEFT JOIN scores s USING (run_id, episode_id);
