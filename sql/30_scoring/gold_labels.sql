-- view: gold_labels
-- grain: one row per run and gold case
-- key: run_id, case_id
-- The private evaluation gold each run is scored against: the newest `evaluation_gold`
-- artifact attached to the run, parsed row by row from its blob.
CREATE OR REPLACE VIEW gold_labels AS
WITH artifact AS (
    SELECT run_id, arg_max(payload->>'blob_sha256', seq) AS blob_sha256
    FROM events
    WHERE type = 'artifact.imported' AND payload->>'kind' = 'evaluation_gold'
    GROUP BY run_id
),
lines AS (
    SELECT artifact.run_id, unnest(string_split(decode(blobs.content), chr(10))) AS line
    FROM artifact
    JOIN blobs ON blobs.sha256 = artifact.blob_sha256
)
SELECT
    run_id,
    line::JSON->>'case_id' AS case_id,
    line::JSON->>'label' AS label,
    line::JSON->'reference_chain' AS reference_chain
FROM lines
WHERE trim(line) <> '';
