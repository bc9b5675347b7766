-- view: imported_rows
-- grain: one row per non-blank line of an imported JSONL file the export reads
-- key: import_id, kind, line_number
-- Each row of the export's imported JSONL files (trajectory_scores, trajectory_sft,
-- perception_trajectories, selected_episodes, action_only, case_split) with its 1-based
-- line number; blank lines (only white space to Python) are skipped and a leading byte-order
-- mark dropped, as the seed's loader and the strict JSONL reader do.
CREATE OR REPLACE VIEW imported_rows AS
WITH files AS (
    SELECT f.import_id, f.kind, string_split(jsonl_text(b.content), chr(10)) AS lines
    FROM imported_files f
    JOIN (SELECT DISTINCT import_id FROM dataset_inputs) i USING (import_id)
    JOIN blobs b ON b.sha256 = f.blob_sha256
    WHERE f.is_jsonl
),
numbered AS (
    -- unnest in the select list: a lateral join would copy the whole file into every row
    SELECT import_id, kind, unnest(lines) AS line, unnest(range(1, len(lines) + 1)) AS line_number FROM files
)
SELECT import_id, kind, line_number, CASE WHEN NOT py_blank(line) THEN line::JSON END AS row
FROM numbered
-- the test again in the CASE: DuckDB may order a filter pushed into this view (on `row`)
-- before this one, and a blank line is no JSON
WHERE NOT py_blank(line);
