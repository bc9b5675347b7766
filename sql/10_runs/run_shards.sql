-- view: run_shards
-- grain: one row per native run of --shard-count 2 or more
-- key: run_id
-- A sharded run's shards in this log: how many it was split into, which of them select cases
-- (each case its shards split is in one of the first min(shard_count, cases), recorded since
-- cases_before_sharding was; before, all), the shards this log holds (its own, or merged by
-- `log merge`) and those that select cases but are not here. The run is whole once
-- shards_unmerged is empty (`runs` reads `incomplete` until then).
CREATE OR REPLACE VIEW run_shards AS
WITH held AS (
    SELECT run_id, list_sort(list(DISTINCT coalesce(TRY_CAST(payload->'benchmark'->>'shard_index' AS BIGINT), 0))) AS shards_merged
    FROM events WHERE type = 'run.started' GROUP BY run_id
),
split AS (
    SELECT run_id, TRY_CAST(manifest->'benchmark'->>'shard_count' AS BIGINT) AS shard_count,
           least(TRY_CAST(manifest->'benchmark'->>'shard_count' AS BIGINT),
                 coalesce(TRY_CAST(manifest->'selection'->>'cases_before_sharding' AS BIGINT),
                          TRY_CAST(manifest->'benchmark'->>'shard_count' AS BIGINT))) AS shards_needed
    FROM run_manifests
)
SELECT
    run_id,
    shard_count,
    shards_needed,
    shards_merged,
    list_filter(range(shards_needed), lambda i: NOT list_contains(shards_merged, i)) AS shards_unmerged
FROM split JOIN held USING (run_id)
WHERE shard_count > 1;
