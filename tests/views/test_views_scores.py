"""Protocol ifv-process-score-v1 on the hand-built log: every metric and reward component of
every finished episode, worked out by hand from the events in conftest.py.

Gold (conftest.GOLD) for the cases the numbers below use:
  case-A  sources S1 origin, S2 bridge, S3 context; facts F1[S1] F2[S2] F3[S2,S3]; bridge B1 (image R1)
  case-B  sources T1 origin, T2 bridge; fact G1[T2]; bridge Q1
  case-C  source P1 origin; fact E1[P1]
  case-D  sources U1 origin, U2 context; facts H1[U2] H2[U1]
  case-e  source V1 origin (https://mirror.example/other); fact K1[V1]
  case-F, case-I, case-J  empty reference chain
  case-G  source W1 bridge; fact L1[W1]; bridge M1
  case-H  source Z1 origin; fact N1[Z1]
  case-K  source Y1 context; fact D1[Y1]
Weights: 1.0 result, 0.3 grounded, 0.3 gap, 0.2 bridge, 0.2 stop, -0.2 dup, -0.2 invalid,
-0.1 cost; cost = min(1, tool calls / 24).
"""

import json

import pytest

MAIN, DEV, PROHIBITED = "views-main", "views-dev", "views-prohibited"


def approx(value):
    return pytest.approx(value, rel=1e-12, abs=1e-12)


# name: (result_correct, engineering_error, evidence_recovery_recall, fact_recovery_recall,
#        chain_recovery_recall, basis_reference_precision, tool_calls, duplicate, invalid)
METRICS = {
    # visits the bridge page (ev-1 = S2 by normalized URL; ev-2 = S3 by content hash was only
    # shown): non-origin visited {S2} / 3 sources; facts F2, F3 / 3; R1 matched: B1 / 1;
    # cites ev-1 (S2) and ev-2 (S3): 2 gold / 2.
    "correct": (True, False, 1 / 3, 2 / 3, 1.0, 1.0, 3, 0, 0),
    # visits and cites only random.example: nothing gold.
    "wrong": (False, False, 0.0, 0.0, 0.0, 0.0, 2, 0, 0),
    # T2 shown by a search but never visited; no judgment, no citations.
    "timeout": (False, False, 0.0, 0.0, 0.0, 0.0, 1, 0, 0),
    "err0": (False, True, 0.0, 0.0, 0.0, 0.0, 0, 0, 0),
    "err1": (False, True, 0.0, 0.0, 0.0, 0.0, 0, 0, 0),
    # U2 shown, not visited; cites ev-1 (U2, gold) and ev-9 (never returned): 1 / 2;
    # c2 repeats c1 exactly; c3 is rejected as invalid.
    "dup": (True, False, 0.0, 0.0, 0.0, 0.5, 3, 1, 1),
    # the visit was blocked, so nothing visited; cites ev-4 = V1 by URL and hash: 1 / 1.
    "blocked": (True, False, 0.0, 0.0, 0.0, 1.0, 2, 0, 0),
    # attempt 2 only (attempt 1's search is ignored); empty chain -> 0 by convention.
    "resumed": (True, False, 0.0, 0.0, 0.0, 0.0, 0, 0, 0),
    # visits W1 (bridge): 1 / 1 sources, L1 / 1 facts; M1's image never compared: 0 / 1.
    "strict": (True, False, 1.0, 1.0, 0.0, 1.0, 1, 0, 0),
    # visits Z1, the origin: not counted by evidence recall (0 / 1) but supports N1 (1 / 1).
    "disorder": (False, False, 0.0, 1.0, 0.0, 1.0, 1, 0, 0),
    "overbudget": (False, False, 0.0, 0.0, 0.0, 0.0, 25, 0, 0),
    # visits https://ctx-k.example/a/ = Y1 after normalization.
    "k0": (True, False, 1.0, 1.0, 0.0, 1.0, 1, 0, 0),
    "k1": (True, False, 1.0, 1.0, 0.0, 1.0, 1, 0, 0),
    "k2": (True, False, 1.0, 1.0, 0.0, 1.0, 1, 0, 0),
}

