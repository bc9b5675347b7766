"""Frozen exports: fixed case splits, structured eligibility gates, accepted releases."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from dataset_builders import (
    file_sha,
    read_jsonl,
    write_accepted_release,
    write_case_split,
    write_eligibility,
    write_jsonl,
    write_run_dir,
)

from eviscene.exports.dataset import DatasetExportError, ExportOptions, export_dataset
from eviscene.imports import ArtifactError


def frozen(log, tmp_path, run, split, eligibility, **options):
    options.setdefault("minimum_accepted_cases", 0)
    return export_dataset(log, ExportOptions(
        out_dir=tmp_path / "out", run_dirs=[run], case_split=split, eligibility_dir=eligibility, **options,
    ))


def by_episode(path):
    return {row["episode_id"]: row for row in read_jsonl(path)}


def test_fixed_split_and_group_ids_come_from_the_case_split(log, tmp_path):
    run = write_run_dir(tmp_path / "run", "run-a", [
        {"episode_id": "a--r000", "case_id": "a", "families": ["content:x"]},
        {"episode_id": "b--r000", "case_id": "b", "families": ["content:x"]},
        {"episode_id": "c--r000", "case_id": "c"},
    ])
    split = write_case_split(tmp_path / "split.jsonl", {"a": ("train", "g1"), "b": ("train", "g1"), "c": ("validation", "g2")})
    eligibility = write_eligibility(tmp_path / "elig", run, [("a--r000", "a"), ("b--r000", "b"), ("c--r000", "c")])
    manifest, _ = frozen(log, tmp_path, run, split, eligibility)
    rows = by_episode(tmp_path / "out" / "episode_metadata.jsonl")
    assert {e: (r["split"], r["split_group_id"]) for e, r in rows.items()} == {
        "a--r000": ("train", "g1"), "b--r000": ("train", "g1"), "c--r000": ("validation", "g2"),
    }
    assert rows["a--r000"]["sft_eligibility_artifact_id"] == "elig-a--r000" and rows["a--r000"]["structured_eligibility_pass"] is True
    assert manifest["split_mode"] == "frozen_teacher_sft" and manifest["split_ratios"] is None
    assert manifest["frozen_inputs"]["case_split"] == {"path": str(split), "sha256": file_sha(split)}
    assert manifest["group_count"] == 2


def test_a_fixed_split_that_separates_a_source_family_group_fails(log, tmp_path):
    run = write_run_dir(tmp_path / "run", "run-a", [
        {"episode_id": "a--r000", "case_id": "a", "families": ["content:shared"]},
        {"episode_id": "b--r000", "case_id": "b", "families": ["content:shared"]},
    ])
    split = write_case_split(tmp_path / "split.jsonl", {"a": ("train", "g1"), "b": ("validation", "g2")})
    eligibility = write_eligibility(tmp_path / "elig", run, [("a--r000", "a"), ("b--r000", "b")])
    with pytest.raises(DatasetExportError) as refused:
        frozen(log, tmp_path, run, split, eligibility, require_all_validation_cases=False)
    assert str(refused.value) == "fixed case split separates one source-family group: train, validation (cases a, b share content:shared)"


def test_a_separated_group_names_only_the_families_its_splits_share(log, tmp_path):
    """a and b (train) share content:ab, b and c (validation) content:bc, c alone cites
    content:c: only content:bc crosses the split, and only b and c share it."""
    run = write_run_dir(tmp_path / "run", "run-a", [
        {"episode_id": "a--r000", "case_id": "a", "families": ["content:ab"]},
        {"episode_id": "b--r000", "case_id": "b", "families": ["content:ab", "content:bc"]},
        {"episode_id": "c--r000", "case_id": "c", "families": ["content:bc", "content:c"]},
    ])
    split = write_case_split(tmp_path / "split.jsonl", {"a": ("train", "g1"), "b": ("train", "g1"), "c": ("validation", "g2")})
    eligibility = write_eligibility(tmp_path / "elig", run, [("a--r000", "a"), ("b--r000", "b"), ("c--r000", "c")])
    with pytest.raises(DatasetExportError) as refused:
        frozen(log, tmp_path, run, split, eligibility, require_all_validation_cases=False)
    assert str(refused.value) == "fixed case split separates one source-family group: train, validation (cases b, c share content:bc)"


def test_frozen_mode_needs_every_teacher_case_in_the_split(log, tmp_path):
    run = write_run_dir(tmp_path / "run", "run-a", [{"episode_id": "a--r000", "case_id": "a"}, {"episode_id": "b--r000", "case_id": "b"}])
    split = write_case_split(tmp_path / "split.jsonl", {"a": ("train", "g1")})
    eligibility = write_eligibility(tmp_path / "elig", run, [("a--r000", "a"), ("b--r000", "b")])
    with pytest.raises(DatasetExportError, match="fixed case split lacks teacher cases: b"):
        frozen(log, tmp_path, run, split, eligibility)


def test_frozen_mode_needs_enough_cases_and_every_validation_case(log, tmp_path):
    run = write_run_dir(tmp_path / "run", "run-a", [
        {"episode_id": "a--r000", "case_id": "a"},
        {"episode_id": "v--r000", "case_id": "v", "score": {"training_eligible": False, "training_exclusion_reasons": ["incorrect_result"]}},
    ])
    split = write_case_split(tmp_path / "split.jsonl", {"a": ("train", "g1"), "v": ("validation", "g2")})
    eligibility = write_eligibility(tmp_path / "elig", run, [("a--r000", "a"), ("v--r000", "v")])
    with pytest.raises(DatasetExportError, match=re.escape("frozen SFT export accepted too few cases: 1 < 40")):
        frozen(log, tmp_path, run, split, eligibility, minimum_accepted_cases=None)
    with pytest.raises(DatasetExportError, match="frozen SFT export lacks accepted validation cases: v"):
        frozen(log, tmp_path, run, split, eligibility)
    manifest, _ = frozen(log, tmp_path, run, split, eligibility, require_all_validation_cases=False)
    excluded = by_episode(tmp_path / "out" / "excluded_episode_metadata.jsonl")
    assert excluded["v--r000"]["training_exclusion_reasons"] == ["incorrect_result", "incorrect_result"]
    assert manifest["accepted_case_count"] == 1


def test_too_few_cases_of_a_release_that_prohibits_training_says_why(log, tmp_path):
    """Every candidate of a development_subset release is excluded as training_prohibited: the
    seed's "accepted too few cases: 0 < 40" said nothing of why, nor of the flag that lifts it."""
    run = write_run_dir(tmp_path / "run", "run-a", [{"episode_id": "a--r000", "case_id": "a"}, {"episode_id": "b--r000", "case_id": "b"}],
                        release_stage="development_subset")
    split = write_case_split(tmp_path / "split.jsonl", {"a": ("train", "g1"), "b": ("train", "g2")})
    eligibility = write_eligibility(tmp_path / "elig", run, [("a--r000", "a"), ("b--r000", "b")])
    with pytest.raises(DatasetExportError, match=re.escape(
            "frozen SFT export accepted too few cases: 0 < 40 (2 more case(s) excluded only as training_prohibited: "
            "--allow-training-prohibited lifts that, recorded in the manifest)")):
        frozen(log, tmp_path, run, split, eligibility, minimum_accepted_cases=None)
    # a case its gate refuses as well is not one the flag would add
    failing = write_run_dir(tmp_path / "run-b", "run-b", [
        {"episode_id": "a--r000", "case_id": "a"},
        {"episode_id": "b--r000", "case_id": "b", "score": {"training_eligible": False, "training_exclusion_reasons": ["incorrect_result"]}},
    ], release_stage="development_subset")
    eligibility = write_eligibility(tmp_path / "elig-b", failing, [("a--r000", "a"), ("b--r000", "b")])
    with pytest.raises(DatasetExportError, match=re.escape("0 < 40 (1 more case(s) excluded only as training_prohibited: ")):
        frozen(log, tmp_path, failing, split, eligibility, minimum_accepted_cases=None)


