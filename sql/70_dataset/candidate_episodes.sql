-- view: candidate_episodes
-- grain: one row per candidate episode of the export
-- key: source_id, episode_id
-- Every episode a dataset export considers, with the facts its decisions need and its
-- source's position among the export's sources (the order seed 002 reads them). Native runs:
-- finished episodes (native_dataset_records: families, score, sft_eligibility, trace sha256
-- and trajectory, filled by the exporter). Imported sources: each trace but an accepted
-- release's action-only ones; the score is the source's trajectory_scores.jsonl row naming
-- the episode (its key is episode_id or else case_id, stripped, never blank), the last one
-- of its source or, where it has none, of the nearest source before it;
-- an accepted release's selected row stands in for the score (teacher_score, eligible, no
-- reasons); `refused_score` is a score float() refuses, `score_origin` its row's file:line. `raw_reasons` is NULL when the score row has no
-- training_exclusion_reasons key; `refused_reasons` is one the seed cannot iterate, `reasons_origin`
-- its score row's file:line. Each candidate also carries its eligibility and
-- semantic-reward artifacts (with the files they were imported from) and its case's fixed split row. The exporter snapshots this
-- view into export_snapshot.candidate_episodes for the decision views.
-- The score as a double, the seed's float(score or 0.0) (NULL: the 0.0 default): a JSON
-- number read by DuckDB (the same double as Python's str() cast back, checked on 320k
-- values; a Python call per candidate was most of this view's cost after the runtime ids);
-- true as float(True), 1.0; a string as Python's float() reads it (Unicode digits and white
-- space, which DuckDB's cast refuses), NULL where float() refuses it.
CREATE OR REPLACE MACRO py_truthy_double(j) AS CASE
    WHEN json_type(j) IN ('BIGINT', 'UBIGINT', 'DOUBLE') THEN CASE WHEN py_truthy(j) THEN j::DOUBLE END
    WHEN is_json_true(j) THEN 1.0
    WHEN json_type(j) = 'VARCHAR' THEN py_float_text(json_extract_string(j, '$'))
END;
-- Whether the seed's float(j or 0.0) raises: a truthy value float() cannot read (a text that
-- is no number, a non-empty list or object: ValueError, TypeError; an integer past a double's
-- range: OverflowError). `refused_score` keeps such a value (and `score_origin` its file:line)
-- for dataset_problems, which stops the export there as the seed stops.
CREATE OR REPLACE MACRO py_float_refuses(j) AS py_truthy(j) AND CASE json_type(j)
    WHEN 'VARCHAR' THEN py_float_text(json_extract_string(j, '$')) IS NULL
    WHEN 'DOUBLE' THEN NOT isfinite(j::DOUBLE) AND NOT regexp_matches(j::VARCHAR, '[.eE]')
    ELSE json_type(j) IN ('ARRAY', 'OBJECT')
