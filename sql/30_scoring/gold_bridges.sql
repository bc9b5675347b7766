-- view: gold_bridges
-- grain: one row per gold bridge of a run's case
-- key: run_id, case_id, bridge_id
-- The reference images a `compare_with_reference` call must match to bridge the picture to
-- its origin.
CREATE OR REPLACE VIEW gold_bridges AS
SELECT
    g.run_id,
    g.case_id,
    b.value->>'bridge_id' AS bridge_id,
    b.value->>'source_id' AS source_id,
    b.value->>'reference_image_sha256' AS reference_image_sha256
FROM gold_labels g, json_each(g.reference_chain->'bridges') b;
