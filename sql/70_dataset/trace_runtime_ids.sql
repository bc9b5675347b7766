-- view: trace_runtime_ids
-- grain: one row per candidate trace that mentions a runtime id
-- key: source_id, episode_id
-- The runtime ids a trace mentions (seed `_collect_runtime_ids`): every non-blank string
-- under a key ending in `_id` and every item of a list under a key ending in `_ids`,
-- stripped, distinct and sorted. Native traces come from native_dataset_records.
CREATE OR REPLACE VIEW trace_runtime_ids AS
WITH traces AS (
    SELECT s.source_id, n.episode_id, n.trace
    FROM dataset_sources s
    JOIN native_dataset_records n ON n.run_id = s.source_id
    WHERE s.source_kind = 'run' AND n.trace IS NOT NULL
    UNION ALL
    SELECT d.import_id, d.episode_id, d.document
    FROM imported_documents d
    JOIN dataset_sources s ON s.source_id = d.import_id
    WHERE d.kind = 'trace'
),
ids AS (
    SELECT t.source_id, t.episode_id, py_strip(py_text(n.value)) AS runtime_id
    FROM traces t, json_tree(t.trace) n
    WHERE (n.type = 'VARCHAR' AND ends_with(n.key, '_id') AND NOT ends_with(n.fullkey, ']'))
       OR (n.type NOT IN ('OBJECT', 'ARRAY') AND ends_with(n.fullkey, ']') AND regexp_matches(n.path, '_ids"?$'))
)
SELECT source_id, episode_id, list_sort(list_distinct(list(runtime_id))) AS runtime_ids
FROM ids
WHERE runtime_id <> ''
GROUP BY source_id, episode_id;
