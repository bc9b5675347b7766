-- view: episode_errors
-- grain: one row per finished episode that counts as an error
-- key: run_id, episode_id
-- The seed's error rule (_compute_summary): an episode counts as an error when its verdict is
-- 'error', it terminated in error, or it carries error text (a timeout or an exhausted budget
-- that ended with an error). The run's status, its exit code, summary.json's num_errors and
-- the terminal summary's error causes all count these rows.
CREATE OR REPLACE VIEW episode_errors AS
SELECT
    run_id,
    episode_id,
    case_id,
    termination,
    coalesce(nullif(py_strip(error), ''), 'termination ' || termination) AS message
FROM episodes
WHERE finished AND (verdict = 'error' OR termination = 'error' OR NOT coalesce(py_blank(error), true));
