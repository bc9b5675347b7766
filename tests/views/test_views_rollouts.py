"""Rollout groups, group statistics for RL and training eligibility on the hand-built log.

Rewards are the trajectory totals worked out in test_views_scores.py. Groups of the main run:
  case-A (2 members): correct 1.8855, wrong 0.363666...
  case-C (2 members): err0 0.0, err1 0.0          -> all equal
  case-K (3 members): 1.7778333... three times    -> all equal, non-zero
  every other case: one member (case-J's only rollout never finished).
"""

import math

import duckdb
import pytest

from eviscene.views import register_functions, view_definitions

MAIN, DEV, PROHIBITED = "views-main", "views-dev", "views-prohibited"
GIT_COMMIT = "0123456789abcdef0123456789abcdef01234567"


def approx(value, rel=1e-12):
    return pytest.approx(value, rel=rel, abs=1e-12)


# case-A by hand: mean = (1.8855 + 0.3636666...) / 2 = 1.1245833...;
# deviations +-0.7609166...; sample std = sqrt(2 * 0.7609166...^2 / 1) = 0.7609166... * sqrt(2) = 1.0760986...;
# GRPO = +-0.7609166... / (1.0760986... + 1e-6) = +-0.7071061...; RLOO = r - other = +-1.5218333...
A_MEAN = 1.1245833333333333
A_DEVIATION = 0.7609166666666667
A_STD = A_DEVIATION * math.sqrt(2)
A_GRPO = A_DEVIATION / (A_STD + 1e-6)
A_RLOO = 1.8855 - 0.36366666666666667

# name: reward, group_members, reward_mean, reward_std, is_std_zero, grpo, rloo
GROUP_STATS = {
    "correct": (1.8855, 2, A_MEAN, A_STD, False, A_GRPO, A_RLOO),
    "wrong": (0.36366666666666667, 2, A_MEAN, A_STD, False, -A_GRPO, -A_RLOO),
    "err0": (0.0, 2, 0.0, 0.0, True, 0.0, 0.0),
    "err1": (0.0, 2, 0.0, 0.0, True, 0.0, 0.0),
    "k0": (1.7778333333333333, 3, 1.7778333333333333, 0.0, True, 0.0, 0.0),
    "k1": (1.7778333333333333, 3, 1.7778333333333333, 0.0, True, 0.0, 0.0),
    "k2": (1.7778333333333333, 3, 1.7778333333333333, 0.0, True, 0.0, 0.0),
    # single-member groups: the mean is the reward, no sample std, both advantages 0
    "timeout": (-0.0041666666666666667, 1, -0.0041666666666666667, None, True, 0.0, 0.0),
    "dup": (1.1721666666666667, 1, 1.1721666666666667, None, True, 0.0, 0.0),
    "blocked": (1.4416666666666667, 1, 1.4416666666666667, None, True, 0.0, 0.0),
    "resumed": (1.2, 1, 1.2, None, True, 0.0, 0.0),
    "strict": (1.7778333333333333, 1, 1.7778333333333333, None, True, 0.0, 0.0),
    "disorder": (0.7458333333333333, 1, 0.7458333333333333, None, True, 0.0, 0.0),
    "overbudget": (0.05, 1, 0.05, None, True, 0.0, 0.0),
}

# model.called steps of the final attempt (steps 0 and 1 are episode.started and perception)
STEP_IDS = {
    "correct": [2, 5, 8, 11, 12],
    "wrong": [2, 5, 8, 9],
    "timeout": [2],
    "err0": [],
    "err1": [2, 3, 5],
    "dup": [2, 7, 10, 11],
    "blocked": [2, 5, 9, 10],
    "resumed": [2, 3],
    "strict": [2, 5],
    "disorder": [2, 5, 6],
    "overbudget": [2, 53, 54],
    "k0": [2, 5, 6],
    "k1": [2, 5, 6],
    "k2": [2, 5, 6],
}