# name: (result, grounded, gap, bridge, stop, duplicate, invalid, cost), total
COMPONENTS = {
    # stop 1 - (0.9 - 1)^2 = 0.99; cost 3/24 = 0.125
    # total 1 + 0.3 + 0.3*2/3 + 0.2 + 0.2*0.99 - 0.1*0.125 = 1.8855
    "correct": ((1.0, 1.0, 2 / 3, 1.0, 0.99, 0.0, 0.0, 0.125), 1.8855),
    # stop 1 - 0.8^2 = 0.36; cost 2/24; total 0.3 + 0.072 - 0.1/12 = 0.363666...
    "wrong": ((0.0, 1.0, 0.0, 0.0, 0.36, 0.0, 0.0, 1 / 12), 0.36366666666666667),
    # no judgment: stop 0; cost 1/24; total -0.1/24
    "timeout": ((0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1 / 24), -0.0041666666666666667),
    "err0": ((0.0,) * 8, 0.0),
    "err1": ((0.0,) * 8, 0.0),
    # grounded 1/2 (ev-9 never returned); stop 1 - 0.4^2 = 0.84; dup 1/3; invalid 1/3; cost 0.125
    # total 1 + 0.15 + 0.168 - 0.2/3 - 0.2/3 - 0.0125 = 1.1721666...
    "dup": ((1.0, 0.5, 0.0, 0.0, 0.84, 1 / 3, 1 / 3, 0.125), 1.1721666666666667),
    # stop 1 - 0.5^2 = 0.75; cost 2/24; total 1 + 0.3 + 0.15 - 0.1/12 = 1.4416666...
    "blocked": ((1.0, 1.0, 0.0, 0.0, 0.75, 0.0, 0.0, 1 / 12), 1.4416666666666667),
    # no citations: grounded 0; stop 1 - 0^2 = 1; no tools; total 1 + 0.2 = 1.2
    "resumed": ((1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0), 1.2),
    # stop 1 - 0.3^2 = 0.91; total 1 + 0.3 + 0.3 + 0.182 - 0.1/24 = 1.7778333...
    "strict": ((1.0, 1.0, 1.0, 0.0, 0.91, 0.0, 0.0, 1 / 24), 1.7778333333333333),
    # total 0.3 + 0.3 + 0.15 - 0.1/24 = 0.7458333...
    "disorder": ((0.0, 1.0, 1.0, 0.0, 0.75, 0.0, 0.0, 1 / 24), 0.7458333333333333),
    # cost min(1, 25/24) = 1; total 0.15 - 0.1 = 0.05
    "overbudget": ((0.0, 0.0, 0.0, 0.0, 0.75, 0.0, 0.0, 1.0), 0.05),
    "k0": ((1.0, 1.0, 1.0, 0.0, 0.91, 0.0, 0.0, 1 / 24), 1.7778333333333333),
    "k1": ((1.0, 1.0, 1.0, 0.0, 0.91, 0.0, 0.0, 1 / 24), 1.7778333333333333),
    "k2": ((1.0, 1.0, 1.0, 0.0, 0.91, 0.0, 0.0, 1 / 24), 1.7778333333333333),
}
COMPONENT_NAMES = (
    "result_reward", "grounded_finding_reward", "gap_coverage_reward", "bridge_reward", "stop_calibration_reward",
    "duplicate_action_penalty", "invalid_task_penalty", "normalized_cost_penalty",
)

TEACHER_REASONS = {
    "correct": [],
    "wrong": ["incorrect_result"],
    "timeout": ["incorrect_result", "timeout"],
    "err0": ["engineering_error"],
    "err1": ["engineering_error"],
    "dup": ["ungrounded_citation", "duplicate_actions", "invalid_tool_calls"],
    "blocked": [],
    "resumed": ["no_cited_evidence"],
    "strict": [],
    "disorder": ["incorrect_result"],
    "overbudget": ["incorrect_result", "no_cited_evidence"],
    "k0": [],
    "k1": [],
    "k2": [],
}


def test_views_finished_episodes_only(rows, ep):
    finished = {name for name in ep if name != "unfinished"}
    for view in ("episode_metrics", "trace_audit"):
        assert set(rows(view)) == {ep[n] for n in finished}, view
    for view in ("process_metrics", "trajectory_scores", "reference_chain_metrics"):
        assert set(rows(view)) == set(ep.values()), view  # every planned episode


