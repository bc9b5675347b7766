"""Derived-mode exports of hand-built run directories: selection, source-family groups,
splits and routes computed by hand (seed 002's arithmetic written out in the test)."""

from __future__ import annotations

import json
import re

import pytest
from dataset_builders import read_jsonl, seed_group_id, seed_split, write_run_dir

from eviscene.exports.dataset import DatasetExportError, ExportOptions, export_dataset
from eviscene.store import EventLog

EP = "{case}--r{index:03d}"


def ep(case: str, index: int = 0) -> str:
    return EP.format(case=case, index=index)


@pytest.fixture
def log(tmp_path) -> EventLog:
    return EventLog(tmp_path / "log.duckdb")


def export(log: EventLog, out, *run_dirs, **options):
    return export_dataset(log, ExportOptions(out_dir=out, run_dirs=list(run_dirs), **options))


def by_episode(path):
    return {row["episode_id"]: row for row in read_jsonl(path)}


def test_shared_content_families_chain_three_cases_into_one_group(log, tmp_path):
    run = write_run_dir(tmp_path / "run", "run-a", [
        {"episode_id": ep("case-a"), "case_id": "case-a", "families": ["content:x", "domain:wikipedia.org"]},
        {"episode_id": ep("case-b"), "case_id": "case-b", "families": ["content:x", "content:y"]},
        {"episode_id": ep("case-c"), "case_id": "case-c", "families": ["content:y"]},
        # shares only a domain with case-a: domains never join cases
        {"episode_id": ep("case-d"), "case_id": "case-d", "families": ["content:z", "domain:wikipedia.org"]},
    ])
    manifest, _ = export(log, tmp_path / "out", run)
    rows = by_episode(tmp_path / "out" / "episode_metadata.jsonl")
    chained = seed_group_id([ep("case-a"), ep("case-b"), ep("case-c")], ["content:x", "content:y"])
    alone = seed_group_id([ep("case-d")], ["content:z"])
    assert {e: r["split_group_id"] for e, r in rows.items()} == {
        ep("case-a"): chained, ep("case-b"): chained, ep("case-c"): chained, ep("case-d"): alone,
    }
    assert {e: r["split"] for e, r in rows.items()} == {
        ep("case-a"): seed_split(chained), ep("case-b"): seed_split(chained), ep("case-c"): seed_split(chained),
        ep("case-d"): seed_split(alone),
    }
    assert manifest["group_count"] == 2 and manifest["accepted_case_count"] == 4
    assert rows[ep("case-a")]["source_family_keys"] == ["content:x"]


def test_split_follows_the_seed_and_ratios(log, tmp_path):
    run = write_run_dir(tmp_path / "run", "run-a", [{"episode_id": ep(f"c{i}"), "case_id": f"c{i}"} for i in range(12)])
    export(log, tmp_path / "out", run, seed="other-seed", train_ratio=0.5, validation_ratio=0.25)
    rows = by_episode(tmp_path / "out" / "episode_metadata.jsonl")
    for episode_id, row in rows.items():
        group = seed_group_id([episode_id], [])
        assert row["split_group_id"] == group
        assert row["split"] == seed_split(group, seed="other-seed", train_ratio=0.5, validation_ratio=0.25)
    assert {r["split"] for r in rows.values()} == {"train", "validation", "test"}


