"""Derived-mode exports of hand-built run directories: which rollouts are kept, source-family
groups, splits and routes computed by hand (seed 002's arithmetic written out in the test)."""

from __future__ import annotations

import json
import re

import pyarrow.parquet as pq
import pytest
from dataset_builders import read_jsonl, seed_group_id, seed_split, write_run_dir

from eviscene.exports.dataset import DatasetExportError, ExportOptions, export_dataset
from eviscene.exports.dataset_why import describe, explain_dataset_decision
from eviscene.log import EventLog

EP = "{case}--r{index:03d}"


def ep(case: str, index: int = 0) -> str:
    return EP.format(case=case, index=index)


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


@pytest.mark.parametrize(("ratios", "split"), [
    # seed 002 compares as Python does: no fraction is below NaN, so with a NaN train ratio
    # every group is test, and with a NaN validation ratio those above train_ratio are test
    ({"train_ratio": float("nan")}, {"train": "test", "validation": "test", "test": "test"}),
    ({"validation_ratio": float("nan")}, {"train": "train", "validation": "test", "test": "test"}),
])
def test_a_nan_split_ratio_splits_as_the_seeds_comparisons_do(log, tmp_path, ratios, split):
    cases = [f"c{i}" for i in range(8)]
    run = write_run_dir(tmp_path / "run", "run-a", [{"episode_id": ep(c), "case_id": c} for c in cases])
    export(log, tmp_path / "out", run, **ratios)
    rows = by_episode(tmp_path / "out" / "episode_metadata.jsonl")
    # with the default ratios these cases fall in train (c0, c2-c6), validation (c7) and test (c1)
    default = {c: seed_split(seed_group_id([ep(c)], [])) for c in cases}
    assert sorted(default.values()) == ["test"] + ["train"] * 6 + ["validation"]
    assert {c: rows[ep(c)]["split"] for c in cases} == {c: split[default[c]] for c in cases}


def test_a_run_manifests_ids_are_copied_as_the_json_values_they_are(log, tmp_path):
    """Seed 002 copies run_id, git_commit and benchmark.release_id from the run manifest as
    they are (`manifest.get("run_id")`): a number stays a number, null stays null."""
    run = write_run_dir(tmp_path / "run", "run-a", [{"episode_id": ep("a"), "case_id": "a"}])
    manifest = json.loads((run / "run_manifest.json").read_text(encoding="utf-8"))
    manifest.update(run_id=20261201, git_commit=None)
    manifest["benchmark"]["release_id"] = 3
    (run / "run_manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    written, _ = export(log, tmp_path / "out", run)
    assert [{k: v for k, v in source.items() if k != "path"} for source in written["source_runs"]] == [
        {"run_id": 20261201, "git_commit": None, "release_id": 3}]
    assert json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))["source_runs"] == written["source_runs"]
    for name in ("episode_metadata.jsonl", "accepted_episodes.jsonl"):
        assert [row["source_run_id"] for row in read_jsonl(tmp_path / "out" / name)] == [20261201]


