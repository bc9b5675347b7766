-- view: classification_metrics
-- grain: one row per run and label of the release's label set
-- key: run_id, label
-- Classification quality on rollout 0 of every case (one prediction per case, as the
-- scorer reads predictions.jsonl): per-class precision, recall, F1 and confusion row, and
-- the run's accuracy and macro-F1. An episode without a completed verdict (error, timeout,
-- no judgment) counts as wrong and is also reported apart as an error or an abstention.
CREATE OR REPLACE VIEW classification_metrics AS
WITH scored AS (
    SELECT
        e.run_id,
        e.case_id,
        g.label AS gold,
        CASE WHEN e.termination = 'completed' THEN e.verdict END AS predicted,
        verdict_correct(e.termination, e.verdict, g.label) AS is_correct,
        e.termination = 'error' AS is_error,
        coalesce(e.termination, '') <> 'error' AND (e.termination IS DISTINCT FROM 'completed' OR e.verdict IS NULL) AS is_abstention
    FROM episodes e
    JOIN gold_labels g ON g.run_id = e.run_id AND g.case_id = e.case_id
    WHERE e.rollout_index = 0
),
labels AS (
    SELECT run_id, unnest(label_set) AS label FROM run_manifests
),
per_label AS (
    SELECT
        l.run_id,
        l.label,
        count(*) FILTER (WHERE s.gold = l.label) AS support,
        count(*) FILTER (WHERE s.predicted = l.label) AS predicted,
        count(*) FILTER (WHERE s.gold = l.label AND s.predicted = l.label) AS true_positives
    FROM labels l
    LEFT JOIN scored s ON s.run_id = l.run_id
    GROUP BY l.run_id, l.label
),
confusion AS (
    SELECT l.run_id, l.label,
           map(list(p.predicted_label ORDER BY p.predicted_label) FILTER (WHERE p.predicted_label IS NOT NULL),
               list(p.n ORDER BY p.predicted_label) FILTER (WHERE p.predicted_label IS NOT NULL)) AS confusion
    FROM labels l
    LEFT JOIN (
        SELECT run_id, gold, coalesce(predicted, '(none)') AS predicted_label, count(*) AS n FROM scored GROUP BY ALL
    ) p ON p.run_id = l.run_id AND p.gold = l.label
    GROUP BY l.run_id, l.label
),
f1 AS (
    SELECT
        *,
        CASE WHEN predicted = 0 THEN 0.0 ELSE true_positives / predicted END AS precision,
        CASE WHEN support = 0 THEN 0.0 ELSE true_positives / support END AS recall
    FROM per_label
),
per_class AS (
    SELECT *, CASE WHEN precision + recall = 0 THEN 0.0 ELSE 2 * precision * recall / (precision + recall) END AS f1
    FROM f1
),
totals AS (
    SELECT
        run_id,
        count(*) AS cases,
        count(*) FILTER (WHERE is_correct) AS correct,
        count(*) FILTER (WHERE is_error) AS errors,
        count(*) FILTER (WHERE is_abstention) AS abstentions
    FROM scored GROUP BY run_id
),
macro AS (
    SELECT run_id, avg(f1::DECIMAL(38, 18))::DOUBLE AS macro_f1 FROM per_class GROUP BY run_id
)
SELECT
    c.run_id,
    c.label,
    c.support,
    c.predicted,
    c.true_positives,
    c.precision,
    c.recall,
    c.f1,
    coalesce(x.confusion, MAP {}) AS confusion,
    t.cases,
    CASE WHEN t.cases = 0 THEN 0.0 ELSE t.correct / t.cases END AS accuracy,
    m.macro_f1,
    t.errors,
    t.abstentions
FROM per_class c
JOIN totals t USING (run_id)
JOIN macro m USING (run_id)
LEFT JOIN confusion x USING (run_id, label);
