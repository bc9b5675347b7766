-- view: model_calls
-- grain: one row per model call of a finished attempt
-- key: run_id, episode_id, call_index
-- Each model call: stage, provider, model, the request's blob, the answer (text, reasoning,
-- tool calls), token usage, latency and retries.
CREATE OR REPLACE VIEW model_calls AS
SELECT
    run_id,
    episode_id,
    row_number() OVER (PARTITION BY run_id, episode_id ORDER BY step) AS call_index,
    step,
    payload->>'stage' AS stage,
    payload->>'provider' AS provider,
    payload->>'model' AS model,
    payload->>'request_sha256' AS request_sha256,
    payload->>'content' AS content,
    payload->>'reasoning' AS reasoning,
    payload->'tool_calls' AS tool_calls,
    json_array_length(payload->'tool_calls') AS tool_call_count,
    (payload->'usage'->>'prompt_tokens')::BIGINT AS prompt_tokens,
    (payload->'usage'->>'completion_tokens')::BIGINT AS completion_tokens,
    (payload->'usage'->>'total_tokens')::BIGINT AS total_tokens,
    (payload->>'latency_ms')::DOUBLE AS latency_ms,
    json_array_length(payload->'retries') AS retries,
    nullif(payload->>'started_at', '')::TIMESTAMPTZ AS started_at,
    nullif(payload->>'finished_at', '')::TIMESTAMPTZ AS finished_at
FROM steps
WHERE type = 'model.called';
