"""Results, predictions, the run summary and classification metrics on the hand-built log,
plus the structural promises every view makes (its key is unique and never NULL)."""

import json

import pytest

from eviscene.views import view_definitions

MAIN, DEV, PROHIBITED = "views-main", "views-dev", "views-prohibited"
# The log of conftest.py fills every view of these folders (the dataset-export views of
# sql/70_dataset need imported artifacts it does not hold, so may be empty here).
COVERED_FOLDERS = {"10_runs", "20_episodes", "30_scoring", "35_audit", "40_process", "50_results", "60_rollouts"}

# name: verdict, confidence, termination, time_taken, total_tool_calls, llm_api_calls, error
RESULTS = {
    "correct": ("out_of_context", 0.9, "completed", 12.5, 3, 5, None),
    "wrong": ("authentic", 0.8, "completed", 8.25, 2, 4, None),
    "timeout": (None, None, "timeout", 30.0, 1, 2, "episode exceeded its 30 s timeout"),
    "err0": (None, None, "error", 0.4, 0, 1, "ProviderError: HTTP 503 Service Unavailable after 3 retries"),
    "err1": (None, None, "error", 0.6, 0, 3, "judgment failed validation: invalid_json"),
    "dup": ("manipulated", 0.6, "completed", 5.0, 3, 4, None),
    "blocked": ("authentic", 0.5, "completed", 4.0, 2, 4, None),
    "resumed": ("unverifiable", 1.0, "completed", 2.0, 0, 2, None),
    "strict": ("out_of_context", 0.7, "completed", 3.0, 1, 2, None),
    "disorder": ("manipulated", 0.5, "completed", 3.5, 1, 3, None),
    "overbudget": ("unverifiable", 0.5, "completed", 20.0, 25, 3, None),
    "unfinished": (None, None, None, None, None, None, "episode did not finish"),  # the stand-in error row
    "k0": ("authentic", 0.7, "completed", 1.5, 1, 3, None),
    "k1": ("authentic", 0.7, "completed", 1.5, 1, 3, None),
    "k2": ("authentic", 0.7, "completed", 1.5, 1, 3, None),
}


# Views the shared test log has no rows for, each given rows by a test of its own.
ROWS_ELSEWHERE = {
    "sft_export_rejections",  # tests/views/test_views_sft_rejection.py
    "run_shards",  # tests/store/test_shards.py::test_a_half_merged_run_is_refused_by_materialize_and_named_by_a_dataset_export
}


def test_views_every_key_unique_and_not_null(con):
    for definition in view_definitions():
        assert definition.key, f"{definition.path} declares no key"
        keys = ", ".join(f'"{k}"' for k in definition.key)
        nulls = " OR ".join(f'"{k}" IS NULL' for k in definition.key)
        total, distinct, with_null = con.sql(
            f'SELECT count(*), count(DISTINCT ({keys},)), count(*) FILTER (WHERE {nulls}) FROM "{definition.name}"'
        ).fetchall()[0]
        if definition.path.split("/")[1] in COVERED_FOLDERS and definition.name not in ROWS_ELSEWHERE:
            assert total > 0, f"{definition.name} is empty on the test log: the check proves nothing"
        assert distinct == total, f"{definition.name}: key ({keys}) repeats"
        assert with_null == 0, f"{definition.name}: key ({keys}) has NULLs"


def test_views_episodes_are_finished_plus_unfinished(con):
    for run_id, episodes, finished, unfinished in con.sql(
        "SELECT run_id, count(*), count(*) FILTER (WHERE finished), count(*) FILTER (WHERE NOT finished) "
        "FROM episodes GROUP BY run_id ORDER BY run_id"
    ).fetchall():
        assert episodes == finished + unfinished, run_id
    counts = con.sql(
        "SELECT r.run_id, r.episodes_planned, r.episodes_finished, count(e.episode_id), count(*) FILTER (WHERE e.finished) "
        "FROM runs r JOIN episodes e USING (run_id) GROUP BY ALL ORDER BY r.run_id"
    ).fetchall()
    assert counts == [(DEV, 1, 1, 1, 1), (MAIN, 15, 14, 15, 14), (PROHIBITED, 1, 1, 1, 1)]


def test_views_runs(rows):
    main = rows("runs", key="run_id")[MAIN]
    # 15 planned, 14 finished (case-J never did), 3 count as errors (err0, err1 and the timeout
    # with its error text, as the seed counts): run.finished says completed_with_errors but an
    # episode is missing, so the run is incomplete.
    assert (main["status"], main["episodes_planned"], main["episodes_finished"], main["episodes_errored"]) == ("incomplete", 15, 14, 3)
    assert main["label"] == "rollouts=2 seed=1729"
    assert (main["release_id"], main["provider"], main["model"]) == ("views-demo-v1", "offline", "offline-react-v1")
    assert rows("runs", DEV, key="run_id")[DEV]["status"] == "completed"