def test_derived_mode_keeps_every_eligible_rollout_with_a_trajectory(log, tmp_path):
    # A 4-rollout run. Case x: r0 and r1 eligible (content:x), r2 wrong, r3 eligible but
    # without a trajectory. Case y: four eligible rollouts sharing content:y.
    run = write_run_dir(tmp_path / "run", "run-a", [
        {"episode_id": ep("x", 0), "case_id": "x", "families": ["content:x"], "score": {"total": 1.0}},
        {"episode_id": ep("x", 1), "case_id": "x", "families": ["content:x"], "score": {"total": 0.5,
                                                                                     "training_exclusion_reasons": ["duplicate_actions"]}},
        {"episode_id": ep("x", 2), "case_id": "x", "families": ["content:x"], "score": {
            "total": 3.0, "training_eligible": False, "training_exclusion_reasons": ["incorrect_result"]}},
        {"episode_id": ep("x", 3), "case_id": "x", "families": ["content:x"], "trajectory": False},
        *({"episode_id": ep("y", r), "case_id": "y", "families": ["content:y"], "score": {"total": r / 4}} for r in range(4)),
    ])
    manifest, written = export(log, tmp_path / "out", run)
    rows = by_episode(tmp_path / "out" / "episode_metadata.jsonl")
    group_x = seed_group_id([ep("x", 0), ep("x", 1)], ["content:x"])
    group_y = seed_group_id([ep("y", r) for r in range(4)], ["content:y"])
    assert {e: (r["split"], r["split_group_id"]) for e, r in rows.items()} == {
        ep("x", 0): (seed_split(group_x), group_x), ep("x", 1): (seed_split(group_x), group_x),
        **{ep("y", r): (seed_split(group_y), group_y) for r in range(4)},
    }
    assert all(r["training_eligible"] for r in rows.values())
    assert rows[ep("x", 1)]["training_exclusion_reasons"] == ["duplicate_actions"]  # a red flag, not a reason to drop
    excluded = by_episode(tmp_path / "out" / "excluded_episode_metadata.jsonl")
    assert set(excluded) == {ep("x", 2), ep("x", 3)}
    assert excluded[ep("x", 2)]["training_eligible"] is False
    assert excluded[ep("x", 2)]["training_exclusion_reasons"] == ["incorrect_result"]
    # seed: eligible, no reason added, just no trajectory row
    assert excluded[ep("x", 3)]["training_eligible"] is True and excluded[ep("x", 3)]["training_exclusion_reasons"] == []
    assert excluded[ep("x", 3)]["trajectory_sft_rows"] == 0
    assert {k: manifest[k] for k in (
        "accepted_episode_count", "accepted_case_count", "candidate_episode_count", "excluded_episode_count", "group_count",
        "selected_release_case_count", "rollout_selection", "excluded_reason_counts",
    )} == {
        "accepted_episode_count": 6, "accepted_case_count": 2, "candidate_episode_count": 8, "excluded_episode_count": 2,
        "group_count": 2, "selected_release_case_count": 6, "rollout_selection": "every_eligible_rollout",
        "excluded_reason_counts": {"incorrect_result": 1, "no_exportable_trajectory_sft": 1},
    }
    split_rows = [r["episode_id"] for s in ("train", "validation", "test") for r in read_jsonl(tmp_path / "out" / f"{s}.jsonl")]
    assert sorted(split_rows) == sorted(rows)
    assert sum(written[f"perception.{s}.jsonl"] for s in ("train", "validation", "test")) == 6  # one per accepted episode


def test_a_case_whose_rollouts_share_no_family_stays_in_one_split(log, tmp_path):
    # Case z's rollouts cite disjoint content (a; b), and z-r1 shares b with case v: the
    # seed would make {z-r0} and {z-r1, v-r0} two groups that may split case z. EviScene
    # joins rollouts of one case: one group {z-r0, z-r1, v-r0} whose id hashes only the
    # episodes and their real families. Case w, alone, keeps the seed's id.
    run = write_run_dir(tmp_path / "run", "run-a", [
        {"episode_id": ep("z", 0), "case_id": "z", "families": ["content:a"]},
        {"episode_id": ep("z", 1), "case_id": "z", "families": ["content:b", "domain:wikipedia.org"]},
        {"episode_id": ep("v", 0), "case_id": "v", "families": ["content:b"]},
        {"episode_id": ep("w", 0), "case_id": "w", "families": ["content:c"]},
    ])
    manifest, _ = export(log, tmp_path / "out", run)
    rows = by_episode(tmp_path / "out" / "episode_metadata.jsonl")
    joined = seed_group_id([ep("z", 0), ep("z", 1), ep("v", 0)], ["content:a", "content:b"])
    alone = seed_group_id([ep("w", 0)], ["content:c"])
    assert {e: (r["split"], r["split_group_id"]) for e, r in rows.items()} == {
        ep("z", 0): (seed_split(joined), joined), ep("z", 1): (seed_split(joined), joined),
        ep("v", 0): (seed_split(joined), joined), ep("w", 0): (seed_split(alone), alone),
    }
    assert manifest["group_count"] == 2


def test_one_rollout_per_case_prefers_fewer_red_flags_then_score_then_larger_episode_id(log, tmp_path):
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
    manifest, _ = export(log, tmp_path / "out", run, one_rollout_per_case=True)
    assert manifest["rollout_selection"] == "one_rollout_per_case"
    assert manifest["excluded_reason_counts"] == {"incorrect_result": 1, "lower_quality_rollout_for_case": 3}
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


