-- view: fixed_case_splits
-- grain: one row per case of the export's fixed case split
-- key: case_id
-- The frozen split (seed --case-split): each case's train/validation split, its
-- split_group_id and the image sha256 the structured gate compares with the trace's
-- (as Python's str(), '' when the row has none). Empty without a fixed split.
-- The exporter snapshots it into export_snapshot.fixed_case_splits for the decision views.
CREATE OR REPLACE VIEW fixed_case_splits AS
SELECT
    py_strip(py_get_text(r.row, 'case_id', '')) AS case_id,
    py_text(r.row->'split') AS split,
    py_text(r.row->'split_group_id') AS split_group_id,
    py_get_text(r.row, 'image_sha256', '') AS image_sha256,
    r.row
FROM imported_rows r
JOIN dataset_settings s ON r.import_id = s.case_split_import
WHERE r.kind = 'case_split';
CREATE TABLE IF NOT EXISTS export_snapshot.fixed_case_splits (
    case_id VARCHAR,
    split VARCHAR,
    split_group_id VARCHAR,
    image_sha256 VARCHAR,
    row JSON
);
