"""Selection and rollout expansion against the seed's semantics.

Expected IDs and seeds are written out with hashlib here, independently of the code under
test, and a few are pinned as literals computed once with the seed's own `_rollout_specs`.
"""

import hashlib
import json
from pathlib import Path

import pytest

from eviscene.errors import SelectionError
from eviscene.release import Case, positive_int, rollout_specs, select_cases
from eviscene.rules.traces import safe_trace_filename


def _case(case_id: str) -> Case:
    return Case(
        case_id=case_id,
        image_path=f"runtime_input/images/{case_id}.jpg",
        image_file=Path("/release/runtime_input/images") / f"{case_id}.jpg",
        image_sha256="0" * 64,
    )


def _ids(cases) -> list[str]:
    return [case.case_id for case in cases]


RELEASE = [_case(case_id) for case_id in ["c-05", "c-01", "c-04", "c-02", "c-03", "c-06", "c-07"]]


# --- select_cases -------------------------------------------------------------------


def test_no_filter_keeps_release_order() -> None:
    assert _ids(select_cases(RELEASE, case_ids=None, limit=None)) == _ids(RELEASE)
    assert _ids(select_cases(RELEASE, case_ids=[], limit=None)) == _ids(RELEASE)  # empty = no filter


def test_explicit_case_ids_keep_the_users_order_and_are_stripped() -> None:
    selected = select_cases(RELEASE, case_ids=["c-07", " c-01 ", "c-04"], limit=None)
    assert _ids(selected) == ["c-07", "c-01", "c-04"]
    assert selected[0] is RELEASE[6]


@pytest.mark.parametrize(
    ("case_ids", "fragment"),
    [
        (["c-01", "  "], "--case-id values must be non-empty"),
        (["c-01", "c-02", "c-01"], "--case-id values must be unique; repeated: c-01"),
        (["c-01", " c-01"], "must be unique"),
        (["c-01", "nope", "c-02", "gone"], "absent from the release: nope, gone"),
    ],
)
def test_bad_case_ids(case_ids, fragment: str) -> None:
    with pytest.raises(SelectionError, match=fragment):
        select_cases(RELEASE, case_ids=case_ids, limit=None)


def test_release_level_checks_come_first() -> None:
    with pytest.raises(SelectionError, match="duplicate case_id 'c-01'"):
        select_cases([_case("c-01"), _case("c-01")], case_ids=None, limit=None)
    with pytest.raises(SelectionError, match="empty case_id"):
        select_cases([_case(" ")], case_ids=None, limit=None)


def test_case_id_errors_come_before_shard_errors() -> None:
    # Seed order: --case-id checks, then shard flags.
    with pytest.raises(SelectionError, match="absent"):
        select_cases(RELEASE, case_ids=["nope"], limit=None, shard_count=0)


@pytest.mark.parametrize("shard_count", [2, 3, 7, 10])
def test_shards_partition_sorted_case_ids(shard_count: int) -> None:
    everything = sorted(_ids(RELEASE))
    seen: list[str] = []
    for shard_index in range(shard_count):
        shard = _ids(select_cases(RELEASE, case_ids=None, limit=None, shard_count=shard_count, shard_index=shard_index))
        assert shard == sorted(shard)
        assert shard == everything[shard_index::shard_count]
        seen.extend(shard)
    assert sorted(seen) == everything and len(seen) == len(everything)


def test_shard_literal_example() -> None:
    # sorted: c-01 c-02 c-03 c-04 c-05 c-06 c-07 -> positions 1, 4 for index 1 of 3
    assert _ids(select_cases(RELEASE, case_ids=None, limit=None, shard_count=3, shard_index=1)) == ["c-02", "c-05"]


def test_sharding_applies_after_explicit_ids_and_sorts_them() -> None:
    selected = select_cases(RELEASE, case_ids=["c-07", "c-03", "c-05", "c-01"], limit=None, shard_count=2, shard_index=0)
    assert _ids(selected) == ["c-01", "c-05"]  # sorted c-01 c-03 c-05 c-07 -> positions 0, 2


def test_limit_applies_last_per_shard() -> None:
    assert _ids(select_cases(RELEASE, case_ids=None, limit=2, shard_count=2, shard_index=1)) == ["c-02", "c-04"]
    assert _ids(select_cases(RELEASE, case_ids=None, limit=3)) == ["c-05", "c-01", "c-04"]
    assert _ids(select_cases(RELEASE, case_ids=["c-03", "c-02"], limit=1)) == ["c-03"]
    assert _ids(select_cases(RELEASE, case_ids=None, limit=100)) == _ids(RELEASE)
    assert select_cases(RELEASE, case_ids=None, limit=0) == []  # seed: [:0]