def test_with_one_rollout_per_case_a_best_rollout_without_a_trajectory_gives_way_to_the_next_best(log, tmp_path):
    """The best rollout was chosen before the trajectory check, so a best rollout without a
    trajectory dropped its whole case: 0 accepted, the runner-up marked a lower-quality
    rollout. The best rollout that can be exported is kept (as frozen mode, where a rollout
    without a trajectory is ineligible, keeps it); the one without a trajectory is reported
    as derived mode reports it."""
    run = write_run_dir(tmp_path / "run", "run-a", [
        {"episode_id": ep("v", 0), "case_id": "v", "score": {"total": 2.0}, "trajectory": False},
        {"episode_id": ep("v", 1), "case_id": "v", "score": {"total": 1.0}},
        {"episode_id": ep("v", 2), "case_id": "v", "score": {"total": 0.5}},
    ])
    manifest, _ = export(log, tmp_path / "out", run, one_rollout_per_case=True)
    assert manifest["accepted_episode_count"] == 1 and manifest["candidate_episode_count"] == 3
    assert set(by_episode(tmp_path / "out" / "accepted_episodes.jsonl")) == {ep("v", 1)}
    excluded = by_episode(tmp_path / "out" / "excluded_episode_metadata.jsonl")
    assert excluded[ep("v", 2)]["training_exclusion_reasons"] == ["lower_quality_rollout_for_case"]
    assert excluded[ep("v", 0)]["training_eligible"] is True and excluded[ep("v", 0)]["trajectory_sft_rows"] == 0
    assert excluded[ep("v", 0)]["training_exclusion_reasons"] == []
    assert "trajectory_token_count_estimate" not in excluded[ep("v", 0)]
    # without the option every eligible rollout with a trajectory is kept, the other reported alike
    manifest, _ = export(log, tmp_path / "derived", run)
    assert set(by_episode(tmp_path / "derived" / "accepted_episodes.jsonl")) == {ep("v", 1), ep("v", 2)}
    assert by_episode(tmp_path / "derived" / "excluded_episode_metadata.jsonl")[ep("v", 0)] == excluded[ep("v", 0)]


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


def test_a_negative_token_estimate_rounds_down_as_python_does(log, tmp_path):
    """Seed 002's (estimate + 2) // 3 is Python's floor division: -4 -> -1, -3 -> -1, -2 -> 0."""
    run = write_run_dir(tmp_path / "run", "run-a", [
        {"episode_id": ep(f"n{-estimate}"), "case_id": f"n{-estimate}", "token_count_estimate": estimate} for estimate in (-4, -3, -2, 7)
    ])
    export(log, tmp_path / "out", run)
    rows = by_episode(tmp_path / "out" / "episode_metadata.jsonl")
    assert {episode: row["trajectory_approx_tokens"] for episode, row in rows.items()} == {
        ep("n4"): -1, ep("n3"): -1, ep("n2"): 0, ep("n-7"): 3}


