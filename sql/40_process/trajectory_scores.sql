-- view: trajectory_scores
-- grain: one row per scheduled episode
-- key: run_id, episode_id
-- The teacher score of protocol ifv-process-score-v1: eight reward components, their
-- weighted total (weights from reward_weights), and the reasons an episode is not a clean
-- teacher trajectory (incorrect_result and engineering_error are fatal; the rest are red flags;
-- a trajectory the SFT export refuses adds `trajectory_sft_export_rejected: …`, as the seed).
-- An episode that never finished gets the seed's stand-in row: every component 0, total 0,
-- not eligible (its reasons stay NULL: there is no trace to judge); its materialized file
-- row holds the seed's keys alone (run_dir.py's STAND_IN_KEYS), as seed 002 reads it.
CREATE OR REPLACE VIEW trajectory_scores AS
WITH w AS (
    SELECT
        protocol_version,
        max(weight) FILTER (WHERE component = 'result_reward') AS result,
        max(weight) FILTER (WHERE component = 'grounded_finding_reward') AS grounded,
        max(weight) FILTER (WHERE component = 'gap_coverage_reward') AS gap,
        max(weight) FILTER (WHERE component = 'bridge_reward') AS bridge,
        max(weight) FILTER (WHERE component = 'stop_calibration_reward') AS stop,
        max(weight) FILTER (WHERE component = 'duplicate_action_penalty') AS duplicate,
        max(weight) FILTER (WHERE component = 'invalid_task_penalty') AS invalid,
        max(weight) FILTER (WHERE component = 'normalized_cost_penalty') AS cost
    FROM reward_weights
    WHERE protocol_version = 'ifv-process-score-v1'
    GROUP BY protocol_version
),
c AS (
    SELECT
        m.*,
        CASE WHEN m.result_correct THEN 1.0 ELSE 0.0 END::DOUBLE AS result_reward,
        CASE WHEN m.citations = 0 THEN 0.0 ELSE m.grounded_citations / m.citations END AS grounded_finding_reward,
        m.fact_recovery_recall AS gap_coverage_reward,
        m.chain_recovery_recall AS bridge_reward,
        CASE WHEN m.has_judgment
             THEN 1.0 - power(m.confidence - CASE WHEN m.result_correct THEN 1.0 ELSE 0.0 END, 2)
             ELSE 0.0 END AS stop_calibration_reward,
        CASE WHEN m.tool_calls = 0 THEN 0.0 ELSE m.duplicate_tool_calls / m.tool_calls END AS duplicate_action_penalty,
        CASE WHEN m.tool_calls = 0 THEN 0.0 ELSE m.invalid_tool_calls / m.tool_calls END AS invalid_task_penalty,
        least(1.0, m.tool_calls / m.max_tool_actions) AS normalized_cost_penalty
    FROM episode_metrics m
),
scored AS (
    SELECT
        c.*,
        w.protocol_version,
        -- Written out term by term (not a SUM over rows) so the float result never depends on
        -- aggregation order.
        w.result * c.result_reward + w.grounded * c.grounded_finding_reward + w.gap * c.gap_coverage_reward
            + w.bridge * c.bridge_reward + w.stop * c.stop_calibration_reward
            + w.duplicate * c.duplicate_action_penalty + w.invalid * c.invalid_task_penalty
            + w.cost * c.normalized_cost_penalty AS total,
        list_filter([
            CASE WHEN c.engineering_error THEN 'engineering_error' END,
            CASE WHEN NOT c.result_correct AND NOT c.engineering_error THEN 'incorrect_result' END,
            CASE WHEN c.termination IN ('timeout', 'budget_exhausted') THEN c.termination END,
            CASE WHEN c.has_judgment AND c.citations = 0 THEN 'no_cited_evidence' END,
            CASE WHEN c.citations > c.grounded_citations THEN 'ungrounded_citation' END,
            CASE WHEN c.duplicate_tool_calls > 0 THEN 'duplicate_actions' END,
            CASE WHEN c.invalid_tool_calls > 0 THEN 'invalid_tool_calls' END,
            'trajectory_sft_export_rejected: ' || x.reason
        ], lambda r: r IS NOT NULL) AS training_exclusion_reasons
    FROM c CROSS JOIN w
    LEFT JOIN sft_export_rejections x ON x.run_id = c.run_id AND x.episode_id = c.episode_id
)
SELECT
    run_id,
    episode_id,
    'ifv-trajectory-score-v2' AS schema_version,
    protocol_version,
    case_id,
    prompt_group_id,
    {
        'result_reward': result_reward,
        'grounded_finding_reward': grounded_finding_reward,
        'gap_coverage_reward': gap_coverage_reward,
        'bridge_reward': bridge_reward,
        'stop_calibration_reward': stop_calibration_reward,
        'duplicate_action_penalty': duplicate_action_penalty,
        'invalid_task_penalty': invalid_task_penalty,
        'normalized_cost_penalty': normalized_cost_penalty
    } AS components,
    total,
    len(training_exclusion_reasons) = 0 AS training_eligible,
    training_exclusion_reasons
FROM scored
UNION ALL BY NAME
SELECT
    run_id,
    episode_id,
    'ifv-trajectory-score-v2' AS schema_version,
    'ifv-process-score-v1' AS protocol_version,
    case_id,
    prompt_group_id,
    {
        'result_reward': 0.0::DOUBLE,
        'grounded_finding_reward': 0.0::DOUBLE,
        'gap_coverage_reward': 0.0::DOUBLE,
        'bridge_reward': 0.0::DOUBLE,
        'stop_calibration_reward': 0.0::DOUBLE,
        'duplicate_action_penalty': 0.0::DOUBLE,
        'invalid_task_penalty': 0.0::DOUBLE,
        'normalized_cost_penalty': 0.0::DOUBLE
    } AS components,
    0.0::DOUBLE AS total,
    false AS training_eligible
FROM episodes
WHERE NOT finished;