def test_views_run_manifests(rows):
    main = rows("run_manifests", key="run_id")[MAIN]
    assert main["release_stage"] == "frozen_eval"
    assert main["max_tool_actions"] == 24
    assert main["training_prohibited_flag"] is False
    assert main["is_scoring_package"] is False
    assert main["label_set"] == ["authentic", "out_of_context", "manipulated", "unverifiable"]
    prohibited = rows("run_manifests", PROHIBITED, key="run_id")[PROHIBITED]
    assert (prohibited["training_prohibited_flag"], prohibited["is_scoring_package"]) == (True, True)


def test_views_resumed_episode_reads_its_final_attempt(rows, con, ep):
    episode = rows("episodes")[ep["resumed"]]
    assert (episode["attempts"], episode["final_attempt"], episode["finished"]) == (2, 2, True)
    # attempt 1 logged a model call and a tool call; neither is a step of the episode
    assert con.sql(
        "SELECT attempt, count(*) FROM steps WHERE run_id = 'views-main' AND episode_id = 'case-F' GROUP BY ALL"
    ).fetchall() == [(2, 7)]
    assert con.sql("SELECT count(*) FROM tool_calls WHERE run_id = 'views-main' AND episode_id = 'case-F'").fetchall() == [(0,)]
    unfinished = rows("episodes")[ep["unfinished"]]
    assert (unfinished["attempts"], unfinished["final_attempt"], unfinished["finished"], unfinished["termination"]) == (1, None, False, None)


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_views_run_results(rows, ep, planned, name):
    verdict, confidence, termination, time_taken, tools, llm, error = RESULTS[name]
    row = rows("run_results")[ep[name]]
    p = planned[name]
    assert row["case_id"] == p.case_id
    assert (row["verdict"], row["confidence"], row["termination"]) == (verdict, confidence, termination)
    assert (row["time_taken"], row["total_tool_calls"], row["llm_api_calls"], row["error"]) == (time_taken, tools, llm, error)
    assert (row["prompt_group_id"], row["rollout_index"], row["sampling_seed"]) == (p.prompt_group_id, p.rollout_index, p.seed)
    assert row["trace_path"] == (None if name == "unfinished" else f"traces/{p.episode_id.replace(':', '_')}.json")
    if llm is None:
        assert row["token_usage"] is None
    else:
        assert row["token_usage"] is not None


def test_views_run_results_basis(rows, ep):
    row = rows("run_results")[ep["correct"]]
    assert json.loads(row["verdict_basis"]) == [
        {"evidence_id": "ev-1", "finding": "ev-1 shows it"},
        {"evidence_id": "ev-2", "finding": "ev-2 shows it"},
    ]
    assert json.loads(row["token_usage"]) == {"prompt_tokens": 500, "completion_tokens": 100, "total_tokens": 600}
    assert rows("run_results")[ep["timeout"]]["verdict_basis"] is None


def test_views_predictions_rollout_zero_completed_only(rows):
    # rollout 0 of each case that completed with a verdict: not case-B (timeout), case-C
    # (error) or case-J (unfinished); case-A's and case-K's other rollouts are left out.
    found = {r["case_id"]: (r["prediction"], r["confidence"]) for r in rows("predictions", key=None)}
    assert found == {
        "case-A": ("out_of_context", 0.9),
        "case-D": ("manipulated", 0.6),
        "case-e:blocked": ("authentic", 0.5),
        "case-F": ("unverifiable", 1.0),
        "case-G": ("out_of_context", 0.7),
        "case-H": ("manipulated", 0.5),
        "case-I": ("unverifiable", 0.5),
        "case-K": ("authentic", 0.7),
    }
    assert len(rows("predictions", key=None)) == 8


def test_views_episode_predictions(rows, ep):
    found = rows("episode_predictions")
    expected = ["correct", "wrong", "dup", "blocked", "resumed", "strict", "disorder", "overbudget", "k0", "k1", "k2"]
    assert set(found) == {ep[n] for n in expected}
    assert found[ep["wrong"]]["prediction"] == "authentic"
    assert (found[ep["k2"]]["rollout_index"], found[ep["k2"]]["confidence"]) == (2, 0.7)


