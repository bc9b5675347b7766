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
evidence_sources AS MATERIALIZED (
    -- Each evidence row with each gold source it matches (one row of NULL gold columns when none),
    -- joined once for both the visited gold sources and the citations' grounding.
    SELECT ev.run_id, ev.episode_id, ev.evidence_id, ev.visited,
           gs.run_id IS NOT NULL AS matched, gs.source_id, gs.role
    FROM episode_evidence ev
    JOIN ep USING (run_id, episode_id)
    LEFT JOIN gold_sources gs
      ON gs.run_id = ev.run_id AND gs.case_id = ep.case_id
     AND (gs.normalized_url = ev.normalized_url OR gs.content_sha256 = ev.content_sha256)
),
visited_gold AS (
    SELECT DISTINCT run_id, episode_id, source_id, role
    FROM evidence_sources
    WHERE visited AND matched
),
matched_images AS (
    SELECT DISTINCT t.run_id, t.episode_id, c.value->>'reference_image_sha256' AS image_sha256
    FROM tool_calls t, json_each(t.data->'comparisons') c
    WHERE t.tool = 'compare_with_reference' AND t.status = 'ok' AND (c.value->>'match')::BOOLEAN
),
gold_counts AS (
    -- Counted per case and joined, rather than a subquery per episode.
    SELECT ep.run_id, ep.episode_id,
           coalesce(gs.gold_sources, 0) AS gold_sources,
           coalesce(f.gold_facts, 0) AS gold_facts,
           coalesce(b.gold_bridges, 0) AS gold_bridges
    FROM ep
    LEFT JOIN (SELECT run_id, case_id, count(*) AS gold_sources FROM gold_sources GROUP BY ALL) gs USING (run_id, case_id)
    LEFT JOIN (SELECT run_id, case_id, count(*) AS gold_facts FROM gold_facts GROUP BY ALL) f USING (run_id, case_id)
    LEFT JOIN (SELECT run_id, case_id, count(*) AS gold_bridges FROM gold_bridges GROUP BY ALL) b USING (run_id, case_id)
),
visited_counts AS (
    SELECT run_id, episode_id, count(*) FILTER (WHERE role <> 'origin') AS visited_non_origin_sources
    FROM visited_gold GROUP BY ALL
),
recovered_facts AS (
    SELECT v.run_id, v.episode_id, count(DISTINCT f.fact_id) AS recovered_facts
    FROM visited_gold v
    JOIN ep USING (run_id, episode_id)
    JOIN gold_facts f ON f.run_id = v.run_id AND f.case_id = ep.case_id AND list_contains(f.source_ids, v.source_id)
    GROUP BY ALL
),
recovered_bridges AS (
    SELECT i.run_id, i.episode_id, count(DISTINCT b.bridge_id) AS recovered_bridges
    FROM matched_images i
    JOIN ep USING (run_id, episode_id)
    JOIN gold_bridges b ON b.run_id = i.run_id AND b.case_id = ep.case_id AND b.reference_image_sha256 = i.image_sha256
    GROUP BY ALL
),
evidence_gold AS (
    SELECT run_id, episode_id, evidence_id, bool_or(source_id IS NOT NULL) AS is_gold
    FROM evidence_sources
    GROUP BY ALL
),
citation_counts AS (
    SELECT c.run_id, c.episode_id, count(*) AS citations,
           count(g.evidence_id) AS grounded_citations,
           count(*) FILTER (WHERE g.is_gold) AS gold_citations
    FROM citations c
    LEFT JOIN evidence_gold g USING (run_id, episode_id, evidence_id)
    GROUP BY ALL
),
action_counts AS (
    SELECT run_id, episode_id, count(*) AS tool_calls,
           count(*) FILTER (WHERE is_duplicate) AS duplicate_tool_calls,
           count(*) FILTER (WHERE is_invalid) AS invalid_tool_calls
    FROM tool_calls GROUP BY ALL
),
per_episode AS (
    SELECT
        ep.run_id,
        ep.episode_id,
        g.gold_sources,
        coalesce(vc.visited_non_origin_sources, 0) AS visited_non_origin_sources,
        g.gold_facts,
        coalesce(rf.recovered_facts, 0) AS recovered_facts,
        g.gold_bridges,
        coalesce(rb.recovered_bridges, 0) AS recovered_bridges,
        coalesce(cc.citations, 0) AS citations,
        coalesce(cc.grounded_citations, 0) AS grounded_citations,
        coalesce(cc.gold_citations, 0) AS gold_citations,
        coalesce(ac.tool_calls, 0) AS tool_calls,
        coalesce(ac.duplicate_tool_calls, 0) AS duplicate_tool_calls,
        coalesce(ac.invalid_tool_calls, 0) AS invalid_tool_calls
    FROM ep
    JOIN gold_counts g USING (run_id, episode_id)
    LEFT JOIN visited_counts vc USING (run_id, episode_id)
    LEFT JOIN recovered_facts rf USING (run_id, episode_id)
    LEFT JOIN recovered_bridges rb USING (run_id, episode_id)
    LEFT JOIN citation_counts cc USING (run_id, episode_id)
    LEFT JOIN action_counts ac USING (run_id, episode_id)
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
    verdict_correct(ep.termination, ep.verdict, ep.gold_label) AS result_correct,
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
