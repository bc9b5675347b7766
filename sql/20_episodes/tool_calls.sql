-- view: tool_calls
-- grain: one row per tool call of a finished attempt
-- key: run_id, episode_id, call_index
-- Each tool call paired with its result: status, observation, sources, structured data;
-- `is_duplicate` marks a call identical (tool and canonical arguments) to an earlier one of
-- the episode, `is_invalid` one the tool layer rejected.
CREATE OR REPLACE VIEW tool_calls AS
-- json_transform parses each payload once (every ->> would parse it again).
WITH called AS (
    SELECT run_id, episode_id, step, p.call_id, p.tool, p.arguments, p.arguments_sha256
    FROM (
        SELECT run_id, episode_id, step,
               json_transform(payload, '{"call_id": "VARCHAR", "tool": "VARCHAR", "arguments": "JSON", "arguments_sha256": "VARCHAR"}') AS p
        FROM steps WHERE type = 'tool.called'
    )
),
returned AS (
    SELECT run_id, episode_id, step, p.call_id, p.status, p.observation, p.sources, p.data, p.latency_ms,
           nullif(p.error, '') AS error
    FROM (
        SELECT run_id, episode_id, step,
               json_transform(payload, '{"call_id": "VARCHAR", "status": "VARCHAR", "observation": "VARCHAR", "sources": "JSON",
                                         "data": "JSON", "latency_ms": "DOUBLE", "error": "VARCHAR"}') AS p
        FROM steps WHERE type = 'tool.returned'
    )
),
-- Calls are numbered before the results' wide columns join them: a window sorts every
-- column it carries.
numbered AS (
    SELECT
        c.*,
        r.step AS returned_step,
        row_number() OVER (PARTITION BY c.run_id, c.episode_id ORDER BY c.step) AS call_index,
        count(*) OVER (
            PARTITION BY c.run_id, c.episode_id, c.arguments_sha256 ORDER BY c.step
            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ) > 0 AS is_duplicate
    FROM called c
    LEFT JOIN (SELECT run_id, episode_id, call_id, step FROM returned) r USING (run_id, episode_id, call_id)
)
SELECT
    n.run_id,
    n.episode_id,
    n.call_index,
    n.call_id,
    n.tool,
    n.arguments,
    n.arguments_sha256,
    n.step AS called_step,
    n.returned_step,
    r.status,
    r.observation,
    r.sources,
    r.data,
    r.latency_ms,
    r.error,
    n.is_duplicate,
    coalesce(r.status = 'invalid', false) AS is_invalid
FROM numbered n
LEFT JOIN returned r ON r.run_id = n.run_id AND r.episode_id = n.episode_id AND r.step = n.returned_step;
