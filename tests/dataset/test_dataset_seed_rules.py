"""Seed 002's edge rules, each expectation worked out by hand from the seed's code: which
error it raises first, which score rows it keys, and what short_sft_case_count counts."""

from __future__ import annotations

import json

import pytest
from dataset_builders import (
    read_jsonl,
    write_accepted_release,
    write_case_split,
    write_eligibility,
    write_jsonl,
    write_run_dir,
)

from eviscene.exports.dataset import DatasetExportError, ExportOptions, export_dataset


def write_semantic(folder, episode_id, case_id):
    """A semantic-reward artifact pinning a trace sha256 no trace has: an export error."""
    folder.mkdir(exist_ok=True)
    (folder / f"{episode_id}.semantic_reward.json").write_text(json.dumps({
        "artifact_id": f"sem-{episode_id}", "case_id": case_id, "rollout": {"episode_id": episode_id},
        "source_trace": {"sha256": "0" * 64}, "gates": {"semantic_audit_pass": True},
    }), encoding="utf-8")


def frozen_with_mismatches(log, tmp_path, run_dirs, episodes):
    """A frozen export whose every episode's semantic artifact mismatches its trace."""
    split = write_case_split(tmp_path / "split.jsonl", {case: ("train", "g") for _, case in episodes})
    for episode_id, case_id in episodes:
        write_semantic(tmp_path / "semantic", episode_id, case_id)
    return export_dataset(log, ExportOptions(
        out_dir=tmp_path / "out", run_dirs=run_dirs, case_split=split, eligibility_dir=tmp_path / "elig",
        semantic_reward_dir=tmp_path / "semantic", minimum_accepted_cases=0,
    ))


def test_the_first_semantic_mismatch_is_the_first_trace_file_not_the_smallest_episode_id(log, tmp_path):
    # seed 002 checks each trace in `sorted((run_dir / "traces").glob("*.json"))` and raises at
    # the first mismatch: trace 1.json (episode b--r000) comes before 2.json (a--r000)
    run = write_run_dir(tmp_path / "run", "run-a", [
        {"episode_id": "a--r000", "case_id": "a"}, {"episode_id": "b--r000", "case_id": "b"},
    ])
    write_eligibility(tmp_path / "elig", run, [("a--r000", "a"), ("b--r000", "b")])
    (run / "traces" / "b--r000.json").rename(run / "traces" / "1.json")
    (run / "traces" / "a--r000.json").rename(run / "traces" / "2.json")
    with pytest.raises(DatasetExportError, match=r"^semantic diagnostic artifact does not match trace: b--r000$"):
        frozen_with_mismatches(log, tmp_path, [run], [("a--r000", "a"), ("b--r000", "b")])


def test_the_first_semantic_mismatch_is_in_the_first_run_directory_named(log, tmp_path):
    # seed 002 reads the run directories in the order given: run one's b--r000 fails first
    one = write_run_dir(tmp_path / "one", "run-one", [{"episode_id": "b--r000", "case_id": "b"}])
    two = write_run_dir(tmp_path / "two", "run-two", [{"episode_id": "a--r000", "case_id": "a"}])
    write_eligibility(tmp_path / "elig", one, [("b--r000", "b")])
    write_eligibility(tmp_path / "elig", two, [("a--r000", "a")])
    with pytest.raises(DatasetExportError, match=r"^semantic diagnostic artifact does not match trace: b--r000$"):
        frozen_with_mismatches(log, tmp_path, [one, two], [("a--r000", "a"), ("b--r000", "b")])


def test_a_mismatch_in_an_earlier_run_comes_before_a_perception_duplicate_in_a_later_one(log, tmp_path):
    # seed 002 reads one run directory entirely (its perception rows, then its traces) before
    # the next: run one's trace a--r000 fails before run two's perception file repeats a--r000
    one = write_run_dir(tmp_path / "one", "run-one", [{"episode_id": "a--r000", "case_id": "a"}])
    two = write_run_dir(tmp_path / "two", "run-two", [{"episode_id": "b--r000", "case_id": "b"}])
    repeated = read_jsonl(one / "perception_trajectories.jsonl")
    write_jsonl(two / "perception_trajectories.jsonl", read_jsonl(two / "perception_trajectories.jsonl") + repeated)
    write_eligibility(tmp_path / "elig", one, [("a--r000", "a")])
    write_eligibility(tmp_path / "elig", two, [("b--r000", "b")])
    with pytest.raises(DatasetExportError, match=r"^semantic diagnostic artifact does not match trace: a--r000$"):
        frozen_with_mismatches(log, tmp_path, [one, two], [("a--r000", "a")])


