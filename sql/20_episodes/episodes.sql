-- view: episodes
-- grain: one row per scheduled episode
-- key: run_id, episode_id
-- Every planned rollout of a run with its outcome, read from its latest attempt's
-- episode.finished (a crashed attempt's partial events stay in the log but are ignored; an
-- errored attempt re-run by `eval resume --retry-errors` is replaced by the new one). An
-- episode whose latest attempt has not finished is unfinished, whatever an earlier attempt
-- did (a retry stopped midway: `eval resume` runs it again): finished = false and NULL
-- outcome columns.
CREATE OR REPLACE VIEW episodes AS
WITH scheduled AS (
    SELECT
        run_id,
        episode_id,
        payload->>'case_id' AS case_id,
        payload->>'prompt_group_id' AS prompt_group_id,
        (payload->>'rollout_index')::INTEGER AS rollout_index,
        (payload->>'group_size')::INTEGER AS group_size,
        (payload->>'sampling_seed')::BIGINT AS sampling_seed,
        payload->>'image_sha256' AS image_sha256,
        payload->>'image_path' AS image_path,
        seq
    FROM events
    WHERE type = 'episode.scheduled'
),
sharded AS (
    SELECT run_id, bool_or(coalesce((payload->>'$.benchmark.shard_count')::INTEGER, 1) > 1) AS sharded
    FROM events
    WHERE type = 'run.started'
    GROUP BY ALL
),
finished AS (
    SELECT
        run_id,
        episode_id,
        attempt,
        ts AS finished_at,
        payload->>'termination' AS termination,
        nullif(payload->>'error', '') AS error,
        (payload->>'time_taken')::DOUBLE AS time_taken,
        (payload->>'total_tool_calls')::INTEGER AS total_tool_calls,
        (payload->>'llm_api_calls')::INTEGER AS llm_api_calls,
        payload->'token_usage' AS token_usage
    FROM (
        -- each episode's last event of its latest attempt: its end, if that attempt finished
        SELECT run_id, episode_id, attempt, seq, ts, type, payload FROM events
        WHERE type IN ('episode.started', 'episode.finished')
        QUALIFY row_number() OVER (PARTITION BY run_id, episode_id ORDER BY attempt DESC, seq DESC) = 1
    )
    WHERE type = 'episode.finished'
),
judged AS (
    SELECT
        run_id,
        episode_id,
        attempt,
        payload->>'verdict' AS verdict,
        (payload->>'confidence')::DOUBLE AS confidence,
        payload->'verdict_basis' AS verdict_basis
    FROM events
    WHERE type = 'judgment.made'
),
attempts AS (
    SELECT run_id, episode_id, count(DISTINCT attempt) AS attempts
    FROM events
    WHERE type = 'episode.started'
    GROUP BY ALL
)
SELECT
    s.run_id,
    s.episode_id,
    s.case_id,
    s.prompt_group_id,
    s.rollout_index,
    s.group_size,
    s.sampling_seed,
    s.image_sha256,
    s.image_path,
    -- seed 000's rollout-spec order, which its run directory files keep, is the order the run
    -- scheduled its episodes in (the release's or the --case-id order, rollouts in turn): the
    -- scheduling seq. A sharded run's cases are sorted by case_id, so its merged shards are
    -- too, whichever was merged first: NULL here, and the order is case_id, rollout_index.
    CASE WHEN NOT coalesce(r.sharded, false) THEN s.seq END AS spec_order,
    f.episode_id IS NOT NULL AS finished,
    f.attempt AS final_attempt,
    coalesce(a.attempts, 0) AS attempts,
    f.finished_at,
    f.termination,
    f.error,
    f.time_taken,
    f.total_tool_calls,
    f.llm_api_calls,
    f.token_usage,
    j.verdict,
    j.confidence,
    j.verdict_basis
FROM scheduled s
LEFT JOIN sharded r USING (run_id)
LEFT JOIN finished f USING (run_id, episode_id)
LEFT JOIN judged j ON j.run_id = f.run_id AND j.episode_id = f.episode_id AND j.attempt = f.attempt
LEFT JOIN attempts a ON a.run_id = s.run_id AND a.episode_id = s.episode_id;