def test_structured_gate_failures_exclude_with_their_reasons(log, tmp_path):
    run = write_run_dir(tmp_path / "run", "run-a", [
        {"episode_id": "a--r000", "case_id": "a"},
        {"episode_id": "b--r000", "case_id": "b"},  # gate artifact says not eligible
        {"episode_id": "c--r000", "case_id": "c"},  # no gate artifact at all
    ])
    split = write_case_split(tmp_path / "split.jsonl", {"a": ("train", "g1"), "b": ("train", "g2"), "c": ("train", "g3")})
    eligibility = write_eligibility(tmp_path / "elig", run, [("a--r000", "a")])
    write_eligibility(eligibility, run, [("b--r000", "b")], passing=False)
    frozen(log, tmp_path, run, split, eligibility)
    excluded = by_episode(tmp_path / "out" / "excluded_episode_metadata.jsonl")
    assert excluded["b--r000"]["training_exclusion_reasons"] == ["structured_teacher_gate_failed"]
    assert excluded["b--r000"]["structured_eligibility_pass"] is False
    assert excluded["c--r000"]["training_exclusion_reasons"] == ["structured_teacher_gate_failed"]
    assert excluded["c--r000"]["sft_eligibility_artifact_id"] is None
    assert set(by_episode(tmp_path / "out" / "accepted_episodes.jsonl")) == {"a--r000"}


