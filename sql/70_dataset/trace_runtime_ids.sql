-- view: trace_runtime_ids
-- grain: one row per candidate trace that mentions a runtime id
-- key: source_id, episode_id
-- The runtime ids a trace mentions (seed `_collect_runtime_ids`): every non-blank string
-- under a key ending in `_id` and every item of a list under a key ending in `_ids`, of any
-- type, as Python's str() writes it (an object as `{'k': 1}`, null as `None`), stripped,
-- distinct and sorted; the rule is eviscene/rules/traces.py's runtime_ids
-- (registered as trace_runtime_id_list: one parse per trace, where json_tree over every
-- trace was the largest cost of an export). Native traces come from native_dataset_records,
-- imported ones from imported_traces, which reads each trace document once for all it needs.
CREATE OR REPLACE VIEW trace_runtime_ids AS
WITH traces AS (
    SELECT s.source_id, n.episode_id, n.trace
    FROM dataset_sources s
    JOIN native_dataset_records n ON n.run_id = s.source_id
    WHERE s.source_kind = 'run' AND n.trace IS NOT NULL
),
-- MATERIALIZED: inlined, DuckDB called the function twice per trace (for the filter and the column)
listed AS MATERIALIZED (
    SELECT source_id, episode_id, trace_runtime_id_list(trace) AS runtime_ids FROM traces
    UNION ALL
    SELECT source_id, episode_id, runtime_ids FROM imported_traces
)
SELECT source_id, episode_id, runtime_ids
FROM listed
WHERE len(runtime_ids) > 0;
