-- view: imported_rows
-- grain: one row per non-blank line of an imported JSONL file the export reads
-- key: import_id, kind, line_number
-- Each row of the export's imported JSONL files (trajectory_scores, trajectory_sft,
-- perception_trajectories, selected_episodes, action_only, case_split) with its 1-based
-- line number; blank lines (only white space to Python) are skipped, as the seed's loader and
-- the strict JSONL reader do (`jsonl_text` drops the byte-order mark a file imported by an
-- earlier version may open with).
CREATE OR REPLACE VIEW imported_rows AS
-- MATERIALIZED: the files wanted are found first, so each file's content goes through one join
-- (through two, as DuckDB ordered them, its 1.4 GB trajectory file was copied twice, ~1.5 s)
WITH wanted AS MATERIALIZED (
    SELECT f.import_id, f.kind, f.blob_sha256
    FROM imported_files f
    JOIN (SELECT DISTINCT import_id FROM dataset_inputs) i USING (import_id)
    WHERE f.is_jsonl
),
files AS (
    SELECT w.import_id, w.kind, string_split(jsonl_text(b.content), chr(10)) AS lines
    FROM blobs b
    JOIN wanted w ON w.blob_sha256 = b.sha256
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