def test_an_episode_in_two_sources_fails_where_seed_002_would_meet_its_second_trace(log, tmp_path):
    # seed 002 has no such error (it files both traces); EviScene raises it at the second
    # trace, so what the seed raises before that comes first. Run two's perception file
    # repeats a--r000 (read before its traces): the seed's perception error. Without that,
    # run one's mismatching c--r000 comes before run two's a--r000 trace.
    one = write_run_dir(tmp_path / "one", "run-one", [{"episode_id": "a--r000", "case_id": "a"}])
    two = write_run_dir(tmp_path / "two", "run-two", [{"episode_id": "a--r000", "case_id": "a"}])
    with pytest.raises(DatasetExportError, match=r"^duplicate perception episode across source runs: a--r000$"):
        export_dataset(log, ExportOptions(out_dir=tmp_path / "out", run_dirs=[one, two]))
    one = write_run_dir(tmp_path / "one-b", "run-one-b", [
        {"episode_id": "a--r000", "case_id": "a"}, {"episode_id": "c--r000", "case_id": "c"},
    ])
    two = write_run_dir(tmp_path / "two-b", "run-two-b", [{"episode_id": "a--r000", "case_id": "a", "perception": False}])
    write_eligibility(tmp_path / "elig", one, [("a--r000", "a"), ("c--r000", "c")])
    write_eligibility(tmp_path / "elig", two, [("a--r000", "a")])
    with pytest.raises(DatasetExportError, match=r"^semantic diagnostic artifact does not match trace: c--r000$"):
        frozen_with_mismatches(log, tmp_path, [one, two], [("c--r000", "c")])


def test_the_first_perception_duplicate_is_the_first_repeated_line(log, tmp_path):
    # run two's perception file repeats q--r000 on line 2 and p--r000 on line 3: seed 002
    # raises at line 2
    one = write_run_dir(tmp_path / "one", "run-one", [
        {"episode_id": "p--r000", "case_id": "p"}, {"episode_id": "q--r000", "case_id": "q"},
    ])
    two = write_run_dir(tmp_path / "two", "run-two", [{"episode_id": "r--r000", "case_id": "r"}])
    first = {row["episode_id"]: row for row in read_jsonl(one / "perception_trajectories.jsonl")}
    write_jsonl(two / "perception_trajectories.jsonl",
                read_jsonl(two / "perception_trajectories.jsonl") + [first["q--r000"], first["p--r000"]])
    with pytest.raises(DatasetExportError, match=r"^duplicate perception episode across source runs: q--r000$"):
        export_dataset(log, ExportOptions(out_dir=tmp_path / "out", run_dirs=[one, two]))


def release_with_action_only(tmp_path):
    """An accepted release: c--r000 for reasoning SFT, action-only a--r000 in trace file 2.json
    and b--r000 in 1.json (selected rows pin the traces' bytes, not their names)."""
    release = write_accepted_release(tmp_path / "release", [
        {"episode_id": "a--r000", "case_id": "a"}, {"episode_id": "b--r000", "case_id": "b"},
        {"episode_id": "c--r000", "case_id": "c"},
    ], action_only=("a--r000", "b--r000"))
    (release / "traces" / "b--r000.json").rename(release / "traces" / "1.json")
    (release / "traces" / "a--r000.json").rename(release / "traces" / "2.json")
    return release


def export_with_split(log, tmp_path, splits):
    """A frozen export of release_with_action_only under a fixed split of `splits`."""
    split = write_case_split(tmp_path / "split.jsonl", splits)
    return export_dataset(log, ExportOptions(
        out_dir=tmp_path / "out", accepted_release=release_with_action_only(tmp_path), case_split=split,
        minimum_accepted_cases=0,
    ))


def test_the_first_action_only_case_without_a_split_is_the_first_trace_file(log, tmp_path):
    # seed 002's last pass goes over action_only_by_episode, filled in trace file order:
    # b--r000 (1.json), whose case b the fixed split lacks, fails before a--r000 (2.json)
    with pytest.raises(DatasetExportError, match=r"^fixed case split lacks action-only perception case: b$"):
        export_with_split(log, tmp_path, {"c": ("train", "g")})