def test_a_trace_edited_after_its_gate_fails_the_structured_gate(log, tmp_path):
    run, split, eligibility = one_case_frozen(tmp_path)
    trace = run / "traces" / "a--r000.json"
    trace.write_text(trace.read_text().replace('"a"', '"a" '), encoding="utf-8")
    manifest, _ = frozen(log, tmp_path, run, split, eligibility)
    assert manifest["accepted_episode_count"] == 0


def test_in_frozen_mode_a_rollout_without_trajectory_yields_to_the_runner_up(log, tmp_path):
    run = write_run_dir(tmp_path / "run", "run-a", [
        {"episode_id": "a--r000", "case_id": "a", "score": {"total": 2.0}, "trajectory": False},
        {"episode_id": "a--r001", "case_id": "a", "score": {"total": 1.0}},
    ])
    split = write_case_split(tmp_path / "split.jsonl", {"a": ("train", "g1")})
    eligibility = write_eligibility(tmp_path / "elig", run, [("a--r000", "a"), ("a--r001", "a")])
    frozen(log, tmp_path, run, split, eligibility)
    assert set(by_episode(tmp_path / "out" / "accepted_episodes.jsonl")) == {"a--r001"}
    excluded = by_episode(tmp_path / "out" / "excluded_episode_metadata.jsonl")
    assert excluded["a--r000"]["training_exclusion_reasons"] == ["no_exportable_trajectory_sft"]


def test_frozen_mode_keeps_one_rollout_per_case_of_a_four_rollout_run(log, tmp_path):
    # a: r2 has the best score but a red flag; r1 and r3 tie on score: the larger id wins.
    # b: r0 is wrong (a fatal reason fails the hard gate); r1 is the best of the rest.
    totals = {"a": [0.5, 1.0, 2.0, 1.0], "b": [3.0, 1.5, 1.0, 0.5]}
    episodes = [
        {"episode_id": f"{case}--r{r:03d}", "case_id": case, "families": [f"content:{case}"], "score": {"total": total}}
        for case, scores in totals.items() for r, total in enumerate(scores)
    ]
    episodes[2]["score"]["training_exclusion_reasons"] = ["duplicate_actions"]
    episodes[4]["score"].update({"training_eligible": False, "training_exclusion_reasons": ["incorrect_result"]})
    run = write_run_dir(tmp_path / "run", "run-a", episodes)
    split = write_case_split(tmp_path / "split.jsonl", {"a": ("train", "g1"), "b": ("validation", "g2")})
    eligibility = write_eligibility(tmp_path / "elig", run, [(e["episode_id"], e["case_id"]) for e in episodes])
    manifest, _ = frozen(log, tmp_path, run, split, eligibility)
    assert {e: (r["split"], r["split_group_id"]) for e, r in by_episode(tmp_path / "out" / "episode_metadata.jsonl").items()} == {
        "a--r003": ("train", "g1"), "b--r001": ("validation", "g2"),
    }
    excluded = by_episode(tmp_path / "out" / "excluded_episode_metadata.jsonl")
    assert {e: r["training_exclusion_reasons"] for e, r in excluded.items()} == {
        "a--r000": ["lower_quality_rollout_for_case"],
        "a--r001": ["lower_quality_rollout_for_case"],
        "a--r002": ["lower_quality_rollout_for_case"],  # frozen mode clears the reasons of an eligible rollout
        "b--r000": ["incorrect_result", "incorrect_result"],
        "b--r002": ["lower_quality_rollout_for_case"],
        "b--r003": ["lower_quality_rollout_for_case"],
    }
    assert excluded["a--r002"]["deterministic_red_flags"] == ["duplicate_actions"]
    assert manifest["rollout_selection"] == "one_rollout_per_case" and manifest["accepted_episode_count"] == 2
    assert manifest["excluded_reason_counts"] == {"incorrect_result": 1, "lower_quality_rollout_for_case": 5}


