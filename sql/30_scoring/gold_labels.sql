-- view: gold_labels
-- grain: one row per run and gold case
-- key: run_id, case_id
-- The private evaluation gold each run is scored against: the newest `evaluation_gold`
-- artifact attached to the run, parsed row by row from its blob (JSONL, or a JSON list as the
-- seed also reads gold), as the strict JSONL reader reads it (lines of only white space
-- skipped; `jsonl_text` drops the byte-order mark gold stored by an earlier version may hold).
CREATE OR REPLACE VIEW gold_labels AS
WITH artifact AS (
    SELECT run_id, arg_max(payload->>'blob_sha256', seq) AS blob_sha256
    FROM events
    WHERE type = 'artifact.imported' AND payload->>'kind' = 'evaluation_gold'
    GROUP BY run_id
),
documents AS (
    SELECT artifact.run_id, jsonl_text(blobs.content) AS document
    FROM artifact
    JOIN blobs ON blobs.sha256 = artifact.blob_sha256
),
lines AS (
    SELECT
        run_id,
        unnest(CASE WHEN starts_with(ltrim(document, ' ' || chr(9) || chr(10) || chr(13)), '[')
                    THEN from_json(document, '["JSON"]')::VARCHAR[]
                    ELSE string_split(document, chr(10)) END) AS line
    FROM documents
),
rows AS (
    -- the blank test in a CASE: DuckDB may order a filter pushed into this view before it,
    -- and a blank line is no JSON
    SELECT run_id, CASE WHEN NOT py_blank(line) THEN line::JSON END AS row FROM lines
)
SELECT run_id, row->>'case_id' AS case_id, row->>'label' AS label, row->'reference_chain' AS reference_chain
FROM rows
WHERE row IS NOT NULL;
