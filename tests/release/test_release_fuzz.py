"""Fuzzing the release inputs a run checks before its first episode: whatever bytes the
gold, a protocol or the source-access policy hold, loading them either succeeds or fails
with a `ReleaseError` naming the file (and the line, for a row at fault), never another
exception."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eviscene.errors import ReleaseError
from eviscene.eval.gold_import import read_scoring_files
from eviscene.eval.preflight import check_scoring_inputs
from eviscene.release import load_cases, load_release
from eviscene.tools.policy import load_source_policy

LABELS = ["authentic", "out_of_context", "manipulated", "unverifiable"]  # the label set of conftest's releases

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
    | st.sampled_from(LABELS + ["demo-0001", "demo-0002"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
gold_rows = st.lists(
    st.fixed_dictionaries({}, optional={"case_id": st.sampled_from(["demo-0001", "demo-0002", "", " x", 7]),
                                        "label": st.sampled_from(LABELS + ["satire", None, 1]),
                                        "note": json_values}),
    max_size=4,
)


def _check(release_cases: Path) -> None:
    release = load_release(release_cases)
    check_scoring_inputs(release, load_cases(release), read_scoring_files(release, None))


@FUZZ
@given(data=st.binary(max_size=200))
def test_any_gold_bytes_pass_or_name_the_file(make_release, data):
    cases = make_release()
    gold = cases.parent.parent / "private" / "evaluation_gold.jsonl"
    gold.write_bytes(data)
    try:
        _check(cases)
    except ReleaseError as exc:
        assert str(exc).startswith((f"{gold}:", "evaluation-gold rows missing runtime case IDs: ")), exc


@FUZZ
@given(rows=gold_rows, cut=st.integers(min_value=0, max_value=400))
def test_gold_rows_pass_only_when_every_case_has_one_valid_row(make_release, rows, cut):
    cases = make_release()
    gold = cases.parent.parent / "private" / "evaluation_gold.jsonl"
    text = "".join(json.dumps(row) + "\n" for row in rows)
    kept = text[: len(text) - cut] if 0 < cut < len(text) else text
    if kept.endswith("\n") or kept.rstrip() == text.rstrip():
        kept = text  # a cut between rows or of the last newline only: the same rows
    gold.write_text(kept, encoding="utf-8")
    valid = (
        kept == text  # a row cut off mid-way is malformed JSON
        and [row.get("case_id") for row in rows] in (["demo-0001", "demo-0002"], ["demo-0002", "demo-0001"])
        and all(row.get("label") in LABELS for row in rows)
    )
    try:
        _check(cases)
        assert valid, rows
    except ReleaseError as exc:
        assert not valid, exc
        message = str(exc)
        assert message.startswith(f"{gold}:") or message.startswith("evaluation-gold rows missing runtime case IDs: "), message


@FUZZ
@given(data=st.binary(max_size=200) | json_values.map(lambda v: json.dumps(v).encode()))
def test_any_policy_or_protocol_bytes_pass_or_name_the_file(make_release, base_manifest, data):
    cases = make_release(manifest=base_manifest(artifacts={
        "evaluation_gold": "private/evaluation_gold.jsonl",
        "classification_protocol": "private/classification_protocol.json",
    }))
    root = cases.parent.parent
    protocol = root / "private" / "classification_protocol.json"
    policy = root / "private" / "policy.json"
    protocol.write_bytes(data)
    policy.write_bytes(data)
    try:
        _check(cases)
    except ReleaseError as exc:
        assert str(exc).startswith(str(protocol)), exc
    try:
        load_source_policy(policy)
    except ReleaseError as exc:
        assert str(exc).startswith(str(policy)), exc
