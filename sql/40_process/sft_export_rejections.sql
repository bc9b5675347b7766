-- view: sft_export_rejections
-- grain: one row per finished episode whose SFT trajectory cannot be exported
-- key: run_id, episode_id
-- Why the seed's export_trajectory_sft_example would refuse the episode's trajectory: a
-- model call whose tool-call arguments were not a JSON object (kept verbatim under `_raw`),
-- which a tool-calling SFT row cannot hold. The first such call is named. The episode keeps
-- its scores but is ineligible (`trajectory_sft_export_rejected: …` in trajectory_scores and
-- process_metrics) and writes no trajectory_sft row.
CREATE OR REPLACE VIEW sft_export_rejections AS
SELECT
    m.run_id,
    m.episode_id,
    arg_min('tool call ' || (c.value->>'id') || ' (' || (c.value->>'name') || ') arguments are not a JSON object',
            m.step * 1000 + c.key::INTEGER) AS reason
FROM model_calls m, json_each(m.tool_calls) c
WHERE json_type(c.value->'arguments') <> 'OBJECT' OR json_exists(c.value->'arguments', '$._raw')
GROUP BY ALL;
