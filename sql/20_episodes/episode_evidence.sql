-- view: episode_evidence
-- grain: one row per evidence id returned in a finished attempt
-- key: run_id, episode_id, evidence_id
-- Every source a tool showed the model, by the evidence id the judgment may cite; `visited`
-- is true when the agent opened the page itself (a successful `visit`).
CREATE OR REPLACE VIEW episode_evidence AS
WITH shown AS (
    SELECT t.run_id, t.episode_id, t.call_index, t.tool, t.status, s.value AS source
    FROM tool_calls t, json_each(t.sources) s
)
SELECT
    run_id,
    episode_id,
    source->>'evidence_id' AS evidence_id,
    arg_min(source->>'url', call_index) AS url,
    normalize_url(arg_min(source->>'url', call_index)) AS normalized_url,
    arg_min(source->>'content_sha256', call_index) AS content_sha256,
    arg_min(source->>'source_family', call_index) AS source_family,
    arg_min(source->>'published', call_index) AS published,
    min(call_index) AS first_call_index,
    bool_or(tool = 'visit' AND status = 'ok') AS visited
FROM shown
GROUP BY run_id, episode_id, source->>'evidence_id';
