import re

import pytest

from eviscene.errors import ReleaseError
from eviscene.release import load_release
from eviscene.release.gold import load_gold, require_gold_for


def test_load_gold_keyed_by_case_id_with_whole_rows(make_release) -> None:
    gold_rows = [
        {"case_id": "demo-0002", "label": "manipulated", "reference_chain": {"sources": []}},
        {"case_id": "demo-0001", "label": "authentic"},
    ]
    release = load_release(make_release(gold=gold_rows))
    gold = load_gold(release)
    assert list(gold) == ["demo-0002", "demo-0001"]
    assert gold["demo-0002"] == gold_rows[0]


def _gold_error(make_release, rows) -> str:
    release = load_release(make_release(gold=rows))
    with pytest.raises(ReleaseError) as error:
        load_gold(release)
    return str(error.value)


def test_label_outside_label_set(make_release) -> None:
    message = _gold_error(make_release, [{"case_id": "a", "label": "authentic"}, {"case_id": "b", "label": "fake"}])
    assert re.search(r"evaluation_gold\.jsonl:2: case 'b' label 'fake' is not in the release label_set", message)


def test_missing_label(make_release) -> None:
    message = _gold_error(make_release, [{"case_id": "a"}])
    assert re.search(r"evaluation_gold\.jsonl:1: case 'a' has no 'label'", message)


@pytest.mark.parametrize("case_id", [None, "", 3])
def test_bad_case_id(make_release, case_id) -> None:
    row = {"label": "authentic"} if case_id is None else {"case_id": case_id, "label": "authentic"}
    message = _gold_error(make_release, [row])
    assert re.search(r"evaluation_gold\.jsonl:1: 'case_id' must be a non-empty string", message)


def test_duplicate_case_id(make_release) -> None:
    message = _gold_error(
        make_release,
        [{"case_id": "x", "label": "authentic"}, {"case_id": "y", "label": "authentic"}, {"case_id": "x", "label": "unverifiable"}],
    )
    assert re.search(r"evaluation_gold\.jsonl:3: duplicate case_id 'x' \(first on line 1\)", message)


def test_malformed_and_non_object_rows(make_release) -> None:
    release = load_release(make_release())
    release.artifacts.evaluation_gold.write_text('{"case_id": "a", "label": "authentic"}\n{oops\n')
    with pytest.raises(ReleaseError, match=r"evaluation_gold\.jsonl:2: malformed JSON"):
        load_gold(release)
    release.artifacts.evaluation_gold.write_text('\n"a string"\n')
    with pytest.raises(ReleaseError, match=r"evaluation_gold\.jsonl:2: expected a JSON object"):
        load_gold(release)


def test_require_gold_for(make_release) -> None:
    """The missing rows' file is named: the error named no file, so which gold lacked them was a guess."""
    release = load_release(make_release())
    gold, gold_file = load_gold(release), release.artifacts.evaluation_gold
    require_gold_for(gold, ["demo-0001", "demo-0002"], gold_file)
    with pytest.raises(ReleaseError) as refused:
        require_gold_for(gold, ["demo-0001", "demo-0003"], gold_file)
    assert str(refused.value) == f"{release.root / 'private' / 'evaluation_gold.jsonl'}: evaluation-gold rows missing runtime case IDs: demo-0003"
    many = [f"m{i:02d}" for i in range(12)]
    with pytest.raises(ReleaseError, match=r"m00, .*, m09 \(and 2 more\)$"):
        require_gold_for(gold, many, gold_file)
