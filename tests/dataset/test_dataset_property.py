"""Property: no case and no content source family ever lands in two splits, and the views
agree with seed 002's algorithm written as plain Python."""

from __future__ import annotations

import tempfile
from pathlib import Path

from dataset_builders import read_jsonl, seed_reference, write_run_dir
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eviscene.exports.dataset import ExportOptions, export_dataset
from eviscene.store import EventLog

FAMILIES = [f"content:{c}" for c in "abcdefgh"] + ["domain:wikipedia.org", "domain:example.com", "content:é😀"]

episode = st.fixed_dictionaries({
    "case": st.integers(0, 9),
    "families": st.lists(st.sampled_from(FAMILIES), max_size=3, unique=True),
    "total": st.sampled_from([0.5, 1.0, 1.5]),
    "eligible": st.booleans(),
    "trajectory": st.booleans(),
})


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(episode, min_size=1, max_size=14), st.sampled_from(["ifv-policy-v1", "s2"]))
def test_no_case_or_family_is_in_two_splits(drawn, seed):
    episodes = []
    for index, e in enumerate(drawn):
        case = f"case-{e['case']}"
        episodes.append({
            "episode_id": f"{case}--r{index:03d}", "case_id": case, "families": e["families"],
            "score": {"total": e["total"], "training_eligible": e["eligible"],
                      "training_exclusion_reasons": [] if e["eligible"] else ["incorrect_result"]},
            "trajectory": e["trajectory"] or index % 3 == 0,
        })
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        run = write_run_dir(root / "run", "run-p", episodes)
        export_dataset(EventLog(root / "log.duckdb"), ExportOptions(out_dir=root / "out", run_dirs=[run], seed=seed, train_ratio=0.4, validation_ratio=0.3))
        rows = read_jsonl(root / "out" / "episode_metadata.jsonl")
    split_of_case: dict[str, str] = {}
    split_of_family: dict[str, str] = {}
    for row in rows:
        assert split_of_case.setdefault(row["case_id"], row["split"]) == row["split"]
        for family in row["source_family_keys"]:
            assert split_of_family.setdefault(family, row["split"]) == row["split"], family
    assert {r["episode_id"]: (r["split"], r["split_group_id"]) for r in rows} == seed_reference(episodes, seed=seed, train_ratio=0.4, validation_ratio=0.3)
