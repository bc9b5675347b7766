"""Seed 002's edge rules, each expectation worked out by hand from the seed's code: which
error it raises first, which score rows it keys, and what short_sft_case_count counts."""

from __future__ import annotations

import json

import pytest
from dataset_builders import read_jsonl, write_jsonl, write_run_dir

from eviscene.exports.dataset import ExportOptions, export_dataset
from eviscene.log import EventLog


@pytest.fixture
def log(tmp_path) -> EventLog:
    return EventLog(tmp_path / "log.duckdb")


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