@pytest.mark.parametrize("limit", [-1, True, 1.5, "2"])
def test_invalid_limit(limit) -> None:
    with pytest.raises(SelectionError, match="--limit must be a non-negative integer"):
        select_cases(RELEASE, case_ids=None, limit=limit)


@pytest.mark.parametrize(
    ("shard_count", "shard_index", "fragment"),
    [
        (0, 0, "--shard-count"),
        (-2, 0, "--shard-count"),
        (True, 0, "--shard-count"),
        (2, 2, r"--shard-index must be an integer in \[0, 2\)"),
        (2, -1, "--shard-index"),
        (1, 1, "--shard-index"),
        (3, "1", "--shard-index"),
    ],
)
def test_invalid_shard_flags(shard_count, shard_index, fragment: str) -> None:
    with pytest.raises(SelectionError, match=fragment):
        select_cases(RELEASE, case_ids=None, limit=None, shard_count=shard_count, shard_index=shard_index)


# --- rollout_specs ------------------------------------------------------------------


def _expected_group_id(case_id: str, revision: str, model: str, base: int, size: int) -> str:
    material = json.dumps(
        {"case_id": case_id, "policy_revision": revision, "model": model, "base_sampling_seed": base, "group_size": size},
        ensure_ascii=False,
        sort_keys=True,
        separators=(",", ":"),
    )
    return "pg-" + hashlib.sha256(material.encode("utf-8")).hexdigest()[:24]


def _expected_seed(base: int, case_id: str, index: int) -> int:
    digest = hashlib.sha256(f"{base}:{case_id}:{index}".encode("utf-8")).digest()
    return ((digest[0] << 24) | (digest[1] << 16) | (digest[2] << 8) | digest[3]) & 0x7FFFFFFF


def _specs(case_ids, size: int, *, base: int = 1729, revision: str = "abc", model: str = "offline-v1"):
    return rollout_specs(
        [_case(case_id) for case_id in case_ids],
        rollouts_per_case=size,
        base_sampling_seed=base,
        policy_revision=revision,
        model=model,
    )


def test_literal_single_rollout() -> None:
    (spec,) = _specs(["demo-0001"], 1)
    assert spec.prompt_group_id == "pg-09b546008e068271ce27eaa7"
    assert spec.episode_id == "demo-0001"
    assert spec.sampling_seed == 1395655370
    assert (spec.rollout_index, spec.group_size, spec.case_id) == (0, 1, "demo-0001")


def test_literal_group_of_four() -> None:
    specs = _specs(["demo-0001"], 4)
    assert {spec.prompt_group_id for spec in specs} == {"pg-533936d0162eca5efc5465fa"}
    assert [spec.episode_id for spec in specs] == [
        "demo-0001--533936d0--r000",
        "demo-0001--533936d0--r001",
        "demo-0001--533936d0--r002",
        "demo-0001--533936d0--r003",
    ]
    # Seeds depend on base, case and index only, so index 0 matches the single rollout.
    assert [spec.sampling_seed for spec in specs] == [1395655370, 58945102, 142546236, 1035408132]
    assert [spec.rollout_index for spec in specs] == [0, 1, 2, 3]
    assert {spec.group_size for spec in specs} == {4}


def test_literal_non_ascii_case_id_pins_ensure_ascii_false() -> None:
    (single,) = _specs(["café-1"], 1)
    assert single.prompt_group_id == "pg-47c8b17c1637ec149c1236b5"
    assert single.prompt_group_id != "pg-2935aed797550993ca6845fb"  # the ensure_ascii=True hash
    assert single.episode_id == "café-1"
    assert single.sampling_seed == 1899005057
    group = _specs(["café-1"], 4)
    assert group[2].prompt_group_id == "pg-3feceb8914bc317fe31add6d"
    assert group[2].episode_id == "café-1--3feceb89--r002"
    assert group[2].sampling_seed == 1579443476


