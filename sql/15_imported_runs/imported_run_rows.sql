-- view: imported_run_rows
-- grain: one row per non-blank line of an imported run directory's JSONL file
-- key: run_id, kind, line_number
-- Each row of the seed files an imported run is read from (run_results, process_metrics,
-- trajectory_scores), with its 1-based line number; blank lines (only white space to Python)
-- are skipped, as the seed's loader and the strict JSONL reader do (`jsonl_text`: the text,
-- without the byte-order mark a file imported by an earlier version may open with).
CREATE OR REPLACE VIEW imported_run_rows AS
WITH files AS (
    SELECT f.import_id AS run_id, f.kind, string_split(jsonl_text(b.content), chr(10)) AS lines
    FROM imported_files f
    JOIN blobs b ON b.sha256 = f.blob_sha256
    WHERE f.source_kind = 'run_dir' AND f.kind IN ('run_results', 'process_metrics', 'trajectory_scores')
),
numbered AS (
    SELECT run_id, kind, unnest(lines) AS line, unnest(range(1, len(lines) + 1)) AS line_number FROM files
)
SELECT run_id, kind, line_number, CASE WHEN NOT py_blank(line) THEN line::JSON END AS row
FROM numbered
-- the test again in the CASE: DuckDB may order a filter pushed into this view (on `row`)
-- before this one, and a blank line is no JSON
WHERE NOT py_blank(line);