def test_a_semantic_artifact_for_another_trace_fails(log, tmp_path):
    run, split, eligibility = one_case_frozen(tmp_path)
    semantic = tmp_path / "semantic"
    semantic.mkdir()
    (semantic / "a.semantic_reward.json").write_text(json.dumps({
        "artifact_id": "sem-a", "case_id": "a", "rollout": {"episode_id": "a--r000"}, "source_trace": {"sha256": "0" * 64},
        "gates": {"semantic_audit_pass": True},
    }))
    with pytest.raises(DatasetExportError, match="semantic diagnostic artifact does not match trace: a--r000"):
        frozen(log, tmp_path, run, split, eligibility, semantic_reward_dir=semantic)
    (semantic / "a.semantic_reward.json").write_text(json.dumps({
        "artifact_id": "sem-a", "case_id": "a", "rollout": {"episode_id": "a--r000"},
        "source_trace": {"sha256": file_sha(run / "traces" / "a--r000.json")}, "gates": {"semantic_audit_pass": True},
    }))
    frozen(log, tmp_path, run, split, eligibility, semantic_reward_dir=semantic)
    row = read_jsonl(tmp_path / "out" / "accepted_episodes.jsonl")[0]
    assert row["semantic_reward_artifact_id"] == "sem-a"


def set_gates(artifact: Path, gates) -> None:
    (payload := json.loads(artifact.read_text(encoding="utf-8")))["gates"] = gates
    artifact.write_text(json.dumps(payload), encoding="utf-8")


def one_case_frozen(root: Path) -> tuple[Path, Path, Path]:
    """A run of case a (train), one rollout, its split and eligibility."""
    run = write_run_dir(root / "run", "run-a", [{"episode_id": "a--r000", "case_id": "a"}])
    return run, write_case_split(root / "split.jsonl", {"a": ("train", "g1")}), write_eligibility(root / "elig", run, [("a--r000", "a")])


def two_cases_frozen(root: Path) -> tuple[Path, Path, Path]:
    """A run of cases a (train) and b (validation), one rollout each, its split and eligibility."""
    run = write_run_dir(root / "run", "run-a", [{"episode_id": "a--r000", "case_id": "a"}, {"episode_id": "b--r000", "case_id": "b"}])
    split = write_case_split(root / "split.jsonl", {"a": ("train", "g1"), "b": ("validation", "g2")})
    return run, split, write_eligibility(root / "elig", run, [("a--r000", "a"), ("b--r000", "b")])


@pytest.mark.parametrize(("gates", "shown"), [(None, "null"), ([], "[]"), ("pass", '"pass"'), (1, "1")])
def test_an_eligibility_artifact_whose_gates_is_no_object_fails_naming_it(log, tmp_path, gates, shown):
    """seed 002 writes each episode's `eligibility.get("gates", {}).get("sft_eligibility_pass")`:
    gates null, a list or text raises AttributeError; the episode was excluded as
    structured_teacher_gate_failed and the export went on."""
    run, split, eligibility = two_cases_frozen(tmp_path)
    set_gates(eligibility / "b--r000.sft_eligibility.json", gates)
    with pytest.raises(DatasetExportError) as raised:
        frozen(log, tmp_path, run, split, eligibility)
    assert str(raised.value) == (
        f"{eligibility.resolve()}/b--r000.sft_eligibility.json: gates {shown} is not an object: "
        "seed 002 cannot read sft_eligibility_pass from it"
    )
    assert not (tmp_path / "out").exists()