def test_views_unfinished_episode_has_the_seeds_stand_in_rows(rows, ep, planned):
    p = planned["unfinished"]
    metrics = rows("process_metrics")[ep["unfinished"]]
    assert (metrics["schema_version"], metrics["case_id"], metrics["prompt_group_id"]) == ("ifv-process-metrics-v2", "case-J", p.prompt_group_id)
    assert (metrics["engineering_error"], metrics["result_correct"], metrics["runtime_verdict"]) == (True, False, None)
    assert json.loads(metrics["first_error"]) == {"error": "canonical trace is missing"}
    assert metrics["evidence_recovery_recall"] is None and metrics["training_eligible"] is None
    assert rows("process_metrics")[ep["correct"]]["first_error"] is None
    chain = rows("reference_chain_metrics")[ep["unfinished"]]
    assert (chain["schema_version"], chain["engineering_error"], chain["error"]) == (
        "ifv-reference-chain-metrics-v2", True, "canonical trace is missing")
    assert chain["metrics"] == {"fact_recovery_recall": 0.0, "chain_recovery_recall": 0.0,
                                "evidence_recovery_recall": 0.0, "basis_reference_precision": 0.0}
    score = rows("trajectory_scores")[ep["unfinished"]]
    assert score["components"] == {name: 0.0 for name in (
        "result_reward", "grounded_finding_reward", "gap_coverage_reward", "bridge_reward", "stop_calibration_reward",
        "duplicate_action_penalty", "invalid_task_penalty", "normalized_cost_penalty")}
    assert (score["total"], score["training_eligible"], score["training_exclusion_reasons"]) == (0.0, False, None)


@pytest.mark.parametrize("name", sorted(METRICS))
def test_views_episode_and_process_metrics(rows, ep, name):
    result, engineering, evidence, fact, chain, precision, tools, dup, invalid = METRICS[name]
    for view in ("episode_metrics", "process_metrics"):
        row = rows(view)[ep[name]]
        assert row["result_correct"] is result, view
        assert row["engineering_error"] is engineering, view
        assert row["evidence_recovery_recall"] == approx(evidence), view
        assert row["fact_recovery_recall"] == approx(fact), view
        assert row["chain_recovery_recall"] == approx(chain), view
        assert row["basis_reference_precision"] == approx(precision), view
        assert (row["tool_calls"], row["duplicate_tool_calls"], row["invalid_tool_calls"]) == (tools, dup, invalid), view


@pytest.mark.parametrize("name", sorted(COMPONENTS))
def test_views_trajectory_scores(rows, ep, name):
    components, total = COMPONENTS[name]
    row = rows("trajectory_scores")[ep[name]]
    assert row["schema_version"] == "ifv-trajectory-score-v2"
    assert row["protocol_version"] == "ifv-process-score-v1"
    assert list(row["components"]) == list(COMPONENT_NAMES)
    assert [row["components"][c] for c in COMPONENT_NAMES] == [approx(v) for v in components]
    assert row["total"] == approx(total)
    assert row["training_exclusion_reasons"] == TEACHER_REASONS[name]
    assert row["training_eligible"] is (TEACHER_REASONS[name] == [])


def test_views_process_metrics_row(rows, ep):
    row = rows("process_metrics")[ep["dup"]]
    assert row["schema_version"] == "ifv-process-metrics-v2"
    assert row["protocol_version"] == "ifv-process-score-v1"
    assert row["case_id"] == "case-D"
    assert row["runtime_verdict"] == "manipulated"
    assert row["termination"] == "completed"
    assert row["training_eligible"] is False
    assert row["training_exclusion_reasons"] == ["ungrounded_citation", "duplicate_actions", "invalid_tool_calls"]
    assert row["hard_trace_audit_pass"] is False
    assert row["strict_trace_audit_pass"] is False
    assert row["strict_trace_audit_failures"] == [
        {"code": "basis_cites_unknown_evidence", "severity": "hard", "detail": "verdict_basis cites ev-9, which no tool returned"}
    ]
    timeout = rows("process_metrics")[ep["timeout"]]
    assert timeout["runtime_verdict"] is None
    assert timeout["termination"] == "timeout"


def test_views_reference_chain_metrics(rows, ep):
    row = rows("reference_chain_metrics")[ep["correct"]]
    assert row["schema_version"] == "ifv-reference-chain-metrics-v2"
    assert row["applicable"] is True
    assert row["engineering_error"] is False
    assert row["metrics"] == {
        "fact_recovery_recall": approx(2 / 3),
        "chain_recovery_recall": 1.0,
        "evidence_recovery_recall": approx(1 / 3),
        "basis_reference_precision": 1.0,
    }
    assert rows("reference_chain_metrics")[ep["err0"]]["engineering_error"] is True
    # A reviewed scoring package (ifv-scoring-gold-v1) uses another gate: not applicable.
    (package,) = rows("reference_chain_metrics", PROHIBITED).values()
    assert package["schema_version"] == "ifv-scoring-reference-chain-v1"
    assert package["applicable"] is False


