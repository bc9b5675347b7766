"""Property: a derived export keeps exactly the eligible rollouts with a trajectory, no case
and no content source family ever lands in two splits, and the views agree with seed 002's
algorithm written as plain Python: exactly where the seed's components keep each case
whole, and with EviScene's one deviation (rollouts of a case join one group) elsewhere."""

from __future__ import annotations

import tempfile
from pathlib import Path

from dataset_builders import read_jsonl, seed_reference, write_run_dir
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eviscene.exports.dataset import ExportOptions, export_dataset
from eviscene.log import EventLog

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
    ratios = {"seed": seed, "train_ratio": 0.4, "validation_ratio": 0.3}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        run = write_run_dir(root / "run", "run-p", episodes)
        manifest, _ = export_dataset(EventLog(root / "log.duckdb"), ExportOptions(out_dir=root / "out", run_dirs=[run], **ratios))
        rows = read_jsonl(root / "out" / "episode_metadata.jsonl")
        excluded = read_jsonl(root / "out" / "excluded_episode_metadata.jsonl")

    # exactly the eligible rollouts with a trajectory, every other candidate excluded
    kept = {e["episode_id"] for e in episodes if e["score"]["training_eligible"] and e["trajectory"]}
    assert {r["episode_id"] for r in rows} == kept
    assert {r["episode_id"] for r in excluded} == {e["episode_id"] for e in episodes} - kept
    assert manifest["accepted_episode_count"] == len(kept) and manifest["rollout_selection"] == "every_eligible_rollout"

    split_of_case: dict[str, str] = {}
    split_of_family: dict[str, str] = {}
    for row in rows:
        assert split_of_case.setdefault(row["case_id"], row["split"]) == row["split"]
        for family in row["source_family_keys"]:
            assert split_of_family.setdefault(family, row["split"]) == row["split"], family

    ours = {r["episode_id"]: (r["split"], r["split_group_id"]) for r in rows}
    assert ours == seed_reference(episodes, join_cases=True, **ratios)
    # Where the seed's component of an episode shares no case with another component, the
    # deviation changes nothing: the seed's own group id and split.
    seed = seed_reference(episodes, **ratios)
    case_of = {e["episode_id"]: e["case_id"] for e in episodes}
    groups_of_case: dict[str, set[str]] = {}
    for episode_id, (_, group) in seed.items():
        groups_of_case.setdefault(case_of[episode_id], set()).add(group)
    members: dict[str, set[str]] = {}
    for episode_id, (_, group) in seed.items():
        members.setdefault(group, set()).add(episode_id)
    for group, episode_ids in members.items():
        if all(groups_of_case[case_of[e]] == {group} for e in episode_ids):
            assert {e: ours[e] for e in episode_ids} == {e: seed[e] for e in episode_ids}