def test_token_estimate_defaults_to_the_utf8_bytes_of_the_messages(log, tmp_path):
    run = write_run_dir(tmp_path / "run", "run-a", [{"episode_id": ep("p"), "case_id": "p", "padding": 300}])
    export(log, tmp_path / "out", run)
    row = read_jsonl(tmp_path / "out" / "episode_metadata.jsonl")[0]
    sft = [r for s in ("train", "validation", "test") for r in read_jsonl(tmp_path / "out" / f"{s}.jsonl")][0]
    expected = len(json.dumps(sft["messages"], separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    assert row["trajectory_token_count_estimate"] == expected
    assert row["trajectory_approx_tokens"] == (expected + 2) // 3 and row["tool_call_count"] == 1


def test_tool_call_count_defaults_to_the_assistant_tool_calls(log, tmp_path):
    """Without its own tool_call_count, a row counts the items of every message's tool_calls
    list: 2 + 1 here; null, an object and a missing key count nothing."""
    run = write_run_dir(tmp_path / "run", "run-a", [{"episode_id": ep("c"), "case_id": "c"}])
    row = read_jsonl(run / "trajectory_sft.jsonl")[0]
    call = row["messages"][2]["tool_calls"][0]
    row["messages"][2:2] = [
        {"role": "assistant", "content": [], "tool_calls": [call, {**call, "id": "call-2"}]},
        {"role": "assistant", "content": [], "tool_calls": None},
        {"role": "assistant", "content": [], "tool_calls": {"id": "not a list"}},
    ]
    (run / "trajectory_sft.jsonl").write_text(json.dumps(row) + "\n")
    export(log, tmp_path / "out", run)
    assert read_jsonl(tmp_path / "out" / "episode_metadata.jsonl")[0]["tool_call_count"] == 3


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


def test_export_concurrency_writes_the_same_bytes_and_is_recorded(log, tmp_path):
    run = write_run_dir(tmp_path / "run", "run-a", [
        {"episode_id": ep(f"c{i}", r), "case_id": f"c{i}", "families": [f"content:{i % 3}"]} for i in range(6) for r in range(2)
    ])
    one, _ = export(log, tmp_path / "one", run, fmt="parquet")
    four, written = export(log, tmp_path / "four", run, fmt="parquet", export_concurrency=4)
    assert (one["export_concurrency"], four["export_concurrency"]) == (1, 4)
    # every JSONL file has its Parquet copy, named in the manifest under the same key
    assert one["parquet_artifacts"] == {key: name[: -len(".jsonl")] + ".parquet" for key, name in one["artifacts"].items()}
    assert all(pq.read_table(tmp_path / "one" / name).num_rows == len(read_jsonl(tmp_path / "one" / one["artifacts"][key]))
               for key, name in one["parquet_artifacts"].items())
    assert "parquet_artifacts" not in export(log, tmp_path / "jsonl", run)[0]
    assert list(written) == list(export(log, tmp_path / "again", run)[1])  # files listed in one order whatever the threads
    names = sorted(p.name for p in (tmp_path / "one").iterdir() if p.name != "manifest.json")
    assert names == sorted(p.name for p in (tmp_path / "four").iterdir() if p.name != "manifest.json")
    for name in names:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "four" / name).read_bytes(), name


def test_training_prohibited_sources_contribute_nothing(log, tmp_path):
    run = write_run_dir(tmp_path / "run", "run-a", [{"episode_id": ep("d"), "case_id": "d"}], release_stage="development_subset")
    manifest, _ = export(log, tmp_path / "out", run)
    assert manifest["accepted_episode_count"] == 0
    assert read_jsonl(tmp_path / "out" / "excluded_episode_metadata.jsonl")[0]["training_exclusion_reasons"] == ["training_prohibited"]
    assert manifest["excluded_reason_counts"] == {"training_prohibited": 1} and manifest["allow_training_prohibited"] is False


def test_allow_training_prohibited_exports_them_and_says_so(log, tmp_path):
    run = write_run_dir(tmp_path / "run", "run-a", [{"episode_id": ep("d"), "case_id": "d"}], release_stage="development_subset")
    manifest, _ = export(log, tmp_path / "out", run, allow_training_prohibited=True)
    rows = read_jsonl(tmp_path / "out" / "episode_metadata.jsonl")
    assert [(r["episode_id"], r["training_eligible"], r["training_exclusion_reasons"]) for r in rows] == [(ep("d"), True, [])]
    assert manifest["accepted_episode_count"] == 1 and manifest["allow_training_prohibited"] is True
    # `why` says the episode is not SFT eligible (training_prohibited): the accepting export says why it took it
    assert describe(explain_dataset_decision(log, ep("d")))[-1] == (
        "  the export ran with --allow-training-prohibited (it takes the episodes of training-prohibited sources too)")


@pytest.mark.parametrize(
    "options, message",
    [
        ({"train_ratio": 0.0}, "split ratios must be non-negative"),
        ({"train_ratio": 0.9, "validation_ratio": 0.1}, "train_ratio + validation_ratio must be below 1"),
        ({"short_max_tokens": 0}, "short_max_tokens must be positive"),
        ({"minimum_accepted_cases": -1}, "minimum_accepted_cases must be non-negative"),
        ({"export_concurrency": 0}, "export_concurrency must be at least 1"),
        ({"validation_ratio": float("inf")}, "train_ratio + validation_ratio must be below 1"),
    ],
)
def test_bad_options_fail_with_the_seed_messages(log, tmp_path, options, message):
    run = write_run_dir(tmp_path / "run", "run-a", [{"episode_id": ep("a"), "case_id": "a"}])
    with pytest.raises(DatasetExportError, match=re.escape(message)):
        export(log, tmp_path / "out", run, **options)


def test_a_run_the_log_does_not_hold_is_refused_with_the_closest_native_or_imported_run(log, tmp_path):
    export(log, tmp_path / "first", write_run_dir(tmp_path / "run", "run-a", [{"episode_id": ep("a"), "case_id": "a"}]))
    listing = f"`eviscene --db {log.path} runs` lists native runs, `eviscene --db {log.path} import` adds run directories"
    # one character off is close however short the id (difflib's ratio for `r2` and `r1` is 0.5)
    export(log, tmp_path / "second", write_run_dir(tmp_path / "run-r1", "r1", [{"episode_id": ep("a"), "case_id": "a"}]))
    for run, close in [("run-b", " (did you mean 'run-a'?)"), ("r2", " (did you mean 'r1'?)"), ("r", " (did you mean 'r1'?)"),
                       ("zzz", "")]:
        with pytest.raises(DatasetExportError) as refused:
            export_dataset(log, ExportOptions(out_dir=tmp_path / "out", runs=[run]))
        assert str(refused.value) == f"no run {run!r} in {log.path}{close}; {listing}"


@pytest.mark.parametrize(("flag", "value", "range_"), [
    ("--short-max-tokens", "0", "x>=1"), ("--minimum-accepted-cases", "-1", "x>=0"),
    ("--train-ratio", "0", "0<x<1"), ("--train-ratio", "1.5", "0<x<1"), ("--validation-ratio", "-0.1", "0<=x<1"),
    ("--validation-ratio", "1", "0<=x<1"),
])
def test_a_number_out_of_range_is_refused_by_its_flag(log, tmp_path, flag, value, range_):
    """These were refused after the run's import in the library's words (`short_max_tokens must
    be positive`), and `--help` gave their range as -9223372036854775808<=x<=9223372036854775807."""
    from click.testing import CliRunner

    from eviscene.cli.main import cli

    result = CliRunner().invoke(cli, ["--db", str(log.path), "dataset", "export", "--run", "r", "--out", str(tmp_path / "o"), flag, value])
    assert result.exit_code == 2 and f"Invalid value for '{flag}': " in result.output and f"is not in the range {range_}." in result.output
    helped = CliRunner().invoke(cli, ["dataset", "export", "--help"], terminal_width=200)
    assert "9223372036854775807" not in helped.output and f"{range_}]" in helped.output


def test_the_output_directory_must_be_new_or_empty(log, tmp_path):
    run = write_run_dir(tmp_path / "run", "run-a", [{"episode_id": ep("a"), "case_id": "a"}])
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "x").write_text("x")
    with pytest.raises(DatasetExportError, match="must be new or empty"):
        export(log, tmp_path / "out", run)


