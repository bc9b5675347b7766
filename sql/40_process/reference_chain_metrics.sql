-- view: reference_chain_metrics
-- grain: one row per scheduled episode
-- key: run_id, episode_id
-- The seed's reference_chain_metrics.jsonl row: how much of the gold reference chain the
-- investigation recovered. Not applicable to reviewed scoring packages (ifv-scoring-gold-v1),
-- which use a structured relation gate instead: `reason` says so in seed 000's words, and the
-- materialized file row holds the seed's keys alone (run_dir.py's NOT_APPLICABLE_KEYS: no
-- metrics). An episode that never finished gets the
-- seed's stand-in row: an engineering error with error 'canonical trace is missing' and
-- every metric 0; its materialized file row holds the seed's keys alone (run_dir.py's
-- STAND_IN_KEYS).
CREATE OR REPLACE VIEW reference_chain_metrics AS
SELECT
    m.run_id,
    m.episode_id,
    CASE WHEN r.is_scoring_package THEN 'ifv-scoring-reference-chain-v1' ELSE 'ifv-reference-chain-metrics-v2' END AS schema_version,
    m.case_id,
    m.prompt_group_id,
    NOT coalesce(r.is_scoring_package, false) AS applicable,
    m.engineering_error,
    {
        'fact_recovery_recall': m.fact_recovery_recall,
        'chain_recovery_recall': m.chain_recovery_recall,
        'evidence_recovery_recall': m.evidence_recovery_recall,
        'basis_reference_precision': m.basis_reference_precision
    } AS metrics,
    NULL::VARCHAR AS error,
    CASE WHEN r.is_scoring_package
         THEN 'ifv-scoring-gold-v1 uses a structured relation target gate instead of the v0.3 reference protocol'
    END AS reason
FROM episode_metrics m
JOIN run_manifests r USING (run_id)
UNION ALL BY NAME
SELECT
    e.run_id,
    e.episode_id,
    'ifv-reference-chain-metrics-v2' AS schema_version,
    e.case_id,
    e.prompt_group_id,
    NOT coalesce(r.is_scoring_package, false) AS applicable,
    true AS engineering_error,
    {
        'fact_recovery_recall': 0.0::DOUBLE,
        'chain_recovery_recall': 0.0::DOUBLE,
        'evidence_recovery_recall': 0.0::DOUBLE,
        'basis_reference_precision': 0.0::DOUBLE
    } AS metrics,
    'canonical trace is missing' AS error
FROM episodes e
JOIN run_manifests r USING (run_id)
WHERE NOT e.finished;
