"""`eviscene runs compare A B`: paired per-case accuracy difference on the cases both runs
share (rollout 0, as predictions.jsonl), with a percentile bootstrap confidence interval.
Either run may be an imported run directory (`imported_episodes`)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from eviscene.errors import EvisceneError, no_run_error
from eviscene.log import EventLog

BOOTSTRAP_SAMPLES = 10_000
BOOTSTRAP_SEED = 20261130

_PAIRED = """
WITH scored AS (
    SELECT e.run_id, e.case_id, e.verdict, g.label,
           verdict_correct(e.termination, e.verdict, g.label) AS correct
    FROM episodes e JOIN gold_labels g USING (run_id, case_id)
    WHERE e.rollout_index = 0 AND e.run_id IN ($a, $b)
    UNION ALL
    -- an imported run carries no gold: it is scored by the correctness it recorded
    SELECT run_id, case_id, verdict, NULL, scored_correct
    FROM imported_episodes
    WHERE rollout_index = 0 AND run_id IN ($a, $b) AND scored_correct IS NOT NULL
)
SELECT a.case_id, coalesce(a.label, b.label) AS label, a.verdict AS verdict_a, b.verdict AS verdict_b, a.correct AS correct_a, b.correct AS correct_b
FROM scored a JOIN scored b ON a.case_id = b.case_id AND a.run_id = $a AND b.run_id = $b
ORDER BY a.case_id
"""


@dataclass
class RunComparison:
    run_a: str
    run_b: str
    cases: list[dict]
    accuracy_a: float
    accuracy_b: float
    difference: float
    ci_low: float
    ci_high: float
    only_a_right: int
    only_b_right: int


def compare_runs(log: EventLog, run_a: str, run_b: str, *, confidence: float = 0.95) -> RunComparison:
    known = set(log.sql("SELECT run_id FROM run_manifests UNION ALL SELECT run_id FROM imported_runs")["run_id"].to_pylist())
    for run in (run_a, run_b):
        if run not in known:
            raise no_run_error(run, log.path, known)
    cases = log.sql(_PAIRED, {"a": run_a, "b": run_b}).to_pylist()
    if not cases:
        raise EvisceneError(f"runs {run_a} and {run_b} share no scored case")
    deltas = [int(c["correct_b"]) - int(c["correct_a"]) for c in cases]
    n = len(deltas)
    rng = random.Random(BOOTSTRAP_SEED)
    resampled = sorted(sum(rng.choice(deltas) for _ in range(n)) / n for _ in range(BOOTSTRAP_SAMPLES))
    tail = (1 - confidence) / 2
    return RunComparison(
        run_a=run_a,
        run_b=run_b,
        cases=cases,
        accuracy_a=sum(c["correct_a"] for c in cases) / n,
        accuracy_b=sum(c["correct_b"] for c in cases) / n,
        difference=sum(deltas) / n,
        ci_low=resampled[int(tail * BOOTSTRAP_SAMPLES)],
        ci_high=resampled[min(BOOTSTRAP_SAMPLES - 1, int((1 - tail) * BOOTSTRAP_SAMPLES))],
        only_a_right=sum(d < 0 for d in deltas),
        only_b_right=sum(d > 0 for d in deltas),
    )
