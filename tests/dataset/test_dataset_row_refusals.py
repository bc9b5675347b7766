"""Imported rows seed 002 would stop at: a trajectory_sft row that is no SFT record, a
teacher score float() refuses and exclusion reasons it cannot iterate. Each expectation is
worked out by hand from the seed's code: which error comes first, and which values it reads
without complaint."""

from __future__ import annotations

import json
import re

import pytest
from dataset_builders import read_jsonl, write_accepted_release, write_case_split, write_eligibility, write_run_dir
from test_dataset_seed_rules import frozen_with_mismatches

from eviscene.exports.dataset import DatasetExportError, ExportOptions, export_dataset


def run_with(tmp_path, name, episodes):
    return write_run_dir(tmp_path / name, f"run-{name}", episodes)


def replace_row(path, line_number, row):
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[line_number - 1] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def export(log, tmp_path, run_dirs):
    return export_dataset(log, ExportOptions(out_dir=tmp_path / "out", run_dirs=run_dirs))


@pytest.mark.parametrize(("row", "what"), [
    ({"episode_id": "b--r000", "messages": 5}, "messages is not a list"),
    ({"episode_id": "b--r000", "messages": [5]}, "a message is not an object"),
    ({"episode_id": "b--r000"}, "no messages"),
    ({"episode_id": "b--r000", "messages": None}, "no messages"),
    ({"episode_id": "b--r000", "messages": [{"role": "system", "content": 5}]}, "a message content is neither text, a list nor null"),
    ({"episode_id": "b--r000", "messages": [], "tools": {"name": "x"}}, "tools is not a list"),
])
def test_a_trajectory_sft_row_that_is_no_sft_record_fails_naming_file_and_line(log, tmp_path, row, what):
    """Seed 002 never reads trajectory_sft.jsonl: it builds each trajectory from the trace as a
    pydantic TrajectorySFTExample (a list of message objects, each content text, a list or
    null; a list of tools) and copies it into DatasetTrajectorySFTExample. A row no such model
    holds is one the seed could not have built; EviScene refuses it by file and line (before,
    `messages: 5` was a TypeError traceback, `[5]` an AttributeError, no messages a long-holdout
    row with null token counts)."""
    run = run_with(tmp_path, "a", [{"episode_id": "a--r000", "case_id": "a"}, {"episode_id": "b--r000", "case_id": "b"}])
    replace_row(run / "trajectory_sft.jsonl", 2, row)
    with pytest.raises(DatasetExportError) as raised:
        export(log, tmp_path, [run])
    assert str(raised.value) == f"{run.resolve()}/trajectory_sft.jsonl:2: {what}"
    assert not (tmp_path / "out").exists()


def test_a_sound_trajectory_sft_row_with_string_content_and_no_tools_exports(log, tmp_path):
    """Text content, null content and no `tools` key are what the SFT model allows: exported."""
    run = run_with(tmp_path, "a", [{"episode_id": "a--r000", "case_id": "a"}])
    replace_row(run / "trajectory_sft.jsonl", 1, {"episode_id": "a--r000", "messages": [
        {"role": "system", "content": "Verify."}, {"role": "user", "content": None}, {"role": "assistant", "content": "ok"}]})
    manifest, _ = export(log, tmp_path, [run])
    assert manifest["accepted_episode_count"] == 1
    system = read_jsonl(tmp_path / "out" / f"{read_jsonl(tmp_path / 'out' / 'accepted_episodes.jsonl')[0]['split']}.system_tools.jsonl")
    assert system[0]["messages"][0]["content"].startswith("Verify.\n\n# Tools")


def test_malformed_trajectory_rows_fail_in_episode_order_after_every_source_is_read(log, tmp_path):
    """seed 002 reads every source (perception, traces) first, then builds the trajectories in
    `sorted(export_jobs)` order: run two's a--r000 fails before run one's b--r000, and a
    semantic mismatch or a refused score in any source comes before both."""
    one = run_with(tmp_path, "one", [{"episode_id": "b--r000", "case_id": "b"}])
    two = run_with(tmp_path, "two", [{"episode_id": "a--r000", "case_id": "a"}])
    replace_row(one / "trajectory_sft.jsonl", 1, {"episode_id": "b--r000", "messages": 5})
    replace_row(two / "trajectory_sft.jsonl", 1, {"episode_id": "a--r000", "messages": 5})
    with pytest.raises(DatasetExportError, match=rf"^{two.resolve()}/trajectory_sft.jsonl:1: messages is not a list$"):
        export(log, tmp_path, [one, two])
    replace_row(two / "trajectory_scores.jsonl", 1, {"episode_id": "a--r000", "total": "abc", "training_eligible": True})
    with pytest.raises(DatasetExportError, match=rf"^{two.resolve()}/trajectory_scores.jsonl:1: total \"abc\" is not a number"):
        export(log, tmp_path, [one, two])


