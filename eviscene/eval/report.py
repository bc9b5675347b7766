"""The end-of-run report: accuracy against gold beside the majority-label baseline, and the
causes of the episodes that count as errors."""

from __future__ import annotations

from eviscene.log import EventLog
from eviscene.rules.commands import command_line

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
    count(*) FILTER (WHERE verdict_correct(termination, verdict, label)) AS correct,
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


_ERROR_CAUSES = """
SELECT message, count(*) AS episodes, min(episode_id) AS example
FROM episode_errors
WHERE run_id = ?
GROUP BY message
ORDER BY episodes DESC, message
"""


def error_cause_lines(log: EventLog, run_id: str, top: int = 3) -> list[str]:
    """The run's most frequent error messages with counts, and where to look further."""
    causes = log.sql(_ERROR_CAUSES, [run_id]).to_pylist()
    if not causes:
        return []
    total = sum(c["episodes"] for c in causes)
    lines = [f"{total} episode(s) count as errors; top causes:"]
    for cause in causes[:top]:
        message = cause["message"] if len(cause["message"]) <= 160 else cause["message"][:157] + "..."
        lines.append(f"  {cause['episodes']} x {message}")
    if len(causes) > top:
        lines.append(f"  ... and {len(causes) - top} other cause(s)")
    lines.append(f"details: {command_line('why', '--run', run_id, '--', causes[0]['example'], log=log.path)}")  # an id may start with -
    return lines
