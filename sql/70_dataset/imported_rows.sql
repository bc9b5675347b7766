-- view: imported_rows
-- grain: one row per non-blank line of an imported JSONL file the export reads
-- key: import_id, kind, line_number
-- Each row of the export's imported JSONL files (trajectory_scores, trajectory_sft,
-- perception_trajectories, selected_episodes, action_only, case_split) with its 1-based
-- line number; blank lines are skipped as the seed's loader skips them.
CREATE OR REPLACE VIEW imported_rows AS
WITH files AS (
    SELECT f.import_id, f.kind, decode(b.content) AS body
    FROM imported_files f
    JOIN (SELECT DISTINCT import_id FROM dataset_inputs) i USING (import_id)
    JOIN blobs b ON b.sha256 = f.blob_sha256
    WHERE f.is_jsonl
)
SELECT files.import_id, files.kind, t.line_number, t.line::JSON AS row
FROM files, unnest(string_split(files.body, chr(10))) WITH ORDINALITY AS t(line, line_number)
WHERE trim(t.line, ' ' || chr(9) || chr(13)) <> '';
