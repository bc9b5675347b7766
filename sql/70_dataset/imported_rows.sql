-- view: imported_rows
-- grain: one row per non-blank line of an imported JSONL file the export reads
-- key: import_id, kind, line_number
-- Each row of the export's imported JSONL files (trajectory_scores, trajectory_sft,
-- perception_trajectories, selected_episodes, action_only, case_split) with its 1-based
-- line number; blank lines are skipped as the seed's loader skips them.
CREATE OR REPLACE VIEW imported_rows AS
WITH files AS (
    SELECT f.import_id, f.kind, string_split(decode(b.content), chr(10)) AS lines
    FROM imported_files f
    JOIN (SELECT DISTINCT import_id FROM dataset_inputs) i USING (import_id)
    JOIN blobs b ON b.sha256 = f.blob_sha256
    WHERE f.is_jsonl
),
numbered AS (
    -- unnest in the select list: a lateral join would copy the whole file into every row
    SELECT import_id, kind, unnest(lines) AS line, unnest(range(1, len(lines) + 1)) AS line_number FROM files
)
SELECT import_id, kind, line_number, line::JSON AS row
FROM numbered
-- a line with a character other than space, tab or CR: ltrim (trim() with a character list is
-- ~30x slower on long non-ASCII lines)
WHERE ltrim(line, ' ' || chr(9) || chr(13)) <> '';
