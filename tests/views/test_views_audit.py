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


# One source-access rule: the audit's source_policy_violation uses the tools' own matcher.
# Each URL with whether the policy below blocks it, worked out by hand from the rules in
# eviscene/rules/source_policy.py (domains: the host or a subdomain; prefixes: scheme ignored, a
# path boundary needed unless the prefix ends in `/ ? & =`; every reading a server may give the URL).
RULES_POLICY = {
    "policy_id": "views-rules",
    "blocked_domains": ["*.example.com"],
    "blocked_url_prefixes": ["https://mirror.org/answers", "https://archive.net/q?id="],
}
RULES_URLS = {
    "https://example.com/story": True,  # `*.example.com` covers the domain itself
    "https://news.example.com/x": True,  # and its subdomains
    "https://notexample.com/x": False,  # not a subdomain
    "http://mirror.org/answers/case-1": True,  # prefix, over http too, at a `/` boundary
    "https://www.mirror.org/answers?page=2": True,  # `www.` dropped; `?` is a boundary
    "https://mirror.org/answers": True,  # the prefix itself
    "https://mirror.org/answers-key": False,  # no path boundary after the prefix
    "https://archive.net/q?id=42": True,  # the prefix ends in `=`: any continuation
    "https://archive.net/q?idx=1": False,
    "https://archive.net/q?lang=en&id=42": True,  # a query's parameters in any order
    "https://archive.net/q?lang=en&idx=1": False,
    # Spellings a server reads as a blocked page are blocked as the page is (percent escapes
    # decoded, `//` merged), in the audit as in the tools.
    "https://mirror.org/%61nswers/case-2": True,
    "https://mirror.org//answers/case-3": True,
    "https://mirror.org/;x/answers/case-5": True,  # `;` parameters dropped, then `//` merged
    "https://news.ex%61mple.com/y": True,
    "https://mirror.org/answers%2Dkey": False,  # `/answers-key`: still no path boundary
}


def test_views_policy_audit_matches_what_the_tools_block(tmp_path, fx):
    from eviscene.log import EventLog
    from eviscene.rules.source_policy import policy_from_fields
    from eviscene.store import EventDraft

    policy = policy_from_fields(RULES_POLICY)
    urls = list(RULES_URLS)
    assert {u for u in urls if policy.check(u)} == {u for u, blocked in RULES_URLS.items() if blocked}

    planned = fx.Planned("rules", "case-R", 0, 1)
    attempt = planned.attempt().start().perceive()
    shown = [fx.source(f"ev-{i}", url, fx.H(url)) for i, url in enumerate(urls, start=1)]
    attempt.model(("c1", "text_search", {"query": "q"}))
    attempt.tool("c1", "text_search", {"query": "q"}, sources=shown)
    attempt.model(content="Done.")
    attempt.judge("authentic", 0.5, ["ev-1"])
    attempt.finish("completed", time_taken=1.0, tool_calls=1, llm_calls=3)
    opening = [
        EventDraft(fx.run_started(release_stage="frozen_eval", training_prohibited=False, schema_version="ifv-runtime-release-v0.3",
                                  episodes=1, cases=1)),
        fx.scheduled(planned),
    ]
    artifacts = [("source_access_policy", fx.POLICY_PATH, fx.json.dumps(RULES_POLICY).encode("utf-8"), 1)]
    log = EventLog(tmp_path / "rules.duckdb")
    fx.anyio.run(fx._write, log, "views-rules", [attempt], opening, [], artifacts, fx._Clock())

    found = log.sql("SELECT detail FROM trace_audit_failures WHERE code = 'source_policy_violation' ORDER BY detail")["detail"].to_pylist()
    assert found == sorted(f"a blocked source reached the model: {u}" for u, blocked in RULES_URLS.items() if blocked)
    reasons = log.sql("SELECT url, source_policy_block(p.policy_file::VARCHAR, url, content_sha256) AS reason "
                      "FROM episode_evidence JOIN source_policies p USING (run_id)").to_pylist()
    assert {r["url"]: r["reason"] for r in reasons} == {u: policy.check(u, fx.H(u)) for u in urls}