# name: sft_training_eligible, rl_reward_eligible, exclusion reasons (compared as a set)
ELIGIBILITY = {
    "correct": (True, True, []),
    "wrong": (False, True, ["incorrect_result"]),
    "timeout": (False, True, ["no_exportable_trajectory", "trace_audit:missing_judgment", "incorrect_result", "timeout"]),
    "err0": (False, False, ["no_exportable_trajectory", "trace_audit:missing_judgment", "engineering_error"]),
    "err1": (False, False, ["no_exportable_trajectory", "trace_audit:missing_judgment", "engineering_error"]),
    "dup": (False, True, ["trace_audit:basis_cites_unknown_evidence", "ungrounded_citation", "duplicate_actions", "invalid_tool_calls"]),
    "blocked": (False, True, ["trace_audit:source_policy_violation"]),
    "resumed": (False, True, ["no_cited_evidence"]),
    "strict": (False, True, ["trace_audit:empty_reasoning", "trace_audit:overlapping_model_calls", "trace_audit:unanswered_tool_call"]),
    "disorder": (False, True, ["trace_audit:step_order_violation", "incorrect_result"]),
    "overbudget": (False, True, ["trace_audit:tool_budget_exceeded", "incorrect_result", "no_cited_evidence"]),
    "unfinished": (False, False, ["episode_not_finished"]),
    "k0": (True, True, []),
    "k1": (True, True, []),
    "k2": (True, True, []),
}

# name: classification_correct, fatal_engineering_error, strict pass, hard pass, strict codes
AUDIT = {
    "correct": (True, False, True, True, []),
    "wrong": (False, False, True, True, []),
    "timeout": (False, False, False, False, ["missing_judgment"]),
    "err0": (False, True, False, False, ["missing_judgment"]),
    "err1": (False, True, False, False, ["missing_judgment"]),
    "dup": (True, False, False, False, ["basis_cites_unknown_evidence"]),
    # one code per failure, as seed 000 lists them from process_metrics: three blocked sources
    "blocked": (True, False, False, False, ["source_policy_violation"] * 3),
    "resumed": (True, False, True, True, []),
    "strict": (True, False, False, True, ["empty_reasoning", "overlapping_model_calls", "unanswered_tool_call"]),
    "disorder": (False, False, False, False, ["step_order_violation"]),
    "overbudget": (False, False, False, False, ["tool_budget_exceeded"]),
    "k0": (True, False, True, True, []),
    "k1": (True, False, True, True, []),
    "k2": (True, False, True, True, []),
}


def test_views_post_rollout_rewards_cover_every_planned_episode(rows, ep):
    assert set(rows("post_rollout_rewards")) == {ep[n] for n in GROUP_STATS} | {ep["unfinished"]}
    # the seed's stand-in row for an episode without a trace; no part in group statistics
    row = rows("post_rollout_rewards")[ep["unfinished"]]
    assert (row["case_id"], row["classification_correct"], row["fatal_engineering_error"], row["strict_trace_audit_pass"]) == (
        "case-J", False, True, False)
    assert (row["training_prohibited"], row["rl_reward_eligible"], row["step_ids"], row["process_components"]) == (False, False, [], None)
    assert (row["reward"], row["group_members"], row["reward_mean"], row["grpo_advantage"], row["rloo_advantage"]) == (
        0.0, None, None, 0.0, 0.0)


@pytest.mark.parametrize("name", sorted(GROUP_STATS))
def test_views_post_rollout_group_statistics(rows, ep, name):
    reward, members, mean, std, std_zero, grpo, rloo = GROUP_STATS[name]
    row = rows("post_rollout_rewards")[ep[name]]
    assert row["reward"] == approx(reward)
    assert row["group_members"] == members
    assert row["reward_mean"] == approx(mean)
    assert row["reward_std"] == (None if std is None else approx(std, rel=1e-9))
    assert row["is_std_zero"] is std_zero
    assert row["grpo_advantage"] == approx(grpo, rel=1e-9)
    assert row["rloo_advantage"] == approx(rloo, rel=1e-9)


