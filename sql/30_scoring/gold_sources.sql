-- view: gold_sources
-- grain: one row per gold reference source of a run's case
-- key: run_id, case_id, source_id
-- The reference chain's sources (origin, bridge, context) with their normalized URL, the
-- form every URL comparison of the scoring uses.
CREATE OR REPLACE VIEW gold_sources AS
SELECT
    g.run_id,
    g.case_id,
    s.value->>'source_id' AS source_id,
    s.value->>'url' AS url,
    normalize_url(s.value->>'url') AS normalized_url,
    s.value->>'content_sha256' AS content_sha256,
    s.value->>'role' AS role
FROM gold_labels g, json_each(g.reference_chain->'sources') s;
