-- view: run_summary
-- grain: one row per run
-- key: run_id
-- The seed's summary.json (_compute_summary): episodes, errors (an error verdict,
-- termination or error text), the distribution of predicted verdicts ('None' for episodes
-- without one, as the seed's str()), and mean time, tool calls and model calls, rounded to
-- 3 places half to even as Python's round(). Means go through DECIMAL so they never depend
-- on aggregation order.
CREATE OR REPLACE VIEW run_summary AS
WITH rows AS (
    SELECT
        run_id,
        coalesce(verdict, 'None') AS predicted,
        verdict = 'error' OR termination = 'error' OR coalesce(trim(error), '') <> '' AS is_error,
        time_taken,
        total_tool_calls,
        llm_api_calls
    FROM run_results
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
    coalesce(round_even(avg(r.time_taken::DECIMAL(18, 6))::DOUBLE, 3), 0) AS avg_time_taken_sec,
    coalesce(round_even(avg(r.total_tool_calls::DECIMAL(18, 6))::DOUBLE, 3), 0) AS avg_tool_calls,
    coalesce(round_even(avg(r.llm_api_calls::DECIMAL(18, 6))::DOUBLE, 3), 0) AS avg_llm_api_calls
FROM rows r
JOIN distribution d USING (run_id)
GROUP BY r.run_id;
