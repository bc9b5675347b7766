"""The end-of-run report: accuracy against gold beside the majority-label baseline."""

from __future__ import annotations

from eviscene.store import EventLog

_ACCURACY = """
WITH scored AS (
    SELECT e.verdict, g.label, e.termination
    FROM episodes e
    JOIN gold_labels g ON g.run_id = e.run_id AND g.case_id = e.case_id
    WHERE e.run_id = ? AND e.finished
),
majority AS (
    SELECT label, count(*) AS n FROM scored GROUP BY label ORDER BY n DESC, label LIMIT 1
)
SELECT
    count(*) AS episodes,
    count(*) FILTER (WHERE termination = 'completed' AND verdict = label) AS correct,
    (SELECT label FROM majority) AS majority_label,
    (SELECT n FROM majority) AS majority_count
FROM scored
"""


def accuracy_lines(log: EventLog, run_id: str) -> list[str]:
    row = log.sql(_ACCURACY, [run_id]).to_pylist()[0]
    if not row["episodes"]:
        return []
    n = row["episodes"]
    return [
        f"accuracy {row['correct'] / n:.3f} ({row['correct']}/{n} finished episodes); "
        f"majority-label baseline {row['majority_count'] / n:.3f} (always '{row['majority_label']}')"
    ]
