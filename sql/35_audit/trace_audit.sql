-- view: trace_audit
-- grain: one row per finished episode
-- key: run_id, episode_id
-- The hard and strict audit verdicts of each episode's trace, with their failure codes
-- (strict includes hard); `strict_trace_audit_failures` lists {code, severity, detail}.
CREATE OR REPLACE VIEW trace_audit AS
SELECT
    e.run_id,
    e.episode_id,
    coalesce(list_sort(list_distinct(list(f.code) FILTER (WHERE f.severity = 'hard'))), []) AS hard_failure_codes,
    coalesce(list_sort(list_distinct(list(f.code))), []) AS strict_failure_codes,
    count(f.code) FILTER (WHERE f.severity = 'hard') = 0 AS hard_trace_audit_pass,
    count(f.code) = 0 AS strict_trace_audit_pass,
    coalesce(
        list({'code': f.code, 'severity': f.severity, 'detail': f.detail} ORDER BY f.code, f.detail) FILTER (WHERE f.code IS NOT NULL),
        []
    ) AS strict_trace_audit_failures
FROM episodes e
LEFT JOIN trace_audit_failures f USING (run_id, episode_id)
WHERE e.finished
GROUP BY e.run_id, e.episode_id;
