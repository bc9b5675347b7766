-- view: runs
-- grain: one row per run
-- key: run_id
-- Each evaluation run in the log (a run.started event; imports and dataset exports are
-- recorded under their own ids and listed by `imports`/`dataset` commands instead): when it
-- started and last finished, its release, provider and model, and how many of its planned
-- episodes have finished (and how many of those errored).
CREATE OR REPLACE VIEW runs AS
WITH started AS (
    SELECT
        run_id,
        min(ts) AS started_at,
        arg_min(payload, seq) AS payload
    FROM events
    WHERE type = 'run.started'
    GROUP BY run_id
),
finished_runs AS (
    SELECT run_id, max(ts) AS finished_at, arg_max(payload->>'status', seq) AS status
    FROM events
    WHERE type = 'run.finished'
    GROUP BY run_id
),
planned AS (
    SELECT run_id, count(DISTINCT episode_id) AS episodes_planned
    FROM events
    WHERE type = 'episode.scheduled'
    GROUP BY run_id
),
finished_episodes AS (
    SELECT
        run_id,
        count(DISTINCT episode_id) AS episodes_finished,
        count(DISTINCT episode_id) FILTER (WHERE payload->>'termination' = 'error') AS episodes_errored
    FROM events
    WHERE type = 'episode.finished'
    GROUP BY run_id
),
sizes AS (
    SELECT run_id, count(*) AS events, max(ts) AS last_event_at FROM events GROUP BY run_id
)
SELECT
    sizes.run_id,
    started.started_at,
    sizes.last_event_at,
    CASE
        WHEN finished_runs.status IS NULL THEN 'running_or_interrupted'
        WHEN coalesce(finished_episodes.episodes_finished, 0) < coalesce(planned.episodes_planned, 0) THEN 'incomplete'
        ELSE finished_runs.status
    END AS status,
    started.payload->'benchmark'->>'release_id' AS release_id,
    started.payload->'agent'->>'provider' AS provider,
    started.payload->'agent'->>'model' AS model,
    coalesce(planned.episodes_planned, 0) AS episodes_planned,
    coalesce(finished_episodes.episodes_finished, 0) AS episodes_finished,
    coalesce(finished_episodes.episodes_errored, 0) AS episodes_errored,
    sizes.events
FROM sizes
JOIN started USING (run_id)
LEFT JOIN finished_runs USING (run_id)
LEFT JOIN planned USING (run_id)
LEFT JOIN finished_episodes USING (run_id);
