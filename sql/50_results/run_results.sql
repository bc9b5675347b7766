-- view: run_results
-- grain: one row per scheduled episode
-- key: run_id, episode_id
-- The seed's run_results.jsonl row: the episode's verdict, confidence, basis, termination,
-- costs and error, with its rollout identity. Unfinished episodes have NULL outcomes.
CREATE OR REPLACE VIEW run_results AS
SELECT
    run_id,
    episode_id,
    case_id,
    verdict,
    confidence,
    verdict_basis,
    termination,
    time_taken,
    total_tool_calls,
    llm_api_calls,
    token_usage,
    error,
    '{}'::JSON AS stage_timings,
    CASE WHEN finished THEN 'traces/' || safe_trace_filename(episode_id) END AS trace_path,
    prompt_group_id,
    rollout_index,
    sampling_seed
FROM episodes;
