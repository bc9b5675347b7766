-- view: run_summary
-- grain: one row per run
-- key: run_id
-- The seed's summary.json (_compute_summary) of the run's run_results rows: episodes, errors
-- (episode_errors, and each unfinished episode, whose row is a stand-in error row), the
-- distribution of predicted verdicts as run_results holds them (`str(verdict)`: 'None' for
-- an episode without one), and mean time, tool calls and model calls as Python computes them
-- (py_mean_rounded: statistics.mean, exact, then round() to 3 places).
CREATE OR REPLACE VIEW run_summary AS
WITH rows AS (
    SELECT
        run_id,
        coalesce(r.verdict, 'None') AS predicted,
        x.episode_id IS NOT NULL OR NOT e.finished AS is_error,
        r.time_taken,
        r.total_tool_calls,
        r.llm_api_calls
    FROM run_results r
    JOIN episodes e USING (run_id, episode_id)
    LEFT JOIN episode_errors x USING (run_id, episode_id)
),
distribution AS (
    SELECT run_id, map(list(predicted ORDER BY predicted), list(n ORDER BY predicted)) AS predicted_verdict_distribution
    FROM (SELECT run_id, predicted, count(*) AS n FROM rows GROUP BY ALL)
    GROUP BY run_id
)
SELECT
    r.run_id,
    count(*) AS num_samples,
    count(*) FILTER (WHERE r.is_error) AS num_errors,
    any_value(d.predicted_verdict_distribution) AS predicted_verdict_distribution,
    coalesce(py_mean_rounded(list(r.time_taken::DOUBLE) FILTER (WHERE r.time_taken IS NOT NULL), 3), 0) AS avg_time_taken_sec,
    coalesce(py_mean_rounded(list(r.total_tool_calls::DOUBLE) FILTER (WHERE r.total_tool_calls IS NOT NULL), 3), 0) AS avg_tool_calls,
    coalesce(py_mean_rounded(list(r.llm_api_calls::DOUBLE) FILTER (WHERE r.llm_api_calls IS NOT NULL), 3), 0) AS avg_llm_api_calls
FROM rows r
JOIN distribution d USING (run_id)
GROUP BY r.run_id;
