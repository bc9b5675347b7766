-- view: dataset_trajectories
-- grain: one row per candidate episode with an exportable SFT trajectory
-- key: source_id, episode_id
-- The full-trajectory SFT record of each episode (TRL's conversational tool-calling format:
-- messages, tools, images, metadata): for native runs the record eviscene.exports.
-- trajectories builds from the events, for imported sources the episode's row of the
-- source's trajectory_sft.jsonl (the exporter seed 000 ran over the same trace). The token
-- estimate is in UTF-8 bytes (the row's own token_count_estimate, else the bytes of its
-- messages as JSON), and tool_call_count counts the assistant tool calls.
-- `malformed` (`FILE:LINE: what`, NULL for a sound record) names an imported row that is no
-- SFT record seed 002 could build (its TrajectorySFTExample has a list of message objects,
-- each one's content text, a list or null, and a list of tools): dataset_problems stops the
-- export there, where the seed builds the trajectory.
-- The exporter snapshots it into export_snapshot.dataset_trajectories for the decision views.
CREATE OR REPLACE VIEW dataset_trajectories AS
-- each record is parsed once for the fields read here (an imported row's episode id among them)
WITH native AS (
    SELECT s.source_id, n.episode_id, n.trajectory AS record,
           json_extract(n.trajectory, ['$.token_count_estimate', '$.tool_call_count', '$.messages']) AS f
    FROM dataset_sources s
    JOIN native_dataset_records n ON n.run_id = s.source_id
    WHERE s.source_kind = 'run' AND n.trajectory IS NOT NULL
),
imported AS (
    SELECT s.source_id, r.row AS record, s.path || '/trajectory_sft.jsonl:' || r.line_number AS origin,
           json_extract(r.row, ['$.token_count_estimate', '$.tool_call_count', '$.messages', '$.episode_id', '$.tools']) AS f
    FROM dataset_sources s
    JOIN imported_rows r ON r.import_id = s.source_id AND r.kind = 'trajectory_sft'
),
fields AS (
    SELECT source_id, episode_id, record, f, NULL AS malformed FROM native
    UNION ALL
    SELECT source_id, py_strip(py_text(f[4])), record, f, origin || ': ' || CASE
        WHEN coalesce(json_type(f[3]), 'NULL') = 'NULL' THEN 'no messages'
        WHEN json_type(f[3]) <> 'ARRAY' THEN 'messages is not a list'
        WHEN NOT list_bool_and(list_transform(json_type(f[3], '$[*]'), lambda t: t = 'OBJECT')) THEN 'a message is not an object'
        WHEN NOT list_bool_and(list_transform(json_type(f[3], '$[*].content'), lambda t: t IN ('VARCHAR', 'ARRAY', 'NULL')))
            THEN 'a message content is neither text, a list nor null'
        WHEN coalesce(json_type(f[5]), 'NULL') NOT IN ('ARRAY', 'NULL') THEN 'tools is not a list'
    END FROM imported
)
SELECT
    source_id,
    episode_id,
    record,
    malformed,
    coalesce(TRY_CAST(f[1]->>'$' AS BIGINT), octet_length(encode(f[3]::VARCHAR))) AS token_count_estimate,
    coalesce(
        TRY_CAST(f[2]->>'$' AS BIGINT),
        -- each message's tool_calls counted where they lie (extracting them first wrote and parsed them again)
        list_sum(list_transform(json_array_length(f[3], '$[*].tool_calls'), lambda n: coalesce(n, 0)))::BIGINT,
        0
    ) AS tool_call_count
FROM fields;
CREATE TABLE IF NOT EXISTS export_snapshot.dataset_trajectories (
    source_id VARCHAR,
    episode_id VARCHAR,
    record JSON,
    malformed VARCHAR,
    token_count_estimate BIGINT,
    tool_call_count BIGINT
);
