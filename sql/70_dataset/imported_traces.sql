-- view: imported_traces
-- grain: one row per trace of an imported source of the export
-- key: source_id, episode_id
-- Each imported trace as the seed's exporter reads it: episode id (image_id or file stem),
-- case id (runtime_case.case_id, case_id, image_id or episode id), file path and sha256,
-- the `content:` source families of its evidence (domain families never join cases), its
-- decision policy version (its own, top-level or in its state, else '': as the seed, never
-- the run manifest's, so a source whose traces lack it exports dataset v2), the runtime ids
-- it mentions (trace_runtime_ids' rule, computed here: reading every trace document again
-- decompressed the log's blobs a second time), and for an accepted release its selected row
-- (and that row's file:line),
-- runtime store and whether it is action-only (its training buckets lack reasoning_sft: no
-- reasoning SFT row, but a perception example).
CREATE OR REPLACE VIEW imported_traces AS
WITH traces AS (
    SELECT
        s.source_id,
        s.source_position,
        s.source_kind,
        s.source_run_id,
        s.training_prohibited,
        d.episode_id,
        d.path AS source_trace,
        d.sha256 AS trace_sha256,
        -- each document is parsed once for all the fields read here (state, case_id, image_id, decision_policy_version)
        json_extract(d.document, ['$.state', '$.case_id', '$.image_id', '$.decision_policy_version']) AS top,
        -- every evidence item's source_family as text, in one pass over the document (a
        -- json_each per trace cost most of this view); only strings can start with `content:`
        json_extract_string(d.document, '$.state.investigation_state.evidence[*].source_family') AS cited_families,
        trace_runtime_id_list(d.document) AS runtime_ids
    FROM dataset_sources s
    JOIN imported_documents d ON d.import_id = s.source_id AND d.kind = 'trace'
),
stated AS (
    SELECT t.* EXCLUDE (top), CASE WHEN json_type(top[1]) = 'OBJECT' THEN top[1] END AS state,
           top[2] AS trace_case_id, top[3] AS trace_image_id, top[4] AS trace_policy_version
    FROM traces t
),
parts AS (
    SELECT t.*, json_extract(t.state, ['$.runtime_case', '$.decision_policy_version']) AS inner_fields
    FROM stated t
),
shaped AS (
    SELECT
        t.* EXCLUDE (inner_fields),
        CASE WHEN json_type(inner_fields[1]) = 'OBJECT' THEN inner_fields[1] END AS runtime_case,
        inner_fields[2] AS state_policy_version
    FROM parts t
),
selected AS (
    SELECT py_strip(py_get_text(r.row, 'episode_id', '')) AS episode_id, r.row AS release_row,
           i.path || '/selected_episodes.jsonl:' || r.line_number AS release_origin
    FROM imported_rows r
    JOIN dataset_settings s ON r.import_id = s.accepted_release_import
    JOIN import_sources i ON i.import_id = r.import_id
    WHERE r.kind = 'selected_episodes'
),
stores AS (
    SELECT f.import_id AS source_id, f.episode_id, f.path AS runtime_store_path
    FROM imported_files f
    WHERE f.kind = 'runtime_store'
)
SELECT
    t.source_id,
    t.source_position,
    t.source_kind,
    t.episode_id,
    py_strip(coalesce(
        py_or_text(t.runtime_case->'case_id'), py_or_text(t.trace_case_id), py_or_text(t.trace_image_id), t.episode_id
    )) AS case_id,
    t.source_run_id,
    t.source_trace,
    t.trace_sha256,
    py_get_text(t.runtime_case, 'image_sha256', '') AS image_sha256,
    list_sort(list_distinct(list_filter(
        list_transform(t.cited_families, lambda f: py_strip(f)), lambda f: starts_with(f, 'content:')
    ))) AS source_family_keys,
    coalesce(py_or_text(t.trace_policy_version), py_or_text(t.state_policy_version), '') AS decision_policy_version,
    t.training_prohibited,
    sel.release_row,
    sel.release_origin,
    coalesce(
        json_type(sel.release_row->'training_buckets') = 'ARRAY'
        AND NOT list_contains(from_json(sel.release_row->'training_buckets', '["VARCHAR"]'), 'reasoning_sft'),
        false
    ) AS action_only,
    st.runtime_store_path,
    t.runtime_ids
FROM shaped t
LEFT JOIN selected sel ON t.source_kind = 'accepted_release' AND sel.episode_id = t.episode_id
LEFT JOIN stores st ON st.source_id = t.source_id AND st.episode_id = t.episode_id;