@pytest.mark.parametrize("total", ["abc", " ", [1], {"x": 1}, "1e3x", 10**400], ids=["abc", "space", "list", "object", "1e3x", "1e400-int"])
def test_a_teacher_score_float_refuses_fails_naming_file_line_and_value(log, tmp_path, total):
    """seed 002's `float(score.get("total", 0.0) or 0.0)`: a truthy value float() cannot read
    raises (ValueError for "abc" and " ", TypeError for [1] and {"x": 1}, OverflowError for an
    integer past a double); it was read as 0.0 and the episode accepted."""
    run = run_with(tmp_path, "a", [{"episode_id": "a--r000", "case_id": "a"}, {"episode_id": "b--r000", "case_id": "b"}])
    replace_row(run / "trajectory_scores.jsonl", 2, {"episode_id": "b--r000", "total": total, "training_eligible": True,
                                                     "training_exclusion_reasons": []})
    with pytest.raises(DatasetExportError) as raised:
        export(log, tmp_path, [run])
    assert str(raised.value) == (
        f"{run.resolve()}/trajectory_scores.jsonl:2: total {json.dumps(total, separators=(',', ':'))} is not a number: "
        "seed 002's float() refuses it"
    )


@pytest.mark.parametrize("total", [" -NaN ", "\u00a0nan", "nan\u000b"], ids=["spaces", "no-break-space", "vertical-tab"])
def test_a_nan_teacher_score_is_refused_as_what_it_is(log, tmp_path, total):
    """float("nan") reads, so "not a number: float() refuses it" was untrue of it."""
    run = run_with(tmp_path, "a", [{"episode_id": "a--r000", "case_id": "a", "score": {"total": total}}])
    with pytest.raises(DatasetExportError) as raised:
        export(log, tmp_path, [run])
    message = str(raised.value)  # the value as DuckDB writes JSON text
    assert message.startswith(f"{run.resolve()}/trajectory_scores.jsonl:1: total \"") and message.endswith(
        "\" is NaN: seed 002's float() reads it, but a NaN score ranks nowhere among a case's rollouts; EviScene refuses it")


@pytest.mark.parametrize(("total", "score"), [
    ("1e3", 1000.0), (" 12 ", 12.0), ("inf", None), ("1_000", 1000.0), (True, 1.0), (7, 7.0),
    ("", 0.0), ([], 0.0), ({}, 0.0), (None, 0.0), (False, 0.0), (0, 0.0), ("-0.5", -0.5),
])
def test_a_teacher_score_float_reads_exports(log, tmp_path, total, score):
    """What `float(total or 0.0)` reads without raising: texts Python's float() takes, true,
    integers, and falsy values (the 0.0 default). "inf" is float('inf'), written as null."""
    run = run_with(tmp_path, "a", [{"episode_id": "a--r000", "case_id": "a", "score": {"total": total}}])
    export(log, tmp_path, [run])
    assert read_jsonl(tmp_path / "out" / "episode_metadata.jsonl")[0]["teacher_score"] == score


def test_a_refused_score_comes_after_the_same_traces_semantic_mismatch_and_before_the_next_trace(log, tmp_path):
    """Within one trace the seed checks the semantic artifact before it reads the score's
    total; a refused total of an earlier trace file comes before a later trace's mismatch."""
    for folder, mismatched, first in (("same", "a", "semantic diagnostic artifact does not match trace: a--r000"),
                                      ("next", "b", "total \"abc\" is not a number")):
        run = run_with(tmp_path / folder, "a", [{"episode_id": "a--r000", "case_id": "a"}, {"episode_id": "b--r000", "case_id": "b"}])
        write_eligibility(tmp_path / folder / "elig", run, [("a--r000", "a"), ("b--r000", "b")])
        replace_row(run / "trajectory_scores.jsonl", 1, {"episode_id": "a--r000", "total": "abc", "training_eligible": True})
        with pytest.raises(DatasetExportError, match=re.escape(first)):
            frozen_with_mismatches(log, tmp_path / folder, [run], [(f"{mismatched}--r000", mismatched)])


