-- view: dataset_summary
-- grain: one row per export
-- key: accepted_episode_count
-- The counts of seed 002's manifest: short SFT rows and their cases (the rows' own case
-- ids), accepted episodes and cases (the traces' case ids), long holdout, candidates,
-- excluded, split groups (components), rows per split, perception examples per split,
-- accepted-release selected cases and action-only rows, and the one
-- decision_policy_version of the candidates ('' when there are none).
CREATE OR REPLACE VIEW dataset_summary AS
WITH candidates AS (
    SELECT count(*) AS candidates, count(*) FILTER (WHERE NOT accepted) AS excluded, coalesce(min(decision_policy_version), '') AS version
    FROM rollout_selection
),
accepted AS (
    SELECT
        count(*) AS accepted,
        count(*) FILTER (WHERE sft_route = 'short_sft') AS short_rows,
        count(*) FILTER (WHERE sft_route = 'long_holdout') AS long_rows,
        count(DISTINCT case_id) AS cases,
        -- seed 002 counts the case ids of the split files' rows: the SFT trajectory's own, which
        -- may differ from the trace's case id (candidate metadata) that accepted_case_count counts
        count(DISTINCT py_text(record->'case_id')) FILTER (WHERE sft_route = 'short_sft') AS short_cases,
        count(DISTINCT component_id) AS groups,
        map_from_entries([
            ('train', count(*) FILTER (WHERE sft_route = 'short_sft' AND split = 'train')),
            ('validation', count(*) FILTER (WHERE sft_route = 'short_sft' AND split = 'validation')),
            ('test', count(*) FILTER (WHERE sft_route = 'short_sft' AND split = 'test'))
        ]) AS example_counts
    FROM dataset_rows
),
perception AS (
    SELECT
        count(*) FILTER (WHERE action_only) AS action_only,
        map_from_entries([
            ('train', count(*) FILTER (WHERE split = 'train')),
            ('validation', count(*) FILTER (WHERE split = 'validation')),
            ('test', count(*) FILTER (WHERE split = 'test'))
        ]) AS counts
    FROM perception_examples
),
release AS (
    SELECT
        count(*) FILTER (WHERE r.kind = 'selected_episodes') AS selected_rows,
        count(*) FILTER (WHERE r.kind = 'action_only') AS action_only_rows,
        any_value(st.accepted_release_import) IS NOT NULL AS accepted_release
    FROM dataset_settings st
    -- only the two files counted: the release's others (and without a release, every file
    -- of the export) are not read
    LEFT JOIN (SELECT import_id, kind FROM imported_rows WHERE kind IN ('selected_episodes', 'action_only')) r
        ON r.import_id = st.accepted_release_import
)
SELECT
    a.short_rows AS episode_count,
    a.accepted AS accepted_episode_count,
    CASE WHEN r.accepted_release THEN r.selected_rows ELSE a.accepted END AS selected_release_case_count,
    r.action_only_rows AS action_only_episode_count,
    p.action_only AS action_only_perception_count,
    a.long_rows AS long_holdout_episode_count,
    a.cases AS accepted_case_count,
    a.short_cases AS short_sft_case_count,
    c.candidates AS candidate_episode_count,
    c.excluded AS excluded_episode_count,
    a.groups AS group_count,
    a.example_counts,
    p.counts AS perception_example_counts,
    c.version AS decision_policy_version
FROM candidates c, accepted a, perception p, release r;
