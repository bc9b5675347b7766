from pathlib import Path

import pytest

from eviscene.rules.jsonl import JsonlError, iter_jsonl_bytes, read_jsonl_numbered


def test_a_bad_line_3_names_the_file_and_line_3(tmp_path: Path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"a": 1}\n\n{"a": \n{"a": 2}\n')
    with pytest.raises(JsonlError) as error:
        read_jsonl_numbered(path)
    assert (error.value.path, error.value.line, error.value.problem) == (path, 3, "malformed")
    assert str(error.value).startswith(f"{path}:3: malformed JSON: ")


@pytest.mark.parametrize(
    ("content", "line", "problem", "message"),
    [
        (b'{"a": NaN}\n', 1, "malformed", "malformed JSON: NaN is not valid JSON"),
        (b'{"a": 1, "a": 2}\n', 1, "malformed", "malformed JSON: duplicate key 'a'"),
        (b'{"a": 1}\n[1]\n', 2, "not_object", "expected a JSON object, got an array"),
        (b'{"a": 1}\n{"a": "\xff"}\n', 2, "not_utf8", "not UTF-8 (invalid start byte)"),
    ],
)
def test_strict_faults(content, line, problem, message):
    with pytest.raises(JsonlError) as error:
        list(iter_jsonl_bytes(content, "f.jsonl"))
    assert (error.value.line, error.value.problem, str(error.value)) == (line, problem, f"f.jsonl:{line}: {message}")


def test_rows_keep_their_line_numbers_and_raw_separators():
    content = '\ufeff{"t": "a\u2028b"}\r\n\n{"t": 2}'.encode()
    assert list(iter_jsonl_bytes(content, "f.jsonl")) == [(1, {"t": "a\u2028b"}), (3, {"t": 2})]


def test_a_missing_file_is_named(tmp_path: Path):
    with pytest.raises(JsonlError, match=r"absent\.jsonl: file not found$"):
        read_jsonl_numbered(tmp_path / "absent.jsonl")


def test_a_json_list_file_numbers_rows_by_position(tmp_path: Path):
    path = tmp_path / "cases.json"
    path.write_text('[{"a": 1}, {"a": 2}]')
    assert read_jsonl_numbered(path) == [(1, {"a": 1}), (2, {"a": 2})]
    path.write_text('[{"a": 1}, 3]')
    with pytest.raises(JsonlError, match=r"cases\.json:2: expected a JSON object, got a number"):
        read_jsonl_numbered(path)