def test_an_accepted_episodes_padded_split_fails_before_any_action_only_episode(log, tmp_path):
    # seed 002 files the accepted episodes (c--r000 under " train": a KeyError) before its
    # pass over the action-only ones (cases a and b are missing from the split)
    with pytest.raises(DatasetExportError, match=r"^fixed case split row of case c names split \" train\""):
        export_with_split(log, tmp_path, {"c": (" train", "g")})


def test_a_score_row_whose_key_is_blank_scores_no_episode(log, tmp_path):
    # seed 002: score_key = str(row.get("episode_id") or row.get("case_id", "")).strip(),
    # kept only `if score_key`. The trace whose image_id is " " has episode id "" (stripped),
    # so the rows keyed "" (empty or blank ids, a missing case_id) never score it: it is
    # excluded as missing_training_quality_score. A null case_id is the key "None" (str(None)).
    run = write_run_dir(tmp_path / "run", "run-a", [
        {"episode_id": "blank", "case_id": "blank", "score": None},
        {"episode_id": "None", "case_id": "none-case", "score": None},
    ])
    trace = json.loads((run / "traces" / "blank.json").read_text())
    trace["image_id"] = " "
    (run / "traces" / "blank.json").write_text(json.dumps(trace), encoding="utf-8")
    for name in ("trajectory_sft.jsonl", "perception_trajectories.jsonl"):  # the import refuses rows without an id
        write_jsonl(run / name, [r for r in read_jsonl(run / name) if r["episode_id"] != "blank"])
    score = {"total": 0.9, "training_eligible": True, "training_exclusion_reasons": []}
    write_jsonl(run / "trajectory_scores.jsonl", [
        {"episode_id": "", "case_id": "", **score},
        {"episode_id": " ", "case_id": "blank", **score},
        {"episode_id": None, **score},
        {"episode_id": "", "case_id": None, **score},
    ])
    manifest, _ = export_dataset(log, ExportOptions(out_dir=tmp_path / "out", run_dirs=[run]))
    excluded = {row["episode_id"]: row for row in read_jsonl(tmp_path / "out" / "excluded_episode_metadata.jsonl")}
    assert set(excluded) == {""}
    assert {k: excluded[""][k] for k in (
        "case_id", "teacher_score", "training_eligible", "training_exclusion_reasons", "deterministic_fatal_reasons",
    )} == {
        "case_id": "blank", "teacher_score": 0.0, "training_eligible": False,
        "training_exclusion_reasons": ["missing_training_quality_score"],
        "deterministic_fatal_reasons": ["missing_training_quality_score"],
    }
    accepted = {row["episode_id"]: row for row in read_jsonl(tmp_path / "out" / "episode_metadata.jsonl")}
    assert set(accepted) == {"None"} and accepted["None"]["teacher_score"] == 0.9
    assert (manifest["candidate_episode_count"], manifest["accepted_episode_count"]) == (2, 1)


def test_a_score_row_scores_a_trace_of_its_own_or_a_later_run_directory_never_an_earlier_one(log, tmp_path):
    # seed 002 fills one score_by_episode across the run directories, loading each one's
    # trajectory_scores.jsonl before reading its traces. Run one scores b--r000 (0.3), whose
    # trace is in run two, which has no row for it: read one, two, b--r000 takes one's row.
    # Run two also scores a--r000 (0.7), whose trace is in run one: read one, two, a--r000 is
    # read before two's rows load, so it has no score. Read two, one: each is the reverse.
    one = write_run_dir(tmp_path / "one", "run-one", [{"episode_id": "a--r000", "case_id": "a", "score": None}])
    two = write_run_dir(tmp_path / "two", "run-two", [{"episode_id": "b--r000", "case_id": "b", "score": None}])
    score = {"training_eligible": True, "training_exclusion_reasons": []}
    write_jsonl(one / "trajectory_scores.jsonl", [{"episode_id": "b--r000", "case_id": "b", "total": 0.3, **score}])
    write_jsonl(two / "trajectory_scores.jsonl", [{"episode_id": "a--r000", "case_id": "a", "total": 0.7, **score}])

    def scores(run_dirs, out):
        export_dataset(log, ExportOptions(out_dir=tmp_path / out, run_dirs=run_dirs))
        accepted = {r["episode_id"]: r["teacher_score"] for r in read_jsonl(tmp_path / out / "episode_metadata.jsonl")}
        excluded = {r["episode_id"]: r["training_exclusion_reasons"] for r in read_jsonl(tmp_path / out / "excluded_episode_metadata.jsonl")}
        return accepted, excluded

    assert scores([one, two], "forward") == ({"b--r000": 0.3}, {"a--r000": ["missing_training_quality_score"]})
    assert scores([two, one], "reverse") == ({"a--r000": 0.7}, {"b--r000": ["missing_training_quality_score"]})