def test_best_rollout_prefers_fewer_red_flags_then_score_then_larger_episode_id(log, tmp_path):
    run = write_run_dir(tmp_path / "run", "run-a", [
        # a red flag outweighs a higher score
        {"episode_id": ep("s", 0), "case_id": "s", "score": {"total": 1.0}},
        {"episode_id": ep("s", 1), "case_id": "s", "score": {"total": 1.5, "training_exclusion_reasons": ["duplicate_actions"]}},
        # a full tie goes to the larger episode_id (the seed's max)
        {"episode_id": ep("t", 0), "case_id": "t", "score": {"total": 1.2}},
        {"episode_id": ep("t", 1), "case_id": "t", "score": {"total": 1.2}},
        # only eligible rollouts compete
        {"episode_id": ep("u", 0), "case_id": "u", "score": {"total": 3.0, "training_eligible": False,
                                                               "training_exclusion_reasons": ["incorrect_result"]}},
        {"episode_id": ep("u", 1), "case_id": "u", "score": {"total": 0.5}},
        # higher score wins
        {"episode_id": ep("w", 0), "case_id": "w", "score": {"total": 0.9}},
        {"episode_id": ep("w", 1), "case_id": "w", "score": {"total": 0.8}},
    ])
    export(log, tmp_path / "out", run)
    accepted = set(by_episode(tmp_path / "out" / "accepted_episodes.jsonl"))
    assert accepted == {ep("s", 0), ep("t", 1), ep("u", 1), ep("w", 0)}
    excluded = by_episode(tmp_path / "out" / "excluded_episode_metadata.jsonl")
    assert excluded[ep("s", 1)]["training_exclusion_reasons"] == ["lower_quality_rollout_for_case", "duplicate_actions"]
    assert excluded[ep("s", 1)]["deterministic_red_flags"] == ["duplicate_actions"]
    assert excluded[ep("t", 0)]["training_exclusion_reasons"] == ["lower_quality_rollout_for_case"]
    assert excluded[ep("u", 0)]["training_exclusion_reasons"] == ["incorrect_result"]
    assert excluded[ep("u", 0)]["deterministic_fatal_reasons"] == ["incorrect_result"]
    assert excluded[ep("u", 0)]["deterministic_hard_gate_pass"] is False
    assert all(not row["training_eligible"] for row in excluded.values())


def test_a_best_rollout_without_a_trajectory_drops_its_case(log, tmp_path):
    run = write_run_dir(tmp_path / "run", "run-a", [
        {"episode_id": ep("v", 0), "case_id": "v", "score": {"total": 2.0}, "trajectory": False},
        {"episode_id": ep("v", 1), "case_id": "v", "score": {"total": 1.0}},
    ])
    manifest, _ = export(log, tmp_path / "out", run)
    assert manifest["accepted_episode_count"] == 0 and manifest["candidate_episode_count"] == 2
    excluded = by_episode(tmp_path / "out" / "excluded_episode_metadata.jsonl")
    # the runner-up is not promoted
    assert excluded[ep("v", 1)]["training_exclusion_reasons"] == ["lower_quality_rollout_for_case"]
    assert excluded[ep("v", 0)]["training_eligible"] is True and excluded[ep("v", 0)]["trajectory_sft_rows"] == 0
    assert "trajectory_token_count_estimate" not in excluded[ep("v", 0)]


def test_a_long_trajectory_goes_to_the_long_holdout(log, tmp_path):
    run = write_run_dir(tmp_path / "run", "run-a", [
        {"episode_id": ep("short"), "case_id": "short", "token_count_estimate": 30},  # ceil(30/3) = 10 tokens
        {"episode_id": ep("long"), "case_id": "long", "token_count_estimate": 31},  # ceil(31/3) = 11 tokens
    ])
    manifest, _ = export(log, tmp_path / "out", run, short_max_tokens=10)
    rows = by_episode(tmp_path / "out" / "episode_metadata.jsonl")
    assert rows[ep("short")]["sft_route"] == "short_sft" and rows[ep("short")]["trajectory_approx_tokens"] == 10
    assert rows[ep("long")]["sft_route"] == "long_holdout" and rows[ep("long")]["trajectory_approx_tokens"] == 11
    holdout = read_jsonl(tmp_path / "out" / "long_holdout.jsonl")
    assert [r["episode_id"] for r in holdout] == [ep("long")]
    assert holdout[0]["holdout_reason"] == "trajectory_exceeds_short_token_budget" and holdout[0]["short_max_tokens"] == 10
    split_rows = [r for s in ("train", "validation", "test") for r in read_jsonl(tmp_path / "out" / f"{s}.jsonl")]
    assert [r["episode_id"] for r in split_rows] == [ep("short")]
    perception = [r for s in ("train", "validation", "test") for r in read_jsonl(tmp_path / "out" / f"perception.{s}.jsonl")]
    assert [r["episode_id"] for r in perception] == [ep("short")]  # long episodes give no perception row
    assert manifest["long_holdout_episode_count"] == 1 and manifest["episode_count"] == 1


