-- view: dataset_rows
-- grain: one row per accepted episode of the export
-- key: episode_id
-- Seed 002's episode_metadata row of every accepted episode: its candidate metadata plus
-- split, split_group_id and route. The route is short_sft when the trajectory's
-- approximate token count, ceil(UTF-8 bytes / 3), fits short_max_tokens, else
-- long_holdout. `record` is the SFT trajectory the split files are built from.
-- Python's a // b for b > 0, which rounds down: DuckDB's // rounds toward zero, and an
-- imported row's estimate may be negative (seed 002: (-4 + 2) // 3 = -1, not 0).
CREATE OR REPLACE MACRO py_floordiv(a, b) AS (a - ((a % b) + b) % b) // b;
CREATE OR REPLACE VIEW dataset_rows AS
SELECT
    sp.* EXCLUDE (selected, case_rank, case_best_episode_id, case_eligible_rollouts, accepted, eligible_before_selection),
    py_floordiv(sp.trajectory_token_count_estimate + 2, 3) AS trajectory_approx_tokens,
    CASE WHEN py_floordiv(sp.trajectory_token_count_estimate + 2, 3) <= s.short_max_tokens THEN 'short_sft' ELSE 'long_holdout' END AS sft_route,
    s.short_max_tokens,
    t.record
FROM dataset_splits sp
JOIN export_snapshot.dataset_trajectories t USING (source_id, episode_id)
CROSS JOIN dataset_settings s;
