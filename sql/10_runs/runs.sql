-- view: runs
-- grain: one row per run
-- key: run_id
-- Each evaluation run in the log: a native run (a run.started event) or an imported run
-- directory (`imported_runs`, source = 'imported', its status and error count as its
-- run_manifest.json recorded them); other imports and dataset exports are recorded under
-- their own ids and not listed. For each: when it
-- started and last finished, its release, provider and model, a label of the settings that
-- tell runs apart (rollouts, base sampling seed, ablations, shard or shards merged, image access), and how
-- many of its planned episodes have finished and how many of those count as errors
-- (episode_errors). The status covers every episode of the run, however many invocations
-- (`eval resume`) it took: `failed` when its last invocation crashed, `running_or_interrupted`
-- before any invocation finished, `incomplete` while an episode has not finished or a shard of
-- a `--shard-count` run that selects cases is not in this log (`run_shards`: a shard alone, or
-- merged with only some of the others: the run is not whole), `completed_with_errors` when an episode
-- counts as an error, else `completed`.
CREATE OR REPLACE VIEW runs AS
WITH started AS (
    -- a merged sharded run has one run.started per shard: run_manifests says which is the run's
    SELECT s.run_id, s.started_at, m.manifest AS payload, s.shards
    FROM (
        SELECT run_id, min(ts) AS started_at, count(*) AS shards
        FROM events WHERE type = 'run.started' GROUP BY run_id
    ) s
    JOIN run_manifests m USING (run_id)
    UNION ALL
    SELECT run_id, coalesce(try_cast(manifest->>'started_at' AS TIMESTAMPTZ), imported_at), manifest, 1 FROM imported_runs
),
finished_runs AS (
    -- the last to finish: by time, since merging renumbers a later shard's events whenever it finished
    SELECT run_id, max(ts) AS finished_at, arg_max(payload->>'status', (ts, seq)) AS status
    FROM events
    WHERE type = 'run.finished'
    GROUP BY run_id
),
planned AS (
    SELECT run_id, count(*) AS episodes_planned, count(*) FILTER (WHERE finished) AS episodes_finished
    FROM episodes
    GROUP BY run_id
    UNION ALL
    SELECT run_id, count(*), count(*) FILTER (WHERE termination IS NOT NULL) FROM imported_episodes GROUP BY run_id
),
errored AS (
    SELECT run_id, count(*) AS episodes_errored FROM episode_errors GROUP BY run_id
    UNION ALL
    SELECT run_id, coalesce(TRY_CAST(manifest->'result'->>'num_errors' AS BIGINT), 0) FROM imported_runs
),
sizes AS (
    SELECT run_id, count(*) AS events, max(ts) AS last_event_at FROM events GROUP BY run_id
),
labels AS (
    SELECT
        run_id,
        concat_ws(' ',
            'rollouts=' || coalesce(payload->'agent'->>'rollouts_per_case', '1'),
            'seed=' || coalesce(payload->'agent'->>'base_sampling_seed', '?'),
            CASE WHEN (payload->'agent'->'tool_families'->'web_search'->>'enabled') = 'false' THEN 'no-web-search' END,
            CASE WHEN (payload->'agent'->'tool_families'->'image_retrieval'->>'enabled') = 'false' THEN 'no-image-retrieval' END,
            CASE WHEN (payload->'agent'->'tool_families'->'evidence_inspection'->>'enabled') = 'false' THEN 'no-evidence-inspection' END,
            CASE WHEN TRY_CAST(payload->'benchmark'->>'shard_count' AS INTEGER) > 1 AND shards = 1
                 THEN 'shard=' || (payload->'benchmark'->>'shard_index') || '/' || (payload->'benchmark'->>'shard_count')
                 WHEN TRY_CAST(payload->'benchmark'->>'shard_count' AS INTEGER) > 1
                 THEN 'shards=' || shards || '/' || (payload->'benchmark'->>'shard_count') END,
            CASE WHEN (payload->'agent'->>'image_access_mode') = 'separate_vlm' THEN 'separate_vlm' END
        ) AS label
    FROM started
)
SELECT
    sizes.run_id,
    started.started_at,
    sizes.last_event_at,
    CASE
        WHEN imported.run_id IS NOT NULL THEN imported.manifest->>'status'
        WHEN finished_runs.status = 'failed' THEN 'failed'
        WHEN finished_runs.status IS NULL THEN 'running_or_interrupted'
        WHEN coalesce(planned.episodes_finished, 0) < coalesce(planned.episodes_planned, 0) THEN 'incomplete'
        WHEN len(run_shards.shards_unmerged) > 0 THEN 'incomplete'
        WHEN coalesce(errored.episodes_errored, 0) > 0 THEN 'completed_with_errors'
        ELSE 'completed'
    END AS status,
    started.payload->'benchmark'->>'release_id' AS release_id,
    started.payload->'agent'->>'provider' AS provider,
    started.payload->'agent'->>'model' AS model,
    labels.label,
    coalesce(planned.episodes_planned, 0) AS episodes_planned,
    coalesce(planned.episodes_finished, 0) AS episodes_finished,
    coalesce(errored.episodes_errored, 0) AS episodes_errored,
    sizes.events,
    CASE WHEN imported.run_id IS NULL THEN 'native' ELSE 'imported' END AS source
FROM sizes
JOIN started USING (run_id)
JOIN labels USING (run_id)
LEFT JOIN run_shards USING (run_id)
LEFT JOIN imported_runs imported USING (run_id)
LEFT JOIN finished_runs USING (run_id)
LEFT JOIN planned USING (run_id)
LEFT JOIN errored USING (run_id);