def test_a_semantic_artifact_whose_gates_is_no_object_fails_naming_it(log, tmp_path):
    """The same for `semantic.get("gates", {}).get("semantic_audit_pass")`."""
    run, split, eligibility = one_case_frozen(tmp_path)
    semantic = tmp_path / "semantic"
    semantic.mkdir()
    (semantic / "a.semantic_reward.json").write_text(json.dumps({
        "artifact_id": "sem-a", "case_id": "a", "rollout": {"episode_id": "a--r000"},
        "source_trace": {"sha256": file_sha(run / "traces" / "a--r000.json")}, "gates": None,
    }))
    with pytest.raises(DatasetExportError) as raised:
        frozen(log, tmp_path, run, split, eligibility, semantic_reward_dir=semantic)
    assert str(raised.value) == (
        f"{semantic.resolve()}/a.semantic_reward.json: gates null is not an object: seed 002 cannot read semantic_audit_pass from it"
    )


def test_gates_that_are_no_object_fail_after_the_same_trace_s_refused_total_and_before_the_next_trace(log, tmp_path):
    """The seed reads a trace's gates writing its metadata, after its float(total): a's refused
    total comes before a's broken gates, and a's broken gates before b's refused total."""
    for folder, total_of, first in (("same", "a", 'trajectory_scores.jsonl:1: total "abc" is not a number'),
                                    ("next", "b", "a--r000.sft_eligibility.json: gates null is not an object")):
        run, split, eligibility = two_cases_frozen(tmp_path / folder)
        set_gates(eligibility / "a--r000.sft_eligibility.json", None)
        row = 1 if total_of == "a" else 2
        lines = (run / "trajectory_scores.jsonl").read_text(encoding="utf-8").splitlines()
        lines[row - 1] = json.dumps({"episode_id": f"{total_of}--r000", "total": "abc", "training_eligible": True})
        (run / "trajectory_scores.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        with pytest.raises(DatasetExportError, match=re.escape(first)):
            frozen(log, tmp_path / folder, run, split, eligibility)


def test_an_eligibility_artifact_whose_name_is_not_utf8_is_refused_by_name(log, tmp_path):
    """A gate artifact named on a Latin-1 system failed the export with orjson's TypeError
    traceback (exit 1), naming no file: the log holds every imported file's path as text."""
    run, split, eligibility = one_case_frozen(tmp_path)
    (eligibility / "a--r000.sft_eligibility.json").rename(eligibility / os.fsdecode(b"a-\xe9.sft_eligibility.json"))
    with pytest.raises(ArtifactError) as raised:
        frozen(log, tmp_path, run, split, eligibility)
    assert str(raised.value) == (
        f"'{eligibility.resolve()}/a-\\udce9.sft_eligibility.json' is not UTF-8 text (byte 0xe9), which the log and its files "
        "hold only; rename it (nothing was imported)"
    )
    assert not (tmp_path / "out").exists()


def test_frozen_mode_requires_a_case_split_and_eligibility(log, tmp_path):
    run = write_run_dir(tmp_path / "run", "run-a", [{"episode_id": "a--r000", "case_id": "a"}])
    split = write_case_split(tmp_path / "split.jsonl", {"a": ("train", "g1")})
    with pytest.raises(DatasetExportError, match="frozen SFT export requires --eligibility-dir"):
        export_dataset(log, ExportOptions(out_dir=tmp_path / "out", run_dirs=[run], case_split=split))
    with pytest.raises(DatasetExportError, match="frozen SFT export requires --case-split"):
        export_dataset(log, ExportOptions(out_dir=tmp_path / "out", run_dirs=[run], eligibility_dir=tmp_path))


def release_episodes():
    return [
        {"episode_id": "a--r000", "case_id": "a", "families": ["content:x"], "teacher_score": 1.5},
        {"episode_id": "b--r000", "case_id": "b", "families": ["content:x"], "teacher_score": 1.0, "red_flags": ["duplicate_actions"]},
        {"episode_id": "c--r000", "case_id": "c", "families": ["content:y"]},
        {"episode_id": "d--r000", "case_id": "d", "trajectory": False},  # action-only
    ]


def test_an_accepted_release_exports_its_teachers_and_action_only_perception(log, tmp_path):
    release = write_accepted_release(tmp_path / "release", release_episodes(), action_only=("d--r000",))
    split = write_case_split(tmp_path / "split.jsonl", {
        "a": ("train", "g1"), "b": ("train", "g1"), "c": ("validation", "g2"), "d": ("validation", "g3"),
    })
    manifest, _ = export_dataset(log, ExportOptions(
        out_dir=tmp_path / "out", accepted_release=release, case_split=split, minimum_accepted_cases=3,
    ))
    rows = by_episode(tmp_path / "out" / "episode_metadata.jsonl")
    assert set(rows) == {"a--r000", "b--r000", "c--r000"}
    assert rows["a--r000"]["teacher_score"] == 1.5 and rows["b--r000"]["deterministic_red_flags"] == ["duplicate_actions"]
    perception = by_episode(tmp_path / "out" / "perception.validation.jsonl")
    assert set(perception) == {"c--r000", "d--r000"} and perception["d--r000"]["split_group_id"] == "g3"
    assert read_jsonl(tmp_path / "out" / "action_only.jsonl") == [{"episode_id": "d--r000", "reason": "no readable thought"}]
    assert manifest["source_mode"] == "canonical_accepted_release"
    assert manifest["selected_release_case_count"] == 4 and manifest["candidate_episode_count"] == 3
    assert manifest["action_only_episode_count"] == 1 and manifest["action_only_perception_count"] == 1
    assert manifest["frozen_inputs"]["accepted_release"]["schema_version"] == "ifv-accepted-teacher-release-v3"
    assert manifest["frozen_inputs"]["eligibility_dir"] == str(release / "eligibility")


def test_an_action_only_case_missing_from_the_split_fails(log, tmp_path):
    release = write_accepted_release(tmp_path / "release", release_episodes(), action_only=("d--r000",))
    split = write_case_split(tmp_path / "split.jsonl", {"a": ("train", "g1"), "b": ("train", "g1"), "c": ("validation", "g2")})
    with pytest.raises(DatasetExportError, match="fixed case split lacks action-only perception case: d"):
        export_dataset(log, ExportOptions(out_dir=tmp_path / "out", accepted_release=release, case_split=split, minimum_accepted_cases=0))


def test_an_accepted_release_with_a_tampered_trace_fails(log, tmp_path):
    release = write_accepted_release(tmp_path / "release", release_episodes())
    trace = release / "traces" / "b--r000.json"
    trace.write_text(trace.read_text() + " ", encoding="utf-8")
    split = write_case_split(tmp_path / "split.jsonl", {c: ("train", "g") for c in "abcd"})
    with pytest.raises(ArtifactError, match="accepted-release trace SHA-256 mismatch: b--r000"):
        export_dataset(log, ExportOptions(out_dir=tmp_path / "out", accepted_release=release, case_split=split))
    assert log.sql("SELECT count(*) AS n FROM events")["n"][0].as_py() == 0  # nothing of it entered the log


def test_accepted_release_mode_owns_its_eligibility_and_excludes_runs(log, tmp_path):
    release = write_accepted_release(tmp_path / "release", release_episodes())
    split = write_case_split(tmp_path / "split.jsonl", {c: ("train", "g") for c in "abcd"})
    with pytest.raises(DatasetExportError, match="owns its eligibility directory"):
        export_dataset(log, ExportOptions(out_dir=tmp_path / "o", accepted_release=release, case_split=split, eligibility_dir=tmp_path))
    with pytest.raises(DatasetExportError, match="cannot be combined with --run-dir"):
        export_dataset(log, ExportOptions(out_dir=tmp_path / "o", accepted_release=release, case_split=split, run_dirs=[release]))


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda rows, manifest: rows.append(dict(rows[0])), "accepted-release has duplicate episode_id: a--r000"),
        (lambda rows, manifest: rows.append({**rows[0], "episode_id": "x"}), "accepted-release has duplicate selected case_id: a"),
        (lambda rows, manifest: manifest.update(accepted_case_count=7), "accepted_case_count does not match selected episodes: 7 != 4"),
        (lambda rows, manifest: rows[1].update(deterministic_hard_gate_pass=False), "without a passing deterministic gate: b--r000"),
        (lambda rows, manifest: manifest.update(schema_version="ifv-accepted-teacher-release-v1"), "unsupported schema"),
        (lambda rows, manifest: rows.pop(1), "accepted-release trace is not listed as selected: b--r000"),
    ],
)
def test_accepted_release_checks(log, tmp_path, edit, message):
    release = write_accepted_release(tmp_path / "release", release_episodes())
    rows = read_jsonl(release / "selected_episodes.jsonl")
    manifest = json.loads((release / "accepted_release_manifest.json").read_text())
    edit(rows, manifest)
    if len(rows) == 3:
        manifest["accepted_case_count"] = 3
    write_jsonl(release / "selected_episodes.jsonl", rows)
    (release / "accepted_release_manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ArtifactError, match=re.escape(message)):
        from eviscene.imports import import_path
        import_path(log, release)


@pytest.mark.parametrize("relative", ["selected_episodes.jsonl", "accepted_release_manifest.json", "action_only.jsonl",
                                      "eligibility/a--r000.sft_eligibility.json"])
def test_an_accepted_release_file_linking_out_of_the_release_is_refused(log, tmp_path, relative):
    from eviscene.imports import import_path
    release = write_accepted_release(tmp_path / "release", release_episodes())
    target = (tmp_path / "outside").resolve()
    (release / relative).rename(target)
    (release / relative).symlink_to(target)
    with pytest.raises(ArtifactError, match=re.escape(f"path {relative!r} resolves to {target}, outside the imported directory")):
        import_path(log, release)
    assert not log.exists()


def with_runtime_stores(release: Path) -> list[dict]:
    """The release's selected episodes, each given a runtime store of two files (`stores/<episode>/`)."""
    rows = read_jsonl(release / "selected_episodes.jsonl")
    for row in rows:
        row.update(runtime_store_path=f"stores/{row['episode_id']}", runtime_store_file_count=2)
        store = release / "stores" / row["episode_id"]
        (store / "context").mkdir(parents=True)
        (store / "context" / "manifest.json").write_text("{}")
        (store / "artifacts" / "sha256").mkdir(parents=True)
        (store / "artifacts" / "sha256" / "ab").write_text("page")
    return rows


def test_a_runtime_store_path_spelled_with_dots_or_absolute_is_taken_when_it_resolves_inside_the_release(log, tmp_path):
    """Seed 002 judges a runtime store by `(root / raw).resolve()` alone: `stores/../stores/x`
    and the absolute path of a store inside the release are that store, imported as it is."""
    from eviscene.imports import import_path
    release = write_accepted_release(tmp_path / "release", release_episodes(), schema="ifv-accepted-teacher-release-v4")
    rows = with_runtime_stores(release)
    rows[0]["runtime_store_path"] = "stores/../stores/a--r000"
    rows[1]["runtime_store_path"] = str(release.resolve() / "stores" / "b--r000")
    write_jsonl(release / "selected_episodes.jsonl", rows)
    assert import_path(log, release).status == "imported"
    stores = log.sql("SELECT episode_id, relative_path FROM imported_files WHERE kind = 'runtime_store' ORDER BY episode_id").to_pylist()
    assert stores == [{"episode_id": e, "relative_path": f"stores/{e}/"} for e in ("a--r000", "b--r000", "c--r000", "d--r000")]


def test_runtime_stores_must_stay_inside_the_release_and_be_complete(log, tmp_path):
    from eviscene.imports import import_path
    release = write_accepted_release(tmp_path / "release", release_episodes(), schema="ifv-accepted-teacher-release-v4")
    with pytest.raises(ArtifactError, match="v4 selected episode has no runtime store: a--r000"):
        import_path(log, release)
    rows = with_runtime_stores(release)
    (tmp_path / "outside").mkdir()
    for escape in ("../outside", str(tmp_path / "outside")):
        rows[0]["runtime_store_path"] = escape
        write_jsonl(release / "selected_episodes.jsonl", rows)
        with pytest.raises(ArtifactError) as refused:
            import_path(log, release)
        assert str(refused.value) == (f"accepted-release runtime store of a--r000: path {escape!r} resolves to "
                                      f"{(tmp_path / 'outside').resolve()}, outside the imported directory {release.resolve()}")
    rows[0]["runtime_store_path"] = "stores/a--r000"
    # a file of a store that links out of the release is refused, not hashed into the listing
    (tmp_path / "secret.txt").write_text("not the release's")
    (release / "stores" / "a--r000" / "artifacts" / "sha256" / "cd").symlink_to(tmp_path / "secret.txt")
    write_jsonl(release / "selected_episodes.jsonl", rows)
    with pytest.raises(ArtifactError, match=re.escape(
        f"runtime store of a--r000: path 'stores/a--r000/artifacts/sha256/cd' resolves to {(tmp_path / 'secret.txt').resolve()}, outside"
    )):
        import_path(log, release)
    (release / "stores" / "a--r000" / "artifacts" / "sha256" / "cd").unlink()
    (release / "stores" / "b--r000" / "context" / "manifest.json").unlink()
    write_jsonl(release / "selected_episodes.jsonl", rows)
    with pytest.raises(ArtifactError, match="runtime store has no context manifests: b--r000"):
        import_path(log, release)
    (release / "stores" / "b--r000" / "context" / "manifest.json").write_text("{}")
    result = import_path(log, release)
    stores = log.sql("SELECT episode_id, path FROM imported_files WHERE kind = 'runtime_store' ORDER BY episode_id").to_pylist()
    assert result.status == "imported" and [s["episode_id"] for s in stores] == ["a--r000", "b--r000", "c--r000", "d--r000"]


def test_a_padded_split_of_an_exported_case_fails_with_a_message(log, tmp_path):
    # seed 002 loads the row (it checks `split.strip()`), then files the episode under
    # str(row["split"]), ' validation ', and stops with a KeyError; a case without an
    # exported episode writes nothing and is no problem
    run = write_run_dir(tmp_path / "run", "run-a", [
        {"episode_id": "a--r000", "case_id": "a"},
        {"episode_id": "b--r000", "case_id": "b", "trajectory": False},
    ])
    split = write_case_split(tmp_path / "split.jsonl", {"a": (" validation ", "g1"), "b": ("train\t", "g2")})
    eligibility = write_eligibility(tmp_path / "elig", run, [("a--r000", "a"), ("b--r000", "b")])
    message = "fixed case split row of case a names split \" validation \" (white space around it)"
    with pytest.raises(DatasetExportError, match=re.escape(message)):
        frozen(log, tmp_path, run, split, eligibility)
    split = write_case_split(tmp_path / "split2.jsonl", {"a": ("validation", "g1"), "b": ("train\t", "g2")})
    manifest, _ = export_dataset(log, ExportOptions(
        out_dir=tmp_path / "out2", run_dirs=[run], case_split=split, eligibility_dir=eligibility, minimum_accepted_cases=0,
    ))
    assert manifest["example_counts"] == {"train": 0, "validation": 1, "test": 0}


def test_an_accepted_releases_odd_teacher_values_read_as_the_seeds_python_reads_them(log, tmp_path):
    # seed 002: float(row["teacher_score"] or 0.0) and [str(x) for x in row[...] or []]:
    # true is 1.0, a string of digits is float()'s; a string gives its characters, an
    # object its keys
    release = write_accepted_release(tmp_path / "release", [
        {"episode_id": "a--r000", "case_id": "a"}, {"episode_id": "b--r000", "case_id": "b"},
    ])
    rows = read_jsonl(release / "selected_episodes.jsonl")
    rows[0].update(teacher_score=True, deterministic_red_flags="xy")
    rows[1].update(teacher_score="\u0665", deterministic_red_flags={"k1": 1, "k2": 2}, deterministic_fatal_reasons="z")
    write_jsonl(release / "selected_episodes.jsonl", rows)
    split = write_case_split(tmp_path / "split.jsonl", {"a": ("train", "g1"), "b": ("train", "g2")})
    export_dataset(log, ExportOptions(out_dir=tmp_path / "out", accepted_release=release, case_split=split, minimum_accepted_cases=0))
    got = {e: (r["teacher_score"], r["deterministic_red_flags"], r["deterministic_fatal_reasons"])
           for e, r in by_episode(tmp_path / "out" / "episode_metadata.jsonl").items()}
    assert got == {"a--r000": (1.0, ["x", "y"], []), "b--r000": (5.0, ["k1", "k2"], ["z"])}
