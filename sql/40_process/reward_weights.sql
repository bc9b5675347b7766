-- view: reward_weights
-- grain: one row per protocol version and reward component
-- key: protocol_version, component
-- The weights of the trajectory score, as versioned data: total = sum(weight x component).
-- Penalties carry negative weights.
CREATE OR REPLACE VIEW reward_weights AS
SELECT * FROM (VALUES
    ('ifv-process-score-v1', 'result_reward', 1.0),
    ('ifv-process-score-v1', 'grounded_finding_reward', 0.3),
    ('ifv-process-score-v1', 'gap_coverage_reward', 0.3),
    ('ifv-process-score-v1', 'bridge_reward', 0.2),
    ('ifv-process-score-v1', 'stop_calibration_reward', 0.2),
    ('ifv-process-score-v1', 'duplicate_action_penalty', -0.2),
    ('ifv-process-score-v1', 'invalid_task_penalty', -0.2),
    ('ifv-process-score-v1', 'normalized_cost_penalty', -0.1)
) AS w(protocol_version, component, weight);