@pytest.mark.parametrize("name", sorted(AUDIT))
def test_views_post_rollout_reward_row(rows, ep, scores, name):
    row = rows("post_rollout_rewards")[ep[name]]
    correct, fatal, strict, hard, codes = AUDIT[name]
    assert row["schema_version"] == "ifv-post-rollout-deterministic-v1"
    assert row["classification_correct"] is correct
    assert row["fatal_engineering_error"] is fatal
    assert row["strict_trace_audit_pass"] is strict
    assert row["hard_trace_audit_pass"] is hard
    assert row["strict_trace_audit_failure_codes"] == codes
    assert row["training_prohibited"] is False
    assert row["rl_reward_eligible"] is ELIGIBILITY[name][1]
    assert row["step_ids"] == [f"{ep[name]}:{step}" for step in STEP_IDS[name]]
    assert row["process_components"] == scores[ep[name]]


@pytest.fixture(scope="module")
def scores(rows):
    return {episode_id: row["components"] for episode_id, row in rows("trajectory_scores").items()}


@pytest.mark.parametrize("name", sorted(ELIGIBILITY))
def test_views_sft_eligibility(rows, ep, name):
    sft, rl, reasons = ELIGIBILITY[name]
    row = rows("sft_eligibility")[ep[name]]
    assert row["training_prohibited"] is False
    assert row["sft_structured_eligibility_required"] is False
    assert row["sft_training_eligible"] is sft
    assert row["sft_eligible_unless_prohibited"] is sft  # nothing prohibited in the main run
    assert row["rl_reward_eligible"] is rl
    assert sorted(row["exclusion_reasons"]) == sorted(reasons)
    assert len(row["exclusion_reasons"]) == len(reasons)


@pytest.mark.parametrize(
    "run_id, reasons, structured, unless_prohibited",
    [
        # release_stage development_subset prohibits training by itself (a correct
        # episode: eligible but for that)
        (DEV, ["training_prohibited"], False, True),
        # --training-prohibited on a frozen_eval scoring package (ifv-scoring-gold-v1)
        (PROHIBITED, ["training_prohibited", "structured_eligibility_required"], True, False),
    ],
)
def test_views_training_prohibited_runs(rows, run_id, reasons, structured, unless_prohibited):
    (row,) = rows("sft_eligibility", run_id).values()
    assert row["training_prohibited"] is True
    assert row["sft_structured_eligibility_required"] is structured
    assert row["sft_training_eligible"] is False
    assert row["sft_eligible_unless_prohibited"] is unless_prohibited
    assert row["rl_reward_eligible"] is False
    assert sorted(row["exclusion_reasons"]) == sorted(reasons)
    (reward,) = rows("post_rollout_rewards", run_id).values()
    assert (reward["training_prohibited"], reward["rl_reward_eligible"]) == (True, False)
    (member,) = rows("rollout_groups", run_id).values()
    assert (member["training_prohibited"], member["training_eligible"]) == (True, False)
    # the episode itself is a clean teacher trajectory: only the run's flags exclude it
    (score,) = rows("trajectory_scores", run_id).values()
    assert score["training_eligible"] is True


