-- view: model_calls
-- grain: one row per model call of a finished attempt
-- key: run_id, episode_id, call_index
-- Each model call: stage, provider, model, the request's blob, the answer (text, reasoning,
-- tool calls), why it ended (finish_reason: `length` when the token limit cut it; NULL when the
-- provider named none), token usage, latency, retries, and the error of a call that failed for good.
CREATE OR REPLACE VIEW model_calls AS
-- Calls are numbered over their keys alone (a window sorts every column it carries).
WITH numbered AS (
    SELECT run_id, episode_id, step, row_number() OVER (PARTITION BY run_id, episode_id ORDER BY step) AS call_index
    FROM steps
    WHERE type = 'model.called'
)
SELECT
    run_id,
    episode_id,
    n.call_index,
    step,
    p.stage,
    p.provider,
    p.model,
    p.request_sha256,
    p.content,
    p.reasoning,
    p.tool_calls,
    json_array_length(p.tool_calls) AS tool_call_count,
    nullif(p.finish_reason, '') AS finish_reason,
    p.usage.prompt_tokens AS prompt_tokens,
    p.usage.completion_tokens AS completion_tokens,
    p.usage.total_tokens AS total_tokens,
    p.latency_ms,
    json_array_length(p.retries) AS retries,
    nullif(p.error, '') AS error,
    nullif(p.started_at, '')::TIMESTAMPTZ AS started_at,
    nullif(p.finished_at, '')::TIMESTAMPTZ AS finished_at
FROM (
    -- json_transform parses each payload once (every ->> would parse it again).
    SELECT run_id, episode_id, step, json_transform(payload, '{
        "stage": "VARCHAR", "provider": "VARCHAR", "model": "VARCHAR", "request_sha256": "VARCHAR",
        "content": "VARCHAR", "reasoning": "VARCHAR", "tool_calls": "JSON", "retries": "JSON",
        "usage": {"prompt_tokens": "BIGINT", "completion_tokens": "BIGINT", "total_tokens": "BIGINT"},
        "latency_ms": "DOUBLE", "error": "VARCHAR", "finish_reason": "VARCHAR", "started_at": "VARCHAR",
        "finished_at": "VARCHAR"}') AS p
    FROM steps
    WHERE type = 'model.called'
)
JOIN numbered n USING (run_id, episode_id, step);