def test_an_export_from_a_read_only_parquet_history_is_refused_before_it_writes_a_file(log, tmp_path):
    """The export is recorded in the log it reads: from a `log export-parquet` folder it wrote
    every file, then failed to record them (exit 2), leaving a dataset no log accounts for."""
    from click.testing import CliRunner

    from eviscene.cli.main import cli

    run = write_run_dir(tmp_path / "run", "run-a", [{"episode_id": ep("a"), "case_id": "a"}])
    export(log, tmp_path / "first", run)
    history = tmp_path / "history"
    assert CliRunner().invoke(cli, ["--db", str(log.path), "log", "export-parquet", str(history)]).exit_code == 0
    result = CliRunner().invoke(cli, ["--db", str(history), "dataset", "export", "--run-dir", str(run), "--out", str(tmp_path / "out")])
    assert (result.exit_code, result.stderr) == (2, f"Error: {history} is a folder (a `log export-parquet` export is read only); name a .duckdb log\n")
    assert not (tmp_path / "out").exists()


def test_an_episode_in_two_sources_is_an_error(log, tmp_path):
    one = write_run_dir(tmp_path / "one", "run-a", [{"episode_id": ep("a"), "case_id": "a"}])
    two = write_run_dir(tmp_path / "two", "run-b", [{"episode_id": ep("a"), "case_id": "a", "score": {"total": 2.0},
                                                     "perception": False}])
    with pytest.raises(DatasetExportError, match="^duplicate episode across source runs: a--r000$"):
        export(log, tmp_path / "out", one, two)