def test_views_run_summary(rows):
    summary = rows("run_summary", key="run_id")[MAIN]
    assert summary["num_samples"] == 15
    # timeout (error text), err0, err1, and the unfinished episode, whose stand-in row's error
    # text says it did not finish (it was not counted: no error text, no termination)
    assert summary["num_errors"] == 4
    # str(verdict) of the run_results rows: the 4 finished episodes without a verdict are 'None'
    assert dict(summary["predicted_verdict_distribution"]) == {
        "None": 4, "authentic": 5, "manipulated": 2, "out_of_context": 2, "unverifiable": 2,
    }
    # over the 14 finished episodes (the unfinished one has no numbers):
    # time 12.5+8.25+30+0.4+0.6+5+4+2+3+3.5+20+1.5*3 = 93.75 / 14 = 6.69642.. -> 6.696
    # tools 3+2+1+0+0+3+2+0+1+1+25+1*3 = 41 / 14 = 2.92857.. -> 2.929
    # model 5+4+2+1+3+4+4+2+2+3+3+3*3 = 42 / 14 = 3.0
    assert (summary["avg_time_taken_sec"], summary["avg_tool_calls"], summary["avg_llm_api_calls"]) == (6.696, 2.929, 3.0)
    dev = rows("run_summary", DEV, key="run_id")[DEV]
    assert (dev["num_samples"], dev["num_errors"], dict(dev["predicted_verdict_distribution"])) == (1, 0, {"out_of_context": 1})
    assert (dev["avg_time_taken_sec"], dev["avg_tool_calls"], dev["avg_llm_api_calls"]) == (12.5, 3.0, 5.0)


# Rollout 0 per case, gold -> predicted:
#   case-A out_of_context -> out_of_context   case-G out_of_context -> out_of_context
#   case-B manipulated -> (timeout, abstain)  case-H authentic -> manipulated
#   case-C authentic -> (error)               case-I manipulated -> unverifiable
#   case-D manipulated -> manipulated         case-J out_of_context -> (unfinished, abstain)
#   case-e authentic -> authentic             case-K authentic -> authentic
#   case-F unverifiable -> unverifiable
# 11 cases, 6 right: accuracy 6/11.
# authentic:      support 4 (C E H K), predicted 2 (E K), tp 2: P 1, R 1/2, F1 2/3
# out_of_context: support 3 (A G J), predicted 2 (A G), tp 2: P 1, R 2/3, F1 0.8
# manipulated:    support 3 (B D I), predicted 2 (D H), tp 1: P 1/2, R 1/3, F1 0.4
# unverifiable:   support 1 (F), predicted 2 (F I), tp 1: P 1/2, R 1, F1 2/3
# macro-F1 = (2/3 + 0.8 + 0.4 + 2/3) / 4 = 0.633333...
CLASSES = {
    "authentic": (4, 2, 2, 1.0, 1 / 2, 2 / 3, {"(none)": 1, "authentic": 2, "manipulated": 1}),
    "out_of_context": (3, 2, 2, 1.0, 2 / 3, 0.8, {"(none)": 1, "out_of_context": 2}),
    "manipulated": (3, 2, 1, 1 / 2, 1 / 3, 0.4, {"(none)": 1, "manipulated": 1, "unverifiable": 1}),
    "unverifiable": (1, 2, 1, 1 / 2, 1.0, 2 / 3, {"unverifiable": 1}),
}


def test_views_classification_metrics(rows):
    found = rows("classification_metrics", key="label")
    assert set(found) == set(CLASSES)
    for label, (support, predicted, tp, precision, recall, f1, confusion) in CLASSES.items():
        row = found[label]
        assert (row["support"], row["predicted"], row["true_positives"]) == (support, predicted, tp), label
        assert (row["precision"], row["recall"], row["f1"]) == pytest.approx((precision, recall, f1), rel=1e-12), label
        assert dict(row["confusion"]) == confusion, label
        assert row["cases"] == 11
        assert row["accuracy"] == pytest.approx(6 / 11, rel=1e-12)
        assert row["macro_f1"] == pytest.approx((2 / 3 + 0.8 + 0.4 + 2 / 3) / 4, rel=1e-12)
        assert (row["errors"], row["abstentions"]) == (1, 2)


def test_views_classification_metrics_labels_without_gold(rows):
    # The dev run's gold has only case-A (out_of_context): the other labels still get a row,
    # with zero support and an empty confusion row.
    found = rows("classification_metrics", DEV, key="label")
    assert set(found) == set(CLASSES)
    assert dict(found["authentic"]["confusion"]) == {}
    assert (found["authentic"]["support"], found["authentic"]["f1"]) == (0, 0.0)
    assert dict(found["out_of_context"]["confusion"]) == {"out_of_context": 1}
    assert found["out_of_context"]["accuracy"] == 1.0
    assert found["out_of_context"]["macro_f1"] == pytest.approx(0.25)


def test_views_gold_is_parsed_per_run(con):
    assert con.sql("SELECT run_id, count(*) FROM gold_labels GROUP BY ALL ORDER BY ALL").fetchall() == [
        (DEV, 1), (MAIN, 11), (PROHIBITED, 1),
    ]
    assert con.sql("SELECT count(*) FROM gold_sources WHERE run_id = 'views-main' AND case_id = 'case-A'").fetchall() == [(3,)]
    assert con.sql("SELECT normalized_url FROM gold_sources WHERE run_id = 'views-main' AND source_id = 'P1'").fetchall() == [
        ("https://orig-c.example",)
    ]