def test_an_empty_gate_folder_is_read_as_no_artifacts(log, tmp_path):
    # seed 002's _load_gate_artifacts of a folder holding none is {}: nothing mismatches, the
    # export goes on (`eviscene import --kind gate_artifacts` of it alone is refused)
    run = write_run_dir(tmp_path / "run", "run-a", [{"episode_id": "a--r000", "case_id": "a"}])
    write_eligibility(tmp_path / "elig", run, [("a--r000", "a")])
    (tmp_path / "semantic").mkdir()
    manifest, _ = export_dataset(log, ExportOptions(
        out_dir=tmp_path / "out", run_dirs=[run], case_split=write_case_split(tmp_path / "split.jsonl", {"a": ("train", "g")}),
        eligibility_dir=tmp_path / "elig", semantic_reward_dir=tmp_path / "semantic", minimum_accepted_cases=0,
    ))
    assert manifest["accepted_episode_count"] == 1


def test_short_sft_case_count_counts_the_sft_rows_case_ids(log, tmp_path):
    # seed 002: len({str(row["case_id"]) for rows in split_rows.values() for row in rows}),
    # the rows being the SFT trajectories (their own case_id), while accepted_case_count
    # counts the traces' case ids. Here the traces name cases a, b, c; their SFT rows name x,
    # x and c, and c's is too long for the short budget (long holdout): one short case, x.
    run = write_run_dir(tmp_path / "run", "run-a", [
        {"episode_id": "a--r000", "case_id": "a"},
        {"episode_id": "b--r000", "case_id": "b"},
        {"episode_id": "c--r000", "case_id": "c", "token_count_estimate": 3 * 1000 + 1},
    ])
    rows = read_jsonl(run / "trajectory_sft.jsonl")
    write_jsonl(run / "trajectory_sft.jsonl", [{**r, "case_id": "x"} if r["case_id"] in ("a", "b") else r for r in rows])
    manifest, _ = export_dataset(log, ExportOptions(out_dir=tmp_path / "out", run_dirs=[run], short_max_tokens=1000))
    assert {k: manifest[k] for k in ("accepted_case_count", "short_sft_case_count", "episode_count", "long_holdout_episode_count")} == {
        "accepted_case_count": 3, "short_sft_case_count": 1, "episode_count": 2, "long_holdout_episode_count": 1,
    }


def perception_rows(out):
    return [row for split in ("train", "validation", "test") for row in read_jsonl(out / f"perception.{split}.jsonl")]


def test_a_perception_example_is_keyed_by_its_episode_id_as_written(log, tmp_path):
    """Seed 002 keys `perception_by_episode[example.episode_id]` as the row writes it, and looks
    it up by the trace's stripped id: ` a--r000 ` is no example of a--r000, and `a--r000 ` then
    `a--r000` are two examples, not a duplicate (both were read stripped: a--r000 exported with
    the first, then refused as a duplicate)."""
    run = write_run_dir(tmp_path / "run", "run-one", [{"episode_id": "a--r000", "case_id": "a", "perception": False},
                                                      {"episode_id": "b--r000", "case_id": "b", "perception": False}])

    def example(episode_id, ocr):
        return {"episode_id": episode_id, "case_id": episode_id[0], "images": ["/images/x.jpg"], "perception": {"ocr_text": ocr}}

    write_jsonl(run / "perception_trajectories.jsonl", [example(" a--r000 ", "padded"), example("b--r000", "b")])
    manifest = export_dataset(log, ExportOptions(out_dir=tmp_path / "out", run_dirs=[run]))[0]
    assert [(row["episode_id"], row["perception"]) for row in perception_rows(tmp_path / "out")] == [("b--r000", {"ocr_text": "b"})]
    assert sum(manifest["perception_example_counts"].values()) == 1
    again = write_run_dir(tmp_path / "again", "run-two", [{"episode_id": "a--r000", "case_id": "a", "perception": False}])
    write_jsonl(again / "perception_trajectories.jsonl", [example("a--r000 ", "padded"), example("a--r000", "as written")])
    export_dataset(log, ExportOptions(out_dir=tmp_path / "out-again", run_dirs=[again]))
    assert [(row["episode_id"], row["perception"]) for row in perception_rows(tmp_path / "out-again")] == [
        ("a--r000", {"ocr_text": "as written"})]
