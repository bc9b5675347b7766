"""`materialize_run` on the hand-built log: the seed run-directory files checked field by
field for one episode (`correct`, the first row of every file), byte-identical reruns, a
refused non-empty directory, `--format parquet`, and every file reloading in DuckDB and
pyarrow with the expected row count. The hand-built run keeps one episode unfinished
(case-J), so it is written only as asked, with `unfinished_as_errors`: its stand-in rows."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import duckdb
import pyarrow.json as pa_json
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from eviscene.cli.main import cli
from eviscene.errors import EvisceneError
from eviscene.exports.run_dir import materialize_run
from eviscene.store import EventDraft

MAIN = "views-main"
GIT_COMMIT = "0123456789abcdef0123456789abcdef01234567"
ROOT = "/data/releases/views-demo"

ROW_COUNTS = {
    "predictions": 8,  # rollout 0, completed: A D e F G H I K
    "episode_predictions": 11,  # every completed verdict
    "run_results": 15,  # every scheduled episode
    "process_metrics": 15,  # every scheduled episode (case-J: the seed's stand-in row)
    "reference_chain_metrics": 15,
    "trajectory_scores": 15,
    "rollout_groups": 15,
    "post_rollout_rewards": 15,
    "trajectory_sft": 11,  # finished with a verdict
    "perception_trajectories": 14,  # finished and perceived
}
TRACE_FILES = [
    "case-A--d265ec5d--r000.json", "case-A--d265ec5d--r001.json", "case-B.json", "case-C--12d45928--r000.json",
    "case-C--12d45928--r001.json", "case-D.json", "case-F.json", "case-G.json", "case-H.json", "case-I.json",
    "case-K--255f802b--r000.json", "case-K--255f802b--r001.json", "case-K--255f802b--r002.json", "case-e_blocked.json",
]


def approx(value):
    return pytest.approx(value, rel=1e-12, abs=1e-12)


@pytest.fixture(scope="module")
def run_dir(views_log, tmp_path_factory) -> tuple[Path, dict[str, int]]:
    out = tmp_path_factory.mktemp("materialized") / "run"
    return out, materialize_run(views_log, MAIN, out, unfinished_as_errors=True)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _first(run_dir: Path, stem: str) -> dict:
    return _lines(run_dir / f"{stem}.jsonl")[0]


def test_views_materialize_writes_the_seed_layout(run_dir):
    out, written = run_dir
    assert written == {**{f"{stem}.jsonl": n for stem, n in ROW_COUNTS.items()}, "traces/": 14}
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [f"{stem}.jsonl" for stem in ROW_COUNTS] + ["run_manifest.json", "summary.json", "traces"]
    )
    assert sorted(p.name for p in (out / "traces").iterdir()) == sorted(TRACE_FILES)
    for stem, count in ROW_COUNTS.items():
        assert len(_lines(out / f"{stem}.jsonl")) == count, stem


def test_views_materialized_rows_of_one_episode(run_dir, planned):
    out, _ = run_dir
    p = planned["correct"]
    identity = {"episode_id": p.episode_id, "case_id": "case-A", "prompt_group_id": p.prompt_group_id}

    # seed 000 writes rows in rollout-spec order, the order the log scheduled its episodes
    # in (conftest's PLANNED: case-e:blocked after case-D), not sorted by case id
    assert [r["case_id"] for r in _lines(out / "predictions.jsonl")] == [
        "case-A", "case-D", "case-e:blocked", "case-F", "case-G", "case-H", "case-I", "case-K"
    ]
    assert _first(out, "predictions") == {"case_id": "case-A", "prediction": "out_of_context", "confidence": 0.9}
    assert _first(out, "episode_predictions") == {**identity, "prediction": "out_of_context", "confidence": 0.9, "rollout_index": 0}
    assert _first(out, "run_results") == {
        **identity,
        "verdict": "out_of_context",
        "confidence": 0.9,
        "verdict_basis": [{"evidence_id": "ev-1", "finding": "ev-1 shows it"}, {"evidence_id": "ev-2", "finding": "ev-2 shows it"}],
        "termination": "completed",
        "time_taken": 12.5,
        "total_tool_calls": 3,
        "llm_api_calls": 5,
        "token_usage": {"prompt_tokens": 500, "completion_tokens": 100, "total_tokens": 600},
        "error": None,
        # events 1 ms apart: started(0) perceived(1) ... last investigation event(11), then
        # the judgment call(12), gate, judgment.made, finished(15)
        "stage_timings": {"perception": 0.001, "investigation": 0.01, "judgment": 0.004},
        "trace_path": f"traces/{p.episode_id}.json",
        "rollout_index": 0,
        "sampling_seed": p.seed,
    }
    assert _first(out, "process_metrics") == {
        **identity,
        "schema_version": "ifv-process-metrics-v2",
        "protocol_version": "ifv-process-score-v1",
        "runtime_verdict": "out_of_context",
        "termination": "completed",
        "result_correct": True,
        "engineering_error": False,
        "evidence_recovery_recall": approx(1 / 3),
        "fact_recovery_recall": approx(2 / 3),
        "chain_recovery_recall": 1.0,
        "basis_reference_precision": 1.0,
        "tool_calls": 3,
        "duplicate_tool_calls": 0,
        "invalid_tool_calls": 0,
        "training_eligible": True,
        "training_exclusion_reasons": [],
        "strict_trace_audit_pass": True,
        "hard_trace_audit_pass": True,
        "strict_trace_audit_failures": [],
        "first_error": None,  # set only on the stand-in row of an episode without a trace
    }
    assert _first(out, "reference_chain_metrics") == {
        **identity,
        "schema_version": "ifv-reference-chain-metrics-v2",
        "applicable": True,
        "engineering_error": False,
        "metrics": {
            "fact_recovery_recall": approx(2 / 3),
            "chain_recovery_recall": 1.0,
            "evidence_recovery_recall": approx(1 / 3),
            "basis_reference_precision": 1.0,
        },
        "error": None,  # 'canonical trace is missing' only on a stand-in row
        "reason": None,  # why the reference protocol does not apply: scoring packages only
    }
    components = {
        "result_reward": 1.0, "grounded_finding_reward": 1.0, "gap_coverage_reward": approx(2 / 3), "bridge_reward": 1.0,
        "stop_calibration_reward": approx(0.99), "duplicate_action_penalty": 0.0, "invalid_task_penalty": 0.0,
        "normalized_cost_penalty": 0.125,
    }
    assert _first(out, "trajectory_scores") == {
        **identity,
        "schema_version": "ifv-trajectory-score-v2",
        "protocol_version": "ifv-process-score-v1",
        "components": components,
        "total": approx(1.8855),
        "training_eligible": True,
        "training_exclusion_reasons": [],
    }
    assert _first(out, "rollout_groups") == {
        **identity,
        "schema_version": "ifv-rollout-group-member-v1",
        "rollout_index": 0,
        "group_size": 2,
        "sampling_seed": p.seed,
        "policy_revision": GIT_COMMIT,
        "trace_path": f"traces/{p.episode_id}.json",
        "training_prohibited": False,
        "training_eligible": True,
        "sft_structured_eligibility_required": False,
        "sft_training_eligible": True,
        "rl_reward_eligible": True,
    }
    # group case-A: rewards 1.8855 and 0.363666..., see test_views_rollouts.py
    reward = _first(out, "post_rollout_rewards")
    assert reward == {
        **identity,
        "schema_version": "ifv-post-rollout-deterministic-v1",
        "classification_correct": True,
        "fatal_engineering_error": False,
        "strict_trace_audit_pass": True,
        "hard_trace_audit_pass": True,
        "strict_trace_audit_failure_codes": [],
        "training_prohibited": False,
        "rl_reward_eligible": True,
        "step_ids": [f"{p.episode_id}:{s}" for s in (2, 5, 8, 11, 12)],
        "process_components": components,
        "reward": approx(1.8855),
        "group_members": 2,
        "reward_mean": approx(1.1245833333333333),
        "reward_std": pytest.approx(0.7609166666666667 * 2**0.5, rel=1e-9),
        "is_std_zero": False,
        "grpo_advantage": pytest.approx(0.70710612, rel=1e-7),
        "rloo_advantage": approx(1.8855 - 0.36366666666666667),
    }


def test_views_materialized_stand_in_rows_have_the_seeds_keys_alone(run_dir, planned):
    """case-J never finished: seed 000 writes, for an episode without a trace, these five rows
    with exactly these keys (`_run_eval`, "canonical trace is missing"); the views' other
    columns (episode_id, training_eligible, protocol_version, applicable, ...) stay out."""
    out, _ = run_dir
    p = planned["unfinished"]

    def stand_in(stem: str) -> str:
        [line] = [line for line in (out / f"{stem}.jsonl").read_text(encoding="utf-8").splitlines() if '"case-J"' in line]
        return line

    assert json.loads(stand_in("process_metrics")) == {
        "schema_version": "ifv-process-metrics-v2", "case_id": "case-J", "engineering_error": True,
        "runtime_verdict": None, "result_correct": False, "first_error": {"error": "canonical trace is missing"},
    }
    assert json.loads(stand_in("reference_chain_metrics")) == {
        "schema_version": "ifv-reference-chain-metrics-v2", "case_id": "case-J", "engineering_error": True,
        "error": "canonical trace is missing",
        "metrics": {"fact_recovery_recall": 0.0, "chain_recovery_recall": 0.0, "evidence_recovery_recall": 0.0,
                    "basis_reference_precision": 0.0},
    }
    # written as every row is, keys sorted
    assert stand_in("trajectory_scores") == (
        '{"case_id":"case-J","components":{"bridge_reward":0.0,"duplicate_action_penalty":0.0,"gap_coverage_reward":0.0,'
        '"grounded_finding_reward":0.0,"invalid_task_penalty":0.0,"normalized_cost_penalty":0.0,"result_reward":0.0,'
        '"stop_calibration_reward":0.0},"schema_version":"ifv-trajectory-score-v2","total":0.0}'
    )
    assert json.loads(stand_in("post_rollout_rewards")) == {
        "schema_version": "ifv-post-rollout-deterministic-v1", "prompt_group_id": p.prompt_group_id, "case_id": "case-J",
        "episode_id": "case-J", "classification_correct": False, "fatal_engineering_error": True,
        "strict_trace_audit_pass": False, "training_prohibited": False, "step_ids": [], "process_components": {},
    }
    # the member dict seed 000 builds before it looks for the trace: no sft_training_eligible or
    # rl_reward_eligible key (the seed adds those only where the trace exists)
    assert json.loads(stand_in("rollout_groups")) == {
        "schema_version": "ifv-rollout-group-member-v1", "prompt_group_id": p.prompt_group_id, "case_id": "case-J",
        "episode_id": "case-J", "rollout_index": 0, "group_size": 1, "sampling_seed": p.seed,
        "policy_revision": GIT_COMMIT, "trace_path": None, "training_prohibited": False, "training_eligible": False,
        "sft_structured_eligibility_required": False,
    }


def test_a_scoring_packages_reference_chain_row_is_the_seeds_not_applicable_row(views_log, tmp_path):
    """Seed 000 scores a reviewed scoring package (ifv-scoring-gold-v1) by its structured
    relation gate, not the v0.3 reference protocol: its reference_chain_metrics row says so,
    with these keys alone (no metrics, no engineering_error)."""
    materialize_run(views_log, "views-prohibited", tmp_path / "run")
    [line] = (tmp_path / "run" / "reference_chain_metrics.jsonl").read_text(encoding="utf-8").splitlines()
    # the run's one episode: case-A, one rollout, so its episode id is the case id
    group = json.loads((tmp_path / "run" / "rollout_groups.jsonl").read_text(encoding="utf-8"))["prompt_group_id"]
    assert json.loads(line) == {
        "schema_version": "ifv-scoring-reference-chain-v1", "case_id": "case-A", "applicable": False,
        "reason": "ifv-scoring-gold-v1 uses a structured relation target gate instead of the v0.3 reference protocol",
        "episode_id": "case-A", "prompt_group_id": group,
    }


def test_views_a_stand_in_score_reads_as_the_seeds_missing_training_quality_score(run_dir, tmp_path):
    """Seed 002 reads a trajectory_scores row without training_exclusion_reasons as
    missing_training_quality_score, and one without training_eligible as no gate failure;
    it keys a row without episode_id by its case_id. So a trace for case-J beside its stand-in
    score (one added here: an unfinished episode has none) is excluded for that reason alone,
    its deterministic gate passing, as the seed decides on such a directory."""
    out, _ = run_dir
    copy = tmp_path / "run"
    shutil.copytree(out, copy)
    trace = {"image_id": "case-J", "case_id": "case-J", "decision_policy_version": "unified-react-v1",
             "state": {"runtime_case": {"case_id": "case-J"}}}
    (copy / "traces" / "case-J.json").write_text(json.dumps(trace), encoding="utf-8")
    db = ["--db", str(tmp_path / "other.duckdb")]
    assert CliRunner().invoke(cli, [*db, "import", str(copy)]).exit_code == 0
    result = CliRunner().invoke(cli, [*db, "dataset", "export", "--run-dir", str(copy), "--out", str(tmp_path / "dataset")])
    assert result.exit_code == 0, result.output
    [excluded] = [row for row in _lines(tmp_path / "dataset" / "excluded_episode_metadata.jsonl") if row["episode_id"] == "case-J"]
    assert {k: excluded[k] for k in ("training_eligible", "training_exclusion_reasons", "teacher_score",
                                     "deterministic_hard_gate_pass", "deterministic_fatal_reasons")} == {
        "training_eligible": False, "training_exclusion_reasons": ["missing_training_quality_score"], "teacher_score": 0.0,
        "deterministic_hard_gate_pass": True, "deterministic_fatal_reasons": [],
    }


def test_views_materialized_summary_and_manifest(run_dir, fx):
    out, _ = run_dir
    assert json.loads((out / "summary.json").read_text()) == {
        "run_id": MAIN,
        "num_samples": 15,
        # 3 finished episodes count as errors, and case-J's stand-in row (its error text) is an
        # error row to the seed's _compute_summary: 4 (it was 3)
        "num_errors": 4,
        "predicted_verdict_distribution": {"None": 4, "authentic": 5, "manipulated": 2, "out_of_context": 2, "unverifiable": 2},
        "avg_time_taken_sec": 6.696,
        "avg_tool_calls": 2.929,
        "avg_llm_api_calls": 3.0,
    }
    manifest = json.loads((out / "run_manifest.json").read_text())
    started = fx.run_started(release_stage="frozen_eval", training_prohibited=False, schema_version="ifv-runtime-release-v0.3",
                             episodes=15, cases=11)
    gold = fx.gold_blob(sorted(fx.GOLD))
    assert manifest == {
        "schema_version": "ifv-eval-run-v2",
        "run_id": MAIN,
        # the status covers every episode (the `runs` view): run.finished said
        # completed_with_errors, but case-J never finished
        "status": "incomplete",
        "started_at": "2026-01-01T00:00:00+00:00",
        "completed_at": "2026-01-01T01:00:00+00:00",
        "git_commit": GIT_COMMIT,
        "benchmark": {  # seed 000's block: the protocol version is recorded for the SFT rows only
            **{k: v for k, v in started.benchmark.items() if k != "process_reference_protocol_version"},
            "evaluation_gold": {"path": f"{ROOT}/private/evaluation_gold.jsonl", "sha256": hashlib.sha256(gold).hexdigest()},
        },
        "agent": started.agent,
        "source_access_policy": {"active": True, "policy_id": "views-policy-1", "cache_partition": "views-partition"},
        "artifacts": {
            **{stem: f"{stem}.jsonl" for stem in ROW_COUNTS},
            "summary": "summary.json",
            "traces": "traces/",
        },
        # 11 cases, 15 episodes, 4 errors as summary.json counts them
        "result": {"num_samples": 11, "num_episodes": 15, "num_errors": 4},
    }
    # the policy's rules never reach the run directory
    for path in out.rglob("*"):
        if path.is_file():
            assert "blocked_url_prefixes" not in path.read_text(encoding="utf-8"), path


def test_views_materialized_trace(run_dir, planned):
    out, _ = run_dir
    p = planned["correct"]
    trace = json.loads((out / "traces" / f"{p.episode_id}.json").read_text())
    assert {k: trace[k] for k in ("schema_version", "run_id", "episode_id", "case_id", "attempt", "verdict", "confidence",
                                  "termination", "error")} == {
        "schema_version": "eviscene-trace-v1", "run_id": MAIN, "episode_id": p.episode_id, "case_id": "case-A", "attempt": 1,
        "verdict": "out_of_context", "confidence": 0.9, "termination": "completed", "error": None,
    }
    # the run's decision policy version (its manifest's agent block), where seed 002 reads it
    assert trace["decision_policy_version"] == "unified-react-v1"
    assert trace["state"]["rollout"] == {"prompt_group_id": p.prompt_group_id, "rollout_index": 0, "sampling_seed": p.seed}
    assert trace["state"]["runtime_case"]["image_path"] == "runtime_input/images/case-A.jpg"
    assert trace["state"]["perception"]["ocr_text"] == "FLOODS HIT THE CITY TODAY"
    evidence = trace["state"]["investigation_state"]["evidence"]
    assert [(e["evidence_id"], e["url"], e["visited"]) for e in evidence] == [
        ("ev-1", "https://WWW.Bridge.example/post/42/", True),
        ("ev-2", "https://mirror.context.example/copy", False),
    ]
    assert [s["step"] for s in trace["steps"]] == list(range(16))
    assert [s["type"] for s in trace["steps"]] == [
        "episode.started", "perception.reported",
        "model.called", "tool.called", "tool.returned",
        "model.called", "tool.called", "tool.returned",
        "model.called", "tool.called", "tool.returned",
        "model.called", "model.called", "gate.decided", "judgment.made", "episode.finished",
    ]
    # the resumed episode's trace is its second attempt only
    resumed = json.loads((out / "traces" / "case-F.json").read_text())
    assert resumed["attempt"] == 2
    assert [s["step"] for s in resumed["steps"]] == list(range(7))


def test_views_materialized_sft_and_perception(run_dir, planned):
    out, _ = run_dir
    p = planned["correct"]
    sft = _first(out, "trajectory_sft")
    assert {k: sft[k] for k in ("schema_version", "episode_id", "case_id", "prompt_group_id", "rollout_index", "verdict", "images")} == {
        "schema_version": "eviscene-trajectory-sft-v1", "episode_id": p.episode_id, "case_id": "case-A",
        "prompt_group_id": p.prompt_group_id, "rollout_index": 0, "verdict": "out_of_context",
        "images": [f"{ROOT}/runtime_input/images/case-A.jpg"],
    }
    # seed 000's five keys: the release manifest's process_reference_protocol_version too
    assert sft["source_metadata"] == {
        "source_run_id": MAIN, "runtime_commit": GIT_COMMIT, "release_id": "views-demo-v1",
        "runtime_contract_version": "ifv-runtime-contract-v1", "process_reference_protocol_version": "ifv-process-reference-v0.3",
    }
    assert _first(out, "perception_trajectories")["source_metadata"] == {  # and its perception examples four
        "source_run_id": MAIN, "runtime_commit": GIT_COMMIT, "release_id": "views-demo-v1",
        "runtime_contract_version": "ifv-runtime-contract-v1",
    }
    assert [t["function"]["name"] for t in sft["tools"]] == [
        "text_search", "text_image_search", "reverse_image_search", "visit", "compare_with_reference"
    ]
    messages = sft["messages"]
    assert [m["role"] for m in messages] == [
        "system", "user", "assistant", "tool", "assistant", "tool", "assistant", "tool", "assistant", "user", "assistant"
    ]
    assert messages[1]["content"][1] == {"type": "image"}
    assert messages[2]["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "text_search", "arguments": {"query": "flood bridge"}}}
    ]
    assert messages[2]["reasoning_content"] == "I should look for the picture's origin."
    assert (messages[3]["tool_call_id"], messages[3]["name"]) == ("c1", "text_search")
    assert messages[-1]["reasoning_content"] == "Weighing the evidence."
    assert json.loads(messages[-1]["content"][0]["text"])["verdict"] == "out_of_context"

    perception = _first(out, "perception_trajectories")
    assert {k: perception[k] for k in ("schema_version", "episode_id", "case_id", "images")} == {
        "schema_version": "eviscene-perception-example-v1", "episode_id": p.episode_id, "case_id": "case-A",
        "images": [f"{ROOT}/runtime_input/images/case-A.jpg"],
    }
    assert perception["perception"]["backend"] == "rapidocr-v1"


def test_views_materialize_is_byte_identical(views_log, run_dir, tmp_path):
    first, _ = run_dir
    second = tmp_path / "again"
    materialize_run(views_log, MAIN, second, unfinished_as_errors=True)
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    for relative in files:
        assert (first / relative).read_bytes() == (second / relative).read_bytes(), relative
    # a path as a str, as open_log and export_dataset take one (it failed: no `expanduser`)
    third = str(tmp_path / "as-text")
    materialize_run(views_log, MAIN, third, unfinished_as_errors=True)
    assert all((first / relative).read_bytes() == (Path(third) / relative).read_bytes() for relative in files)


def test_views_materialize_refuses_a_non_empty_directory(views_log, tmp_path):
    out = tmp_path / "taken"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(EvisceneError, match="new or empty"):
        materialize_run(views_log, MAIN, out, unfinished_as_errors=True)
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    assert (out / "keep.txt").read_text() == "mine"


def test_views_materialize_refuses_an_unfinished_run_unless_asked(views_log, tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(cli, ["--db", str(views_log.path), "materialize", MAIN, "--out", str(out)])
    assert (result.exit_code, result.stderr) == (2, (
        f"Error: run {MAIN} has 1 unfinished episode(s): `eviscene --db {views_log.path} eval resume {MAIN}` finishes them "
        "(--unfinished-as-errors writes them as error rows now)\n"
    ))
    assert not out.exists()


def test_views_materialized_jsonl_reloads(run_dir):
    out, _ = run_dir
    con = duckdb.connect()
    try:
        for stem, count in ROW_COUNTS.items():
            path = out / f"{stem}.jsonl"
            assert len(con.read_json(str(path)).fetchall()) == count, stem
            assert pa_json.read_json(path).num_rows == count, stem
    finally:
        con.close()


def test_views_materialize_parquet_through_the_cli(views_log, tmp_path):
    out = tmp_path / "parquet"
    result = CliRunner().invoke(cli, ["--db", str(views_log.path), "materialize", MAIN, "--out", str(out), "--format", "parquet",
                                         "--unfinished-as-errors"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [f"{stem}.parquet" for stem in ROW_COUNTS] + ["run_manifest.json", "summary.json", "traces"]
    )
    con = duckdb.connect()
    try:
        for stem, count in ROW_COUNTS.items():
            path = out / f"{stem}.parquet"
            assert len(con.read_parquet(str(path)).fetchall()) == count, stem
            assert pq.read_table(path).num_rows == count, stem
    finally:
        con.close()
    results = pq.read_table(out / "run_results.parquet").to_pylist()
    assert results[0]["case_id"] == "case-A" and results[0]["verdict"] == "out_of_context"
    manifest = json.loads((out / "run_manifest.json").read_text())
    assert manifest["artifacts"]["run_results"] == "run_results.parquet"
    assert len(list((out / "traces").iterdir())) == 14


def test_views_materialized_tables_dropped_once_read(views_log, planned):
    """With drop_unnamed, tool_calls (read by episode_evidence only) is gone once
    episode_evidence is computed; episodes stays, since the `steps` view reads it."""
    con = views_log.connect(views=False, materialize=True)
    try:
        views_log.add_views(con, materialize=True, for_query="SELECT * FROM episode_evidence", drop_unnamed=True)
        tables = {name for (name,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()}
        assert tables == {"episodes", "episode_evidence"}
        assert con.execute(
            "SELECT evidence_id, visited FROM episode_evidence WHERE episode_id = ? ORDER BY evidence_id",
            [planned["correct"].episode_id],
        ).fetchall() == [("ev-1", True), ("ev-2", False)]
        assert con.execute("SELECT count(*) FROM steps WHERE episode_id = ?", [planned["correct"].episode_id]).fetchall() == [(16,)]
    finally:
        con.close()


def test_episode_rows_keep_the_seeds_rollout_spec_order(run_dir, planned):
    # seed 000 appends every file's rows as it walks its rollout specs: cases as selected
    # (case-e:blocked between case-D and case-F here), each case's rollouts in turn
    out, _ = run_dir
    specs = [p.episode_id for p in planned.values()]
    for stem in ("run_results", "rollout_groups", "post_rollout_rewards", "trajectory_scores", "process_metrics"):
        # a stand-in row (the unfinished case-J, one rollout) has only its case_id
        assert [r.get("episode_id", r["case_id"]) for r in _lines(out / f"{stem}.jsonl")] == specs, stem


def test_a_killed_runs_unfinished_episodes_are_error_rows_and_its_status_is_the_runs_views(fx, tmp_path):
    """A run whose writer was killed (no run.finished): one episode finished, one only started.
    With --unfinished-as-errors the unfinished episode's run_results row is an error row
    (its error text; no termination, so an import reads it as unfinished), so seed 000's _compute_summary over the file counts it
    (`pred == "error" or termination == "error" or error text`): num_errors 1 where it was 0,
    with its verdict None as the seed's str(None). The manifest's status is the `runs` view's,
    running_or_interrupted, not "running": no writer stands behind a directory written from
    the log."""
    import anyio

    from eviscene.log import EventLog

    log = EventLog(tmp_path / "log.duckdb")
    done, cut = fx.Planned("correct", "case-A", 0, 1), fx.Planned("unfinished", "case-J", 0, 1)
    opening = [EventDraft(fx.run_started(release_stage="frozen_eval", training_prohibited=False,
                                         schema_version="ifv-runtime-release-v0.3", episodes=2, cases=2)),
               fx.scheduled(done), fx.scheduled(cut)]
    attempts = [fx.correct_episode(done), cut.attempt().start().perceive()]
    gold = [("evaluation_gold", fx.GOLD_PATH, fx.gold_blob(["case-A", "case-J"]), 2)]
    anyio.run(fx._write, log, "killed", attempts, opening, [], gold, fx._Clock())
    out = tmp_path / "run"
    materialize_run(log, "killed", out, unfinished_as_errors=True)
    stand_in = next(row for row in _lines(out / "run_results.jsonl") if row["case_id"] == "case-J")
    assert (stand_in["verdict"], stand_in["termination"], stand_in["error"]) == (None, None, "episode did not finish")
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["num_samples"], summary["num_errors"]) == (2, 1)
    assert summary["predicted_verdict_distribution"] == {"None": 1, "out_of_context": 1}
    manifest = json.loads((out / "run_manifest.json").read_text())
    assert (manifest["status"], manifest["completed_at"], manifest["result"]["num_errors"]) == ("running_or_interrupted", None, 1)
