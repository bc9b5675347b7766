"""Trace audit on the hand-built log: which failure rows each scenario must produce, and
nothing else (a clean episode has none; a crashed attempt's events never count)."""

import hashlib

import pytest

HARD, STRICT = "hard", "strict"

# name: every (code, severity, detail) row of trace_audit_failures
FAILURES = {
    "correct": [],
    "wrong": [],
    "timeout": [("missing_judgment", HARD, "the episode ended without a validated judgment")],
    "err0": [("missing_judgment", HARD, "the episode ended without a validated judgment")],
    "err1": [("missing_judgment", HARD, "the episode ended without a validated judgment")],
    "dup": [("basis_cites_unknown_evidence", HARD, "verdict_basis cites ev-9, which no tool returned")],
    # ev-1 (subdomain of the blocked FactCheck.example), ev-2 (content hash blocked in upper
    # case), ev-3 (under the blocked prefix written with www.); the blocked visit itself
    # returned no source, and ev-4 is allowed.
    "blocked": [
        ("source_policy_violation", HARD, "a blocked source reached the model: https://innocent.example/page"),
        ("source_policy_violation", HARD, "a blocked source reached the model: https://mirror.example/answers/case-e"),
        ("source_policy_violation", HARD, "a blocked source reached the model: https://news.factcheck.example/a"),
    ],
    # attempt 1 left c1 unanswered; only attempt 2 counts.
    "resumed": [],
    "strict": [
        ("empty_reasoning", STRICT, "model call 1 acted with no reasoning or text"),
        ("overlapping_model_calls", STRICT, "model call 2 started before the previous one finished"),
        ("unanswered_tool_call", STRICT, "tool call c2 (visit) got no result"),
    ],
    "disorder": [("step_order_violation", HARD, "tool result for c1 without a preceding call")],
    "overbudget": [("tool_budget_exceeded", HARD, "25 tool calls, more than the budget of 24")],
    "k0": [],
    "k1": [],
    "k2": [],
}


def test_views_trace_audit_failures_exactly(con, ep):
    found = con.sql(
        "SELECT episode_id, code, severity, detail FROM trace_audit_failures WHERE run_id = 'views-main' ORDER BY ALL"
    ).fetchall()
    expected = sorted((ep[name], *failure) for name, failures in FAILURES.items() for failure in failures)
    assert found == expected


@pytest.mark.parametrize("name", sorted(FAILURES))
def test_views_trace_audit_verdicts(rows, ep, name):
    row = rows("trace_audit")[ep[name]]
    failures = sorted(FAILURES[name])
    hard = sorted({code for code, severity, _ in failures if severity == HARD})
    strict = sorted({code for code, _, _ in failures})
    assert row["hard_failure_codes"] == hard
    assert row["strict_failure_codes"] == strict
    assert row["hard_trace_audit_pass"] is (hard == [])
    assert row["strict_trace_audit_pass"] is (strict == [])
    assert [(f["code"], f["severity"], f["detail"]) for f in row["strict_trace_audit_failures"]] == failures


def test_views_strict_only_failures_pass_the_hard_audit(rows, ep):
    row = rows("trace_audit")[ep["strict"]]
    assert row["hard_trace_audit_pass"] is True
    assert row["strict_trace_audit_pass"] is False


def test_views_unfinished_episode_is_not_audited(rows, ep):
    assert ep["unfinished"] not in rows("trace_audit")


def test_views_other_runs_have_no_policy_and_clean_audits(con):
    # Only the main run attached a source-access policy.
    assert con.sql("SELECT run_id FROM source_policies").fetchall() == [("views-main",)]
    assert con.sql("SELECT count(*) FROM trace_audit_failures WHERE run_id <> 'views-main'").fetchall() == [(0,)]


def test_views_source_policy_is_normalized(con):
    (policy,) = con.sql("SELECT policy_id, blocked_domains, blocked_url_prefixes, blocked_content_sha256 FROM source_policies").fetchall()
    assert policy == (
        "views-policy-1",
        ["factcheck.example"],
        ["https://mirror.example/answers"],
        [hashlib.sha256(b"leak").hexdigest()],
    )
