-- view: run_summary
-- grain: one row per run
-- key: run_id
-- The seed's summary.json (_compute_summary): episodes, errors (episode_errors), the
-- distribution of predicted verdicts ('error' for an episode without one, as the seed's
-- runtime reports an unjudged episode), and mean time, tool calls and model calls, rounded to
-- 3 places half to even as Python's round(). Means go through DECIMAL so they never depend
-- on aggregation order.
CREATE OR REPLACE VIEW run_summary AS
WITH rows AS (
    SELECT
        run_id,
        coalesce(r.verdict, 'error') AS predicted,
        x.episode_id IS NOT NULL AS is_error,
        r.time_taken,
        r.total_tool_calls,
        r.llm_api_calls
    FROM run_results r
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
    coalesce(round_even(avg(r.time_taken::DECIMAL(18, 6))::DOUBLE, 3), 0) AS avg_time_taken_sec,
    coalesce(round_even(avg(r.total_tool_calls::DECIMAL(18, 6))::DOUBLE, 3), 0) AS avg_tool_calls,
    coalesce(round_even(avg(r.llm_api_calls::DECIMAL(18, 6))::DOUBLE, 3), 0) AS avg_llm_api_calls
FROM rows r
JOIN distribution d USING (run_id)
GROUP BY r.run_id;
