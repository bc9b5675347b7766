-- view: run_results
-- grain: one row per scheduled episode
-- key: run_id, episode_id
-- The seed's run_results.jsonl row: the episode's verdict, confidence, basis, termination,
-- costs and error, with its rollout identity. An unfinished episode's row is the stand-in
-- error row `materialize --unfinished-as-errors` writes: its error text says it did not
-- finish, so the seed's error rule (_compute_summary, run_summary) counts it; its other
-- outcomes are NULL (no termination: an import of the directory reads it as unfinished).
-- stage_timings (seconds, from the final attempt's event times): perception from
-- episode.started to perception.reported; judgment from the last event before the first
-- judgment-stage model call to episode.finished; investigation between them (NULL where a stage never began; the whole struct is NULL for an unfinished episode).
CREATE OR REPLACE VIEW run_results AS
WITH first_judgment AS (
    SELECT run_id, episode_id, min(step) AS step
    FROM steps
    WHERE type = 'model.called' AND payload->>'stage' = 'unified_judgment'
    GROUP BY ALL
),
marks AS (
    SELECT
        s.run_id,
        s.episode_id,
        min(s.ts) FILTER (WHERE s.type = 'episode.started') AS started,
        min(s.ts) FILTER (WHERE s.type = 'perception.reported') AS perceived,
        max(s.ts) FILTER (WHERE s.step < j.step) AS judging,
        max(s.ts) FILTER (WHERE s.type = 'episode.finished') AS finished
    FROM steps s
    LEFT JOIN first_judgment j USING (run_id, episode_id)
    GROUP BY ALL
),
timings AS (
    SELECT
        run_id,
        episode_id,
        {
            'perception': round_even(epoch(perceived - started), 3),
            'investigation': round_even(epoch(coalesce(judging, finished) - perceived), 3),
            'judgment': round_even(epoch(finished - judging), 3)
        } AS stage_timings
    FROM marks
    WHERE finished IS NOT NULL
)
SELECT
    e.run_id,
    e.episode_id,
    e.case_id,
    e.verdict,
    e.confidence,
    e.verdict_basis,
    e.termination,
    e.time_taken,
    e.total_tool_calls,
    e.llm_api_calls,
    e.token_usage,
    CASE WHEN e.finished THEN e.error ELSE 'episode did not finish' END AS error,
    t.stage_timings,
    CASE WHEN e.finished THEN 'traces/' || safe_trace_filename(e.episode_id) END AS trace_path,
    e.prompt_group_id,
    e.rollout_index,
    e.sampling_seed
FROM episodes e
LEFT JOIN timings t USING (run_id, episode_id);