@pytest.mark.parametrize("run_id", [DEV, PROHIBITED])
def test_views_each_run_scored_against_its_own_gold(rows, run_id):
    # The same `correct` episode in another run, whose gold holds only case-A: same numbers.
    (metrics,) = rows("episode_metrics", run_id).values()
    assert metrics["gold_label"] == "out_of_context"
    assert (metrics["gold_sources"], metrics["gold_facts"], metrics["gold_bridges"]) == (3, 3, 1)
    (score,) = rows("trajectory_scores", run_id).values()
    assert score["total"] == approx(1.8855)


def test_views_episode_metrics_counts(rows, ep):
    row = rows("episode_metrics")[ep["correct"]]
    assert (row["gold_sources"], row["visited_non_origin_sources"]) == (3, 1)
    assert (row["gold_facts"], row["recovered_facts"]) == (3, 2)
    assert (row["gold_bridges"], row["recovered_bridges"]) == (1, 1)
    assert (row["citations"], row["grounded_citations"], row["gold_citations"]) == (2, 2, 2)
    assert row["max_tool_actions"] == 24
    dup = rows("episode_metrics")[ep["dup"]]
    assert (dup["citations"], dup["grounded_citations"], dup["gold_citations"]) == (2, 1, 1)
    assert rows("episode_metrics")[ep["timeout"]]["has_judgment"] is False


def test_views_reward_weights_are_data(con):
    weights = {c: float(w) for c, w in con.sql(
        "SELECT component, weight FROM reward_weights WHERE protocol_version = 'ifv-process-score-v1'"
    ).fetchall()}
    assert weights == {
        "result_reward": 1.0, "grounded_finding_reward": 0.3, "gap_coverage_reward": 0.3, "bridge_reward": 0.2,
        "stop_calibration_reward": 0.2, "duplicate_action_penalty": -0.2, "invalid_task_penalty": -0.2,
        "normalized_cost_penalty": -0.1,
    }


def test_views_tool_calls_flags(con, ep):
    # dup: c2 repeats c1 (same tool and canonical arguments); c3 was rejected as invalid.
    assert con.sql(
        "SELECT call_index, call_id, tool, status, is_duplicate, is_invalid FROM tool_calls "
        "WHERE run_id = 'views-main' AND episode_id = 'case-D' ORDER BY call_index"
    ).fetchall() == [
        (1, "c1", "text_search", "ok", False, False),
        (2, "c2", "text_search", "ok", True, False),
        (3, "c3", "image_magic", "invalid", False, True),
    ]
    # `wrong` issues the same search as `correct`: duplicates are counted within an episode.
    assert con.sql(
        "SELECT is_duplicate FROM tool_calls WHERE run_id = 'views-main' AND episode_id = ? AND call_id = 'c1'",
        params=[ep["wrong"]],
    ).fetchall() == [(False,)]
    # the blocked visit is a call like any other: blocked, not invalid
    assert con.sql(
        "SELECT status, is_invalid, json_array_length(sources) FROM tool_calls "
        "WHERE run_id = 'views-main' AND episode_id = 'case-e:blocked' AND call_id = 'c2'"
    ).fetchall() == [("blocked", False, 0)]


def test_views_episode_evidence(con, ep):
    assert con.sql(
        "SELECT evidence_id, normalized_url, content_sha256 IS NULL, first_call_index, visited FROM episode_evidence "
        "WHERE run_id = 'views-main' AND episode_id = ? ORDER BY evidence_id",
        params=[ep["correct"]],
    ).fetchall() == [
        ("ev-1", "https://bridge.example/post/42", True, 1, True),
        ("ev-2", "https://mirror.context.example/copy", False, 1, False),
    ]


def test_views_model_calls(con):
    assert con.sql(
        "SELECT call_index, step, stage, tool_call_count, reasoning, total_tokens FROM model_calls "
        "WHERE run_id = 'views-main' AND episode_id = 'case-G' ORDER BY call_index"
    ).fetchall() == [
        (1, 2, "unified_react", 2, "", 120),
        (2, 5, "unified_judgment", 0, "Weighing the evidence.", 120),
    ]
