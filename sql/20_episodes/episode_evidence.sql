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
),
-- normalize_url (Python) once per distinct URL: the rollouts of a case see the same pages.
normalized AS (
    SELECT url, normalize_url(url) AS normalized_url FROM (SELECT DISTINCT source.url AS url FROM first_seen)
)
SELECT
    f.run_id,
    f.episode_id,
    f.evidence_id,
    f.source.url,
    n.normalized_url,
    f.source.content_sha256,
    f.source.source_family,
    f.source.published,
    f.first_call_index,
    f.visited
FROM first_seen f
JOIN normalized n ON n.url IS NOT DISTINCT FROM f.source.url;
