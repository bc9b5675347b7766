-- view: gold_facts
-- grain: one row per gold fact of a run's case
-- key: run_id, case_id, fact_id
-- What a correct investigation establishes, with the gold sources that support each fact.
CREATE OR REPLACE VIEW gold_facts AS
SELECT
    g.run_id,
    g.case_id,
    f.value->>'fact_id' AS fact_id,
    f.value->>'statement' AS statement,
    from_json(f.value->'source_ids', '["VARCHAR"]') AS source_ids
FROM gold_labels g, json_each(g.reference_chain->'facts') f;
