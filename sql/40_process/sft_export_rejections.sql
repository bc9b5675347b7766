-- view: sft_export_rejections
-- grain: one row per finished episode whose SFT trajectory cannot be exported
-- key: run_id, episode_id
-- Why the seed's export_trajectory_sft_example would refuse the episode's trajectory: a
-- model call whose tool-call arguments were not a JSON object (kept verbatim under `_raw`),
-- which a tool-calling SFT row cannot hold. The first such call is named. The episode keeps
-- its scores but is ineligible (`trajectory_sft_export_rejected: …` in trajectory_scores and
-- process_metrics) and writes no trajectory_sft row.
CREATE OR REPLACE VIEW sft_export_rejections AS
WITH parsed AS (
    -- each list parsed once by from_json, then unnested: json_each parsed every call again for
    -- each of its fields (median 1.25 -> 0.42 CPU s at 100k episodes); the fields stay JSON, so
    -- that a non-string id or name (a number, an object) reads as `->>` reads it
    SELECT run_id, episode_id, step, tool_calls,
           from_json(tool_calls, '[{"id": "JSON", "name": "JSON", "arguments": "JSON"}]') AS calls
    FROM model_calls
),
requested AS (
    SELECT run_id, episode_id, step, position, NULL AS key, call.id, call.name,
           -- from_json reads `"arguments": null` as NULL, like a missing key, yet null is refused and missing not
           coalesce(call.arguments, tool_calls -> position -> 'arguments') AS arguments
    FROM (SELECT *, unnest(calls) AS call, generate_subscripts(calls, 1) - 1 AS position FROM parsed)
    UNION ALL
    -- tool_calls that is not a list (a malformed log): json_each's rows, their keys cast to a
    -- position only once refused, as before (an object's key need not be a number)
    SELECT run_id, episode_id, step, NULL, c.key, c.value->'id', c.value->'name', c.value->'arguments'
    FROM parsed, json_each(tool_calls) c
    WHERE calls IS NULL
)
SELECT
    run_id,
    episode_id,
    arg_min('tool call ' || (id->>'$') || ' (' || (name->>'$') || ') arguments are not a JSON object',
            step * 1000 + coalesce(position, key::INTEGER)) AS reason
FROM requested
WHERE json_type(arguments) <> 'OBJECT' OR json_exists(arguments, '$._raw')
GROUP BY ALL;