@pytest.mark.parametrize(("reasons", "what"), [(5, "5 is a number"), (True, "true is a boolean"), (1.5, "1.5 is a number"),
                                               (-2, "-2 is a number")])
def test_exclusion_reasons_seed_002_cannot_iterate_fail_naming_file_line_and_value(log, tmp_path, reasons, what):
    """seed 002's `[str(item) for item in score.get("training_exclusion_reasons", []) or []]`
    raises TypeError for a truthy number or true; they were read as no reasons, and the
    episode exported as eligible with no red flags."""
    run = run_with(tmp_path, "a", [{"episode_id": "a--r000", "case_id": "a"}, {"episode_id": "b--r000", "case_id": "b"}])
    replace_row(run / "trajectory_scores.jsonl", 2, {"episode_id": "b--r000", "total": 1.0, "training_eligible": True,
                                                     "training_exclusion_reasons": reasons})
    with pytest.raises(DatasetExportError) as raised:
        export(log, tmp_path, [run])
    assert str(raised.value) == (
        f"{run.resolve()}/trajectory_scores.jsonl:2: training_exclusion_reasons {what}, not a list of reasons: "
        "seed 002 cannot iterate it"
    )
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("reasons", [0, 0.0, False, None, ""], ids=["zero", "zero-float", "false", "null", "empty"])
def test_falsy_exclusion_reasons_read_as_none(log, tmp_path, reasons):
    """`reasons or []`: a falsy number, false, null and "" are no reasons, not an error."""
    run = run_with(tmp_path, "a", [{"episode_id": "a--r000", "case_id": "a", "score": {"training_exclusion_reasons": reasons}}])
    manifest, _ = export(log, tmp_path, [run])
    assert manifest["accepted_episode_count"] == 1
    assert read_jsonl(tmp_path / "out" / "episode_metadata.jsonl")[0]["deterministic_red_flags"] == []


def test_unreadable_exclusion_reasons_come_first_in_their_trace_and_after_an_earlier_trace_s_problems(log, tmp_path):
    """The seed iterates a trace's reasons (`_deterministic_teacher_quality`) right after
    reading the trace: before it checks the semantic artifact and reads the total; a refused
    total of an earlier trace file still comes first."""
    for folder, first in (("same", "training_exclusion_reasons 5 is a number"), ("next", "total \"abc\" is not a number")):
        run = run_with(tmp_path / folder, "a", [{"episode_id": "a--r000", "case_id": "a"}, {"episode_id": "b--r000", "case_id": "b"}])
        write_eligibility(tmp_path / folder / "elig", run, [("a--r000", "a"), ("b--r000", "b")])
        unreadable = "a--r000" if folder == "same" else "b--r000"  # a's total is refused either way
        replace_row(run / "trajectory_scores.jsonl", 1, {"episode_id": "a--r000", "total": "abc", "training_eligible": True,
                                                         "training_exclusion_reasons": 5 if folder == "same" else []})
        replace_row(run / "trajectory_scores.jsonl", 2, {"episode_id": "b--r000", "total": 1.0, "training_eligible": True,
                                                         "training_exclusion_reasons": 5 if folder == "next" else []})
        with pytest.raises(DatasetExportError) as raised:
            frozen_with_mismatches(log, tmp_path / folder, [run], [(unreadable, unreadable[0])])
        assert str(raised.value).startswith(f"{run.resolve()}/trajectory_scores.jsonl:1: {first}")


def test_an_accepted_release_s_own_score_row_with_unreadable_reasons_fails(log, tmp_path):
    """The seed reads the release trace's trajectory_scores row (its reasons) before the
    selected row stands in for the score: that row fails the export too."""
    release = write_accepted_release(tmp_path / "release", [
        {"episode_id": "a--r000", "case_id": "a"}, {"episode_id": "b--r000", "case_id": "b", "score": {"training_exclusion_reasons": True}},
    ])
    split = write_case_split(tmp_path / "split.jsonl", {"a": ("train", "g1"), "b": ("validation", "g2")})
    with pytest.raises(DatasetExportError) as raised:
        export_dataset(log, ExportOptions(out_dir=tmp_path / "out", accepted_release=release, case_split=split, minimum_accepted_cases=0))
    assert str(raised.value) == (
        f"{release.resolve()}/trajectory_scores.jsonl:2: training_exclusion_reasons true is a boolean, not a list of reasons: "
        "seed 002 cannot iterate it"
    )
