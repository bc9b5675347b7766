"""run_summary and episode_errors follow seed 000's `_compute_summary` where SQL's own
operators differ from Python's: `str(verdict)` of a missing verdict, `str(error).strip()`
over all of Python's white space, and `round(statistics.mean(values), 3)` of the exact mean.
The two views run over hand-made `episodes` and `run_results` tables."""

from __future__ import annotations

import duckdb
import pytest

from eviscene.rules.python_numbers import mean_rounded
from eviscene.views import register_functions, view_definitions

EPISODE_COLUMNS = "run_id VARCHAR, episode_id VARCHAR, case_id VARCHAR, finished BOOLEAN, verdict VARCHAR, termination VARCHAR, error VARCHAR"
RESULT_COLUMNS = "run_id VARCHAR, episode_id VARCHAR, verdict VARCHAR, time_taken DOUBLE, total_tool_calls INTEGER, llm_api_calls INTEGER"


def summary_of(episodes: list[tuple], results: list[tuple]) -> tuple[dict, list[str]]:
    con = duckdb.connect()
    con.execute(f"CREATE TABLE episodes ({EPISODE_COLUMNS})")
    con.execute(f"CREATE TABLE run_results ({RESULT_COLUMNS})")
    con.executemany("INSERT INTO episodes VALUES (?, ?, ?, ?, ?, ?, ?)", episodes)
    con.executemany("INSERT INTO run_results VALUES (?, ?, ?, ?, ?, ?)", results)
    register_functions(con)
    definitions = {d.name: d for d in view_definitions()}
    for name in ("episode_errors", "run_summary"):
        con.execute(definitions[name].sql)
    cursor = con.execute("SELECT * FROM run_summary")
    summary = dict(zip([d[0] for d in cursor.description], cursor.fetchone()))
    errors = [e for (e,) in con.execute("SELECT episode_id FROM episode_errors ORDER BY episode_id").fetchall()]
    return summary, errors


def test_white_space_error_text_is_no_error_and_a_missing_verdict_counts_as_none():
    # the seed: bool(str(row.get("error") or "").strip()); str(row.get("verdict", ""))
    texts = {"e1": "\n", "e2": "\t\u3000\u2028", "e3": " timed out\n", "e4": None, "e5": "\x85x"}
    episodes = [("r", e, "c", True, None, "timeout", text) for e, text in texts.items()]
    results = [("r", e, None, 1.0, 1, 1) for e in texts]
    summary, errors = summary_of(episodes, results)
    assert errors == ["e3", "e5"]
    assert summary["num_errors"] == 2
    assert summary["predicted_verdict_distribution"] == {"None": 5}


def test_means_are_pythons_exact_mean_rounded_as_round_does():
    # 7 x 0.002 and 7 x 0.003: the mean is the double nearest 0.0025, a hair above it, which
    # round(_, 3) takes up to 0.003 (round half to even of 0.0025 exactly would give 0.002).
    times = [0.002] * 7 + [0.003] * 7
    episodes = [("r", f"e{i:02d}", "c", True, "authentic", "completed", None) for i in range(14)]
    results = [("r", f"e{i:02d}", "authentic", t, i % 2, None) for i, t in enumerate(times)]
    summary, _ = summary_of(episodes, results)
    assert summary["avg_time_taken_sec"] == 0.003
    assert summary["avg_tool_calls"] == 0.5  # 7 ones of 14
    assert summary["avg_llm_api_calls"] == 0.0  # no numbers at all: _safe_mean's 0.0


@pytest.mark.parametrize(("values", "expected"), [
    ([0.0125], 0.013),  # 0.0125 is stored as 0.01250000000000000069...
    ([4.1235], 4.123),  # 4.1235 is stored as 4.12349999999999994...
    ([0.1, 0.2], 0.15),  # the exact mean of the two doubles, not 0.1 + 0.2
    ([1.0, 2.0, 2.0], 1.667),
    ([], 0.0),
])
def test_mean_rounded(values, expected):
    assert mean_rounded(values, 3) == expected
