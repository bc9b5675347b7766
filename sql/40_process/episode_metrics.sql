-- view: episode_metrics
-- grain: one row per finished episode
-- key: run_id, episode_id
-- Protocol ifv-process-score-v1, per episode, against the run's gold: correctness, recall of
-- gold sources, facts and bridges, precision and grounding of the verdict's citations, and
-- the action counts the penalties use. URLs match after normalize_url, or by content_sha256.
CREATE OR REPLACE VIEW episode_metrics AS
WITH ep AS (
    SELECT e.*, m.max_tool_actions, g.label AS gold_label
    FROM episodes e
    JOIN run_manifests m USING (run_id)
    LEFT JOIN gold_labels g ON g.run_id = e.run_id AND g.case_id = e.case_id
    WHERE e.finished
),
citations AS (
    SELECT ep.run_id, ep.episode_id, c.value->>'evidence_id' AS evidence_id
    FROM ep, json_each(ep.verdict_basis) c
),
visited_gold AS (
    SELECT DISTINCT ev.run_id, ev.episode_id, gs.source_id, gs.role
    FROM episode_evidence ev
    JOIN ep USING (run_id, episode_id)
    JOIN gold_sources gs
      ON gs.run_id = ev.run_id AND gs.case_id = ep.case_id
     AND (gs.normalized_url = ev.normalized_url OR gs.content_sha256 = ev.content_sha256)
    WHERE ev.visited
),
matched_images AS (
    SELECT DISTINCT t.run_id, t.episode_id, c.value->>'reference_image_sha256' AS image_sha256
    FROM tool_calls t, json_each(t.data->'comparisons') c
    WHERE t.tool = 'compare_with_reference' AND t.status = 'ok' AND (c.value->>'match')::BOOLEAN
),
per_episode AS (
    SELECT
        ep.run_id,
        ep.episode_id,
        (SELECT count(*) FROM gold_sources gs WHERE gs.run_id = ep.run_id AND gs.case_id = ep.case_id) AS gold_sources,
        (SELECT count(*) FROM visited_gold v WHERE v.run_id = ep.run_id AND v.episode_id = ep.episode_id AND v.role <> 'origin') AS visited_non_origin_sources,
        (SELECT count(*) FROM gold_facts f WHERE f.run_id = ep.run_id AND f.case_id = ep.case_id) AS gold_facts,
        (SELECT count(*) FROM gold_facts f WHERE f.run_id = ep.run_id AND f.case_id = ep.case_id
            AND EXISTS (SELECT 1 FROM visited_gold v WHERE v.run_id = ep.run_id AND v.episode_id = ep.episode_id
                        AND list_contains(f.source_ids, v.source_id))) AS recovered_facts,
        (SELECT count(*) FROM gold_bridges b WHERE b.run_id = ep.run_id AND b.case_id = ep.case_id) AS gold_bridges,
        (SELECT count(*) FROM gold_bridges b WHERE b.run_id = ep.run_id AND b.case_id = ep.case_id
            AND EXISTS (SELECT 1 FROM matched_images i WHERE i.run_id = ep.run_id AND i.episode_id = ep.episode_id
                        AND i.image_sha256 = b.reference_image_sha256)) AS recovered_bridges,
        (SELECT count(*) FROM citations c WHERE c.run_id = ep.run_id AND c.episode_id = ep.episode_id) AS citations,
        (SELECT count(*) FROM citations c
            JOIN episode_evidence ev ON ev.run_id = c.run_id AND ev.episode_id = c.episode_id AND ev.evidence_id = c.evidence_id
            WHERE c.run_id = ep.run_id AND c.episode_id = ep.episode_id) AS grounded_citations,
        (SELECT count(*) FROM citations c
            JOIN episode_evidence ev ON ev.run_id = c.run_id AND ev.episode_id = c.episode_id AND ev.evidence_id = c.evidence_id
            WHERE c.run_id = ep.run_id AND c.episode_id = ep.episode_id
              AND EXISTS (SELECT 1 FROM gold_sources gs WHERE gs.run_id = ep.run_id AND gs.case_id = ep.case_id
                          AND (gs.normalized_url = ev.normalized_url OR gs.content_sha256 = ev.content_sha256))) AS gold_citations,
        (SELECT count(*) FROM tool_calls t WHERE t.run_id = ep.run_id AND t.episode_id = ep.episode_id) AS tool_calls,
        (SELECT count(*) FROM tool_calls t WHERE t.run_id = ep.run_id AND t.episode_id = ep.episode_id AND t.is_duplicate) AS duplicate_tool_calls,
        (SELECT count(*) FROM tool_calls t WHERE t.run_id = ep.run_id AND t.episode_id = ep.episode_id AND t.is_invalid) AS invalid_tool_calls
    FROM ep
)
SELECT
    ep.run_id,
    ep.episode_id,
    ep.case_id,
    ep.prompt_group_id,
    ep.rollout_index,
    ep.termination,
    ep.verdict,
    ep.confidence,
    ep.gold_label,
    ep.termination = 'completed' AND ep.verdict IS NOT DISTINCT FROM ep.gold_label AS result_correct,
    ep.termination = 'error' AS engineering_error,
    ep.verdict IS NOT NULL AS has_judgment,
    ep.max_tool_actions,
    p.* EXCLUDE (run_id, episode_id),
    CASE WHEN p.gold_sources = 0 THEN 0.0 ELSE p.visited_non_origin_sources / p.gold_sources END AS evidence_recovery_recall,
    CASE WHEN p.gold_facts = 0 THEN 0.0 ELSE p.recovered_facts / p.gold_facts END AS fact_recovery_recall,
    CASE WHEN p.gold_bridges = 0 THEN 0.0 ELSE p.recovered_bridges / p.gold_bridges END AS chain_recovery_recall,
    CASE WHEN p.citations = 0 THEN 0.0 ELSE p.gold_citations / p.citations END AS basis_reference_precision
FROM ep
JOIN per_episode p USING (run_id, episode_id);