END;
-- Whether seed 002's `[str(item) for item in reasons or []]` (in `_deterministic_teacher_quality`,
-- its first reading of a trace's score row) raises: a truthy number or true is no iterable
-- (TypeError); a string gives its characters, an object its keys, a falsy value [].
CREATE OR REPLACE MACRO py_iter_refuses(j) AS py_truthy(j) AND json_type(j) NOT IN ('VARCHAR', 'ARRAY', 'OBJECT');
CREATE OR REPLACE VIEW candidate_episodes AS
WITH native AS (
    SELECT
        s.source_id,
        s.source_position,
        s.source_kind,
        n.episode_id,
        n.case_id,
        s.source_run_id,
        n.run_id || '/traces/' || safe_trace_filename(n.episode_id) AS source_trace,
        n.trace_sha256,
        n.image_sha256,
        n.source_family_keys,
        n.decision_policy_version,
        n.training_prohibited,
        NULL::JSON AS release_row,
        NULL::VARCHAR AS runtime_store_path,
        n.score_present,
        n.teacher_score,
        NULL::JSON AS refused_score,
        NULL::VARCHAR AS score_origin,
        n.raw_reasons,
        NULL::JSON AS refused_reasons,
        NULL::VARCHAR AS reasons_origin,
        n.eligible_flag,
        n.native_eligible,
        n.native_reasons
    FROM dataset_sources s
    JOIN native_dataset_records n ON n.run_id = s.source_id
    WHERE s.source_kind = 'run'
),
score_rows AS (
    SELECT
        s.source_position,
        py_strip(coalesce(py_or_text(r.row->'episode_id'), py_get_text(r.row, 'case_id', ''))) AS episode_id,
        r.line_number,
        r.row,
        s.path || '/trajectory_scores.jsonl:' || r.line_number AS origin
    FROM imported_rows r
    JOIN dataset_sources s ON s.source_id = r.import_id
    WHERE r.kind = 'trajectory_scores'
),
-- seed 002 fills one score_by_episode across its run directories, each one's rows before its
-- traces: a trace takes the last row naming it in its own source or an earlier one
scores AS (
    SELECT t.source_id, t.episode_id, arg_max(r.row, [r.source_position, r.line_number]) AS score,
           arg_max(r.origin, [r.source_position, r.line_number]) AS origin
    FROM imported_traces t
    JOIN score_rows r ON r.episode_id = t.episode_id AND r.source_position <= t.source_position
    -- seed 002 keeps a row only `if score_key`: a blank key (a null case_id is 'None') scores
    -- no episode, not even one whose id strips to ''
    WHERE r.episode_id <> '' AND NOT t.action_only
    GROUP BY t.source_id, t.episode_id
),
imported AS (
    SELECT
        t.source_id,
        t.source_position,
        t.source_kind,
        t.episode_id,
        t.case_id,
        t.source_run_id,
        t.source_trace,
        t.trace_sha256,
        t.image_sha256,
        t.source_family_keys,
        t.decision_policy_version,
        t.training_prohibited,
        t.release_row,
        t.runtime_store_path,
        t.release_row IS NOT NULL OR py_truthy(sc.score) AS score_present,
        coalesce(py_truthy_double(sv.score_value), 0.0) AS teacher_score,
        CASE WHEN py_float_refuses(sv.score_value) THEN sv.score_value END AS refused_score,
        CASE WHEN py_float_refuses(sv.score_value) THEN sv.score_origin END AS score_origin,
        CASE
            WHEN t.release_row IS NOT NULL THEN []::VARCHAR[]
            WHEN NOT json_exists(sc.score, '$.training_exclusion_reasons') THEN NULL
            -- the seed iterates whatever the key holds: a string's characters, an object's keys
            ELSE json_text_list(sc.score->'training_exclusion_reasons')
        END AS raw_reasons,
        -- read before an accepted release's row stands in for the score: the release's own score row counts too
        CASE WHEN py_iter_refuses(sc.score->'training_exclusion_reasons') THEN sc.score->'training_exclusion_reasons' END AS refused_reasons,
        CASE WHEN py_iter_refuses(sc.score->'training_exclusion_reasons') THEN sc.origin END AS reasons_origin,
        CASE WHEN t.release_row IS NOT NULL THEN 'true'::JSON ELSE sc.score->'training_eligible' END AS eligible_flag,
        NULL::BOOLEAN AS native_eligible,
        NULL::VARCHAR[] AS native_reasons
    FROM imported_traces t
    LEFT JOIN scores sc USING (source_id, episode_id)
    CROSS JOIN LATERAL (
        -- the value the seed reads as the teacher score, and the row it is in
        SELECT CASE WHEN t.release_row IS NOT NULL THEN t.release_row->'teacher_score' ELSE sc.score->'total' END AS score_value,
               CASE WHEN t.release_row IS NOT NULL THEN t.release_origin ELSE sc.origin END AS score_origin
    ) sv
    WHERE NOT t.action_only
),
candidates AS (
    SELECT * FROM native
    UNION ALL BY NAME
    SELECT * FROM imported
)
SELECT
    c.*,
    coalesce(i.runtime_ids, []) AS runtime_ids,
    t.episode_id IS NOT NULL AS has_trajectory,
    t.token_count_estimate,
    t.tool_call_count,
    p.episode_id IS NOT NULL AS has_perception,
    el.artifact AS eligibility_artifact,
    el.path AS eligibility_path,
    sem.artifact AS semantic_artifact,
    sem.path AS semantic_path,
    fx.case_id IS NOT NULL AS in_fixed_split,
    fx.split AS fixed_split,
    fx.split_group_id AS fixed_split_group_id,
    fx.image_sha256 AS fixed_split_image_sha256
FROM candidates c
LEFT JOIN trace_runtime_ids i USING (source_id, episode_id)
LEFT JOIN dataset_trajectories t USING (source_id, episode_id)
LEFT JOIN (SELECT DISTINCT episode_id FROM dataset_perception) p ON p.episode_id = c.episode_id
LEFT JOIN gate_artifacts el ON el.gate = 'sft_eligibility' AND el.episode_id = c.episode_id
LEFT JOIN gate_artifacts sem ON sem.gate = 'semantic_reward' AND sem.episode_id = c.episode_id
LEFT JOIN fixed_case_splits fx ON fx.case_id = c.case_id;
CREATE TABLE IF NOT EXISTS export_snapshot.candidate_episodes (
    source_id VARCHAR,
    source_position BIGINT,
    source_kind VARCHAR,
    episode_id VARCHAR,
    case_id VARCHAR,
    source_run_id JSON,
    source_trace VARCHAR,
    trace_sha256 VARCHAR,
    image_sha256 VARCHAR,
    source_family_keys VARCHAR[],
    decision_policy_version VARCHAR,
    training_prohibited BOOLEAN,
    release_row JSON,
    runtime_store_path VARCHAR,
    score_present BOOLEAN,
    teacher_score DOUBLE,
    refused_score JSON,
    score_origin VARCHAR,
    raw_reasons VARCHAR[],
    refused_reasons JSON,
    reasons_origin VARCHAR,
    eligible_flag JSON,
    native_eligible BOOLEAN,
    native_reasons VARCHAR[],
    runtime_ids VARCHAR[],
    has_trajectory BOOLEAN,
    token_count_estimate BIGINT,
    tool_call_count BIGINT,
    has_perception BOOLEAN,
    eligibility_artifact JSON,
    eligibility_path VARCHAR,
    semantic_artifact JSON,
    semantic_path VARCHAR,
    in_fixed_split BOOLEAN,
    fixed_split VARCHAR,
    fixed_split_group_id VARCHAR,
    fixed_split_image_sha256 VARCHAR
);