def test_jsonl_with_crlf_and_lines_of_python_white_space_exports_as_its_plain_twin(tmp_path):
    """The import's strict reader skips a line of only white space to Python (a form feed, a
    no-break space) and CRLF ends; the export's views read the stored files
    the same way (they failed the JSON cast before)."""
    episodes = [{"episode_id": ep(f"c{i}", r), "case_id": f"c{i}", "families": [f"content:{i % 2}"]} for i in range(4) for r in range(2)]
    run = write_run_dir(tmp_path / "run", "run-a", episodes)
    export(EventLog(tmp_path / "plain.duckdb"), tmp_path / "plain", run)
    for path in run.glob("*.jsonl"):  # the same files, at the same paths, spaced out
        lines = path.read_text(encoding="utf-8").splitlines()
        spaced = [part for line in lines for part in (line, "\x0c", "\u00a0 \t")]
        path.write_bytes("".join(f"{line}\r\n" for line in spaced).encode("utf-8"))
    export(EventLog(tmp_path / "odd.duckdb"), tmp_path / "odd", run)
    written = sorted(p.name for p in (tmp_path / "plain").glob("*.jsonl"))
    assert "train.jsonl" in written and "episode_metadata.jsonl" in written
    for name in written:
        assert (tmp_path / "odd" / name).read_bytes() == (tmp_path / "plain" / name).read_bytes(), name


def test_the_decision_policy_version_is_each_traces_own_never_the_run_manifests(tmp_path):
    """Seed 002 reads decision_policy_version from each trace (top level, else its state) and
    never from run_manifest.json: traces without it export '' and dataset v2, though the
    manifest's agent block says unified-react-v1; in the state alone it counts."""
    episodes = [{"episode_id": ep(f"c{i}"), "case_id": f"c{i}", "families": [f"content:{i}"]} for i in range(3)]
    run = write_run_dir(tmp_path / "run", "run-a", episodes)
    assert json.loads((run / "run_manifest.json").read_text())["agent"] == {"decision_policy_version": "unified-react-v1"}
    traces = sorted((run / "traces").glob("*.json"))
    for path in traces:
        trace = json.loads(path.read_text())
        del trace["decision_policy_version"]
        path.write_text(json.dumps(trace), encoding="utf-8")
    manifest, _ = export(EventLog(tmp_path / "without.duckdb"), tmp_path / "without", run)
    assert (manifest["decision_policy_version"], manifest["dataset_version"]) == ("", "ifv-trajectory-sft-dataset-v2")
    assert {row["dataset_version"] for row in read_jsonl(tmp_path / "without" / "train.jsonl")} == {"ifv-trajectory-sft-dataset-v2"}
    assert {row["decision_policy_version"] for row in read_jsonl(tmp_path / "without" / "episode_metadata.jsonl")} == {""}

    for path in traces:
        trace = json.loads(path.read_text())
        trace["state"]["decision_policy_version"] = "unified-react-v1"
        path.write_text(json.dumps(trace), encoding="utf-8")
    manifest, _ = export(EventLog(tmp_path / "in-state.duckdb"), tmp_path / "in-state", run)
    assert (manifest["decision_policy_version"], manifest["dataset_version"]) == ("unified-react-v1", "ifv-trajectory-sft-dataset-v3")


def test_odd_score_values_are_read_as_the_seeds_python_reads_them(log, tmp_path):
    # seed 002: teacher_score = float(score["total"] or 0.0) and the reasons are
    # [str(r) for r in score["training_exclusion_reasons"] or []]: a string iterates
    # its characters, an object its keys; red flags are the non-blank non-fatal ones
    run = write_run_dir(tmp_path / "run", "run-a", [
        {"episode_id": ep("t"), "case_id": "t", "score": {"total": True}},
        {"episode_id": ep("u"), "case_id": "u", "score": {"total": "\u0663\u00a0"}},
        {"episode_id": ep("s"), "case_id": "s", "score": {"training_exclusion_reasons": "é\n"}},
        {"episode_id": ep("o"), "case_id": "o", "score": {"training_exclusion_reasons": {"b": 1, "incorrect_result": 2}}},
    ])
    export(log, tmp_path / "out", run)
    rows = {**by_episode(tmp_path / "out" / "episode_metadata.jsonl"),
            **by_episode(tmp_path / "out" / "excluded_episode_metadata.jsonl")}
    assert rows[ep("t")]["teacher_score"] == 1.0
    assert rows[ep("u")]["teacher_score"] == 3.0
    assert (rows[ep("s")]["training_exclusion_reasons"], rows[ep("s")]["deterministic_red_flags"]) == (["é", "\n"], ["é"])
    o = rows[ep("o")]
    assert (o["training_exclusion_reasons"], o["deterministic_fatal_reasons"], o["deterministic_red_flags"]) == (
        ["b", "incorrect_result"], ["incorrect_result"], ["b"])