@pytest.mark.parametrize(
    ("case_id", "size", "base", "revision", "model"),
    [
        ("demo-0001", 1, 1729, "abc", "offline-v1"),
        ("café-1", 3, 0, "0123abcd", "qwen/Qwen3-VL-8B"),
        ("x" * 200, 2, -7, "", "m"),
        ('quote"and\\slash-漢字', 5, 2**40, "rev", "model ü"),
    ],
)
def test_matches_inline_recomputation(case_id: str, size: int, base: int, revision: str, model: str) -> None:
    specs = _specs([case_id], size, base=base, revision=revision, model=model)
    group_id = _expected_group_id(case_id, revision, model, base, size)
    assert len(specs) == size
    for index, spec in enumerate(specs):
        assert spec.prompt_group_id == group_id
        assert spec.sampling_seed == _expected_seed(base, case_id, index)
        assert 0 <= spec.sampling_seed < 2**31
        if size == 1:
            assert spec.episode_id == case_id
        else:
            assert spec.episode_id == case_id[:150] + "--" + group_id[3:11] + "--r" + str(index).zfill(3)


def test_long_case_id_truncated_to_150_in_multi_rollout_episode_ids() -> None:
    case_id = "y" * 151
    specs = _specs([case_id], 2)
    assert specs[1].episode_id.startswith("y" * 150 + "--")
    assert specs[1].episode_id.endswith("--r001")
    assert len(specs[1].episode_id) == 150 + 2 + 8 + 2 + 4
    assert _specs([case_id], 1)[0].episode_id == case_id  # single rollout: never truncated


def test_specs_are_case_major_and_carry_the_case() -> None:
    cases = [_case("b"), _case("a")]
    specs = rollout_specs(cases, rollouts_per_case=2, base_sampling_seed=1, policy_revision="r", model="m")
    assert [(spec.case_id, spec.rollout_index) for spec in specs] == [("b", 0), ("b", 1), ("a", 0), ("a", 1)]
    assert specs[0].case is cases[0] and specs[2].case is cases[1]


def test_group_id_depends_on_every_input() -> None:
    reference = _specs(["demo-0001"], 2)[0].prompt_group_id
    assert _specs(["demo-0001"], 3)[0].prompt_group_id != reference
    assert _specs(["demo-0001"], 2, base=1730)[0].prompt_group_id != reference
    assert _specs(["demo-0001"], 2, revision="abd")[0].prompt_group_id != reference
    assert _specs(["demo-0001"], 2, model="offline-v2")[0].prompt_group_id != reference


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"rollouts_per_case": 0}, "--rollouts-per-case"),
        ({"rollouts_per_case": True}, "--rollouts-per-case"),
        ({"base_sampling_seed": "1729"}, "--base-sampling-seed"),
        ({"model": None}, "model must be a string"),
        ({"policy_revision": 5}, "policy_revision must be a string"),
    ],
)
def test_rollout_spec_argument_errors(kwargs, fragment: str) -> None:
    arguments = {"rollouts_per_case": 1, "base_sampling_seed": 1729, "policy_revision": "abc", "model": "m"}
    arguments.update(kwargs)
    with pytest.raises(SelectionError, match=fragment):
        rollout_specs([_case("a")], **arguments)


# --- positive_int, safe_trace_filename ----------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [(1, 1), ("4", 4), (" 7 ", 7), (3.0, 3)])
def test_positive_int_accepts(value, expected: int) -> None:
    assert positive_int(value, "rollouts per case") == expected


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (0, "rollouts per case must be at least 1"),
        ("-3", "must be at least 1"),
        ("x", "rollouts per case must be an integer"),
        (None, "must be an integer"),
        (True, "must be an integer"),
        (2.5, "must be an integer"),
    ],
)
def test_positive_int_rejects(value, fragment: str) -> None:
    with pytest.raises(SelectionError, match=fragment):
        positive_int(value, "rollouts per case")


@pytest.mark.parametrize(
    ("identifier", "expected"),
    [
        ("demo-0001", "demo-0001.json"),
        ("demo-0001--533936d0--r003", "demo-0001--533936d0--r003.json"),
        ("a/b c:d", "a_b_c_d.json"),
        ("../etc/passwd", ".._etc_passwd.json"),
        ("café_1.v2", "café_1.v2.json"),  # str.isalnum is Unicode-aware
        ("漢字", "漢字.json"),
        ("", ".json"),
        (12, "12.json"),
    ],
)
def test_safe_trace_filename(identifier, expected: str) -> None:
    assert safe_trace_filename(identifier) == expected