def test_token_estimate_defaults_to_the_utf8_bytes_of_the_messages(log, tmp_path):
    run = write_run_dir(tmp_path / "run", "run-a", [{"episode_id": ep("p"), "case_id": "p", "padding": 300}])
    export(log, tmp_path / "out", run)
    row = read_jsonl(tmp_path / "out" / "episode_metadata.jsonl")[0]
    sft = [r for s in ("train", "validation", "test") for r in read_jsonl(tmp_path / "out" / f"{s}.jsonl")][0]
    expected = len(json.dumps(sft["messages"], separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    assert row["trajectory_token_count_estimate"] == expected
    assert row["trajectory_approx_tokens"] == (expected + 2) // 3 and row["tool_call_count"] == 1


def test_rerun_is_byte_identical_and_reimport_changes_nothing(log, tmp_path):
    run = write_run_dir(tmp_path / "run", "run-a", [
        {"episode_id": ep(f"c{i}", r), "case_id": f"c{i}", "families": [f"content:{i % 3}"], "score": {"total": r / 2}}
        for i in range(6) for r in range(2)
    ])
    export(log, tmp_path / "one", run, fmt="parquet")
    events = log.sql("SELECT count(*) AS n FROM events WHERE starts_with(run_id, 'import-')")["n"][0].as_py()
    export(log, tmp_path / "two", run, fmt="parquet")
    assert log.sql("SELECT count(*) AS n FROM events WHERE starts_with(run_id, 'import-')")["n"][0].as_py() == events
    one = sorted(p.name for p in (tmp_path / "one").iterdir())
    assert one == sorted(p.name for p in (tmp_path / "two").iterdir()) and "train.parquet" in one
    for name in one:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
    recorded = log.sql("SELECT count(*) AS n FROM events WHERE type = 'dataset.exported'")["n"][0].as_py()
    assert recorded == 2


def test_training_prohibited_sources_contribute_nothing(log, tmp_path):
    run = write_run_dir(tmp_path / "run", "run-a", [{"episode_id": ep("d"), "case_id": "d"}], release_stage="development_subset")
    manifest, _ = export(log, tmp_path / "out", run)
    assert manifest["accepted_episode_count"] == 0
    assert read_jsonl(tmp_path / "out" / "excluded_episode_metadata.jsonl")[0]["training_exclusion_reasons"] == ["training_prohibited"]


@pytest.mark.parametrize(
    "options, message",
    [
        ({"train_ratio": 0.0}, "split ratios must be non-negative"),
        ({"train_ratio": 0.9, "validation_ratio": 0.1}, "train_ratio + validation_ratio must be below 1"),
        ({"short_max_tokens": 0}, "short_max_tokens must be positive"),
        ({"minimum_accepted_cases": -1}, "minimum_accepted_cases must be non-negative"),
    ],
)
def test_bad_options_fail_with_the_seed_messages(log, tmp_path, options, message):
    run = write_run_dir(tmp_path / "run", "run-a", [{"episode_id": ep("a"), "case_id": "a"}])
    with pytest.raises(DatasetExportError, match=re.escape(message)):
        export(log, tmp_path / "out", run, **options)


def test_the_output_directory_must_be_new_or_empty(log, tmp_path):
    run = write_run_dir(tmp_path / "run", "run-a", [{"episode_id": ep("a"), "case_id": "a"}])
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "x").write_text("x")
    with pytest.raises(DatasetExportError, match="must be new or empty"):
        export(log, tmp_path / "out", run)


def test_an_episode_in_two_sources_is_an_error(log, tmp_path):
    one = write_run_dir(tmp_path / "one", "run-a", [{"episode_id": ep("a"), "case_id": "a"}])
    two = write_run_dir(tmp_path / "two", "run-b", [{"episode_id": ep("a"), "case_id": "a", "score": {"total": 2.0}}])
    with pytest.raises(DatasetExportError, match="duplicate episode across source runs: a--r000"):
        export(log, tmp_path / "out", one, two)
