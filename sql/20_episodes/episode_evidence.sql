-- view: episode_evidence
-- grain: one row per evidence id returned in a finished attempt
-- key: run_id, episode_id, evidence_id
-- Every source a tool showed the model, by the evidence id the judgment may cite; `visited`
-- is true when the agent opened the page itself (a successful `visit`).
CREATE OR REPLACE VIEW episode_evidence AS
WITH shown AS (
    SELECT t.run_id, t.episode_id, t.call_index, t.tool, t.status, unnest(from_json(t.sources, '[{
        "evidence_id": "VARCHAR", "url": "VARCHAR", "content_sha256": "VARCHAR",
        "source_family": "VARCHAR", "published": "VARCHAR"}]')) AS source
    FROM tool_calls t
),
first_seen AS (
    SELECT
        run_id,
        episode_id,
        source.evidence_id,
        arg_min(source, call_index) AS source,
        min(call_index) AS first_call_index,
        bool_or(tool = 'visit' AND status = 'ok') AS visited
    FROM shown
    GROUP BY run_id, episode_id, source.evidence_id
)
SELECT
    run_id,
    episode_id,
    evidence_id,
    source.url,
    normalize_url(source.url) AS normalized_url,
    source.content_sha256,
    source.source_family,
    source.published,
    first_call_index,
    visited
FROM first_seen;