def test_views_rollout_groups(rows, ep, planned):
    members = rows("rollout_groups")
    assert set(members) == set(ep.values())
    for name, p in planned.items():
        row = members[ep[name]]
        sft, rl, _ = ELIGIBILITY[name]
        assert row == {
            "run_id": MAIN,
            "episode_id": p.episode_id,
            "schema_version": "ifv-rollout-group-member-v1",
            "prompt_group_id": p.prompt_group_id,
            "case_id": p.case_id,
            "rollout_index": p.rollout_index,
            "group_size": p.group_size,
            "sampling_seed": p.seed,
            "policy_revision": GIT_COMMIT,
            "trace_path": None if name == "unfinished" else f"traces/{p.episode_id.replace(':', '_')}.json",
            "training_prohibited": False,
            "training_eligible": sft,
            "sft_structured_eligibility_required": False,
            "sft_training_eligible": sft,
            "rl_reward_eligible": rl,
        }, name
    # one prompt group per case; rollouts of a case share it
    assert len({row["prompt_group_id"] for row in members.values()}) == 11
    assert members[ep["correct"]]["prompt_group_id"] == members[ep["wrong"]]["prompt_group_id"]
    assert members[ep["correct"]]["sampling_seed"] != members[ep["wrong"]]["sampling_seed"]


def test_views_a_group_of_equal_rewards_has_their_reward_as_mean_and_no_spread():
    """Seven rewards of 1.7711666666666668 (a bundled-release case's seven rollouts): their
    rounded left-fold sum / 7 is 1.7711666666666663, which left a spread of ~5e-16, so
    is_std_zero read false and the advantages were not 0. By hand: mean = the reward, sample
    std = 0, both advantages 0. The view's own inputs are stubbed as tables."""
    reward = 1.7711666666666668
    total = 0.0
    for _ in range(7):
        total += reward
    assert total / 7 != reward  # the premise: the rounded sum does not give the reward back
    con = duckdb.connect()
    register_functions(con)
    members = [(f"ep-{i}", reward) for i in range(7)] + [("ep-x", 1.0), ("ep-y", 2.0)]
    groups = {f"ep-{i}": "g-equal" for i in range(7)} | {"ep-x": "g-spread", "ep-y": "g-spread"}
    con.execute("CREATE TABLE trajectory_scores (run_id VARCHAR, episode_id VARCHAR, case_id VARCHAR, prompt_group_id VARCHAR, "
                "total DOUBLE, components JSON)")
    con.executemany("INSERT INTO trajectory_scores VALUES ('r', ?, ?, ?, ?, '{}')",
                    [(e, groups[e], groups[e], r) for e, r in members])
    con.execute("CREATE TABLE episode_metrics AS SELECT run_id, episode_id, false AS result_correct, "
                "false AS engineering_error FROM trajectory_scores")
    con.execute("CREATE TABLE trace_audit AS SELECT run_id, episode_id, true AS strict_trace_audit_pass, "
                "true AS hard_trace_audit_pass, []::STRUCT(code VARCHAR)[] AS strict_trace_audit_failures FROM trajectory_scores")
    con.execute("CREATE TABLE sft_eligibility AS SELECT run_id, episode_id, false AS training_prohibited, "
                "true AS rl_reward_eligible FROM trajectory_scores")
    con.execute("CREATE TABLE model_calls AS SELECT run_id, episode_id, 2 AS step, 'unified_react' AS stage FROM trajectory_scores")
    con.execute("CREATE TABLE episodes AS SELECT run_id, episode_id, case_id, prompt_group_id, true AS finished FROM trajectory_scores")
    [view] = [d for d in view_definitions() if d.name == "post_rollout_rewards"]
    con.execute(view.sql)
    found = {row[0]: row[1:] for row in con.sql(
        "SELECT episode_id, reward_mean, reward_std, is_std_zero, grpo_advantage, rloo_advantage FROM post_rollout_rewards").fetchall()}
    for i in range(7):
        assert found[f"ep-{i}"] == (reward, 0.0, True, 0.0, 0.0)
    # a group with a spread is as before: mean 1.5, sample std sqrt(0.5), GRPO -+0.5 / (std + 1e-6), RLOO -+1
    std = math.sqrt(0.5)
    assert found["ep-x"] == (1.5, approx(std), False, approx(-0.5 / (std + 1e-6)), -1.0)
    assert found["ep-y"] == (1.5, approx(std), False, approx(0.5 / (std + 1e-6)), 1.0)
