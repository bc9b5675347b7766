from pathlib import Path

import pytest

from eviscene.errors import ReleaseError
from eviscene.release import read_jsonl, read_jsonl_numbered


def test_reads_objects_and_skips_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"a": 1}\n\n   \r\n{"b": "x"}\r\n')
    assert read_jsonl(path) == [{"a": 1}, {"b": "x"}]
    assert read_jsonl_numbered(path) == [(1, {"a": 1}), (4, {"b": "x"})]


def test_line_separator_inside_a_string_does_not_split_the_row(tmp_path: Path) -> None:
    # json.dumps(ensure_ascii=False) writes U+2028 raw; str.splitlines would cut there.
    path = tmp_path / "rows.jsonl"
    path.write_text('{"t": "a\u2028b\u0085c"}\n{"t": 2}\n', encoding="utf-8")
    assert read_jsonl(path) == [{"t": "a\u2028b\u0085c"}, {"t": 2}]


def test_a_byte_order_mark_is_refused_as_the_seed_refuses_it(tmp_path: Path) -> None:
    """Seed 000's `_load_benchmark` reads cases as utf-8 (not utf-8-sig): json.loads stops at the mark."""
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}\n')
    with pytest.raises(ReleaseError, match=r"rows\.jsonl:1: malformed JSON: Unexpected UTF-8 BOM"):
        read_jsonl(path)


@pytest.mark.parametrize(
    ("content", "line", "fragment"),
    [
        (b'{"a": 1}\n{"a": \n', 2, "malformed JSON"),
        (b'{"a": 1}\n\n[1, 2]\n', 3, "expected a JSON object, got an array"),
        (b'"text"\n', 1, "got a string"),
        (b'null\n', 1, "got null"),
        (b'{"a": 1}\n{"a": NaN}\n', 2, "NaN is not valid JSON"),
        (b'{"a": 1}\n{"a": 1e999}\n', 2, "1e999 is past a double's range: Infinity is not valid JSON"),
        (b'{"a": 1, "a": 2}\n', 1, "duplicate key 'a'"),
        (b'{"a": 1}\n{"a": "\xff"}\n', 2, "not UTF-8"),
    ],
)
def test_errors_name_file_and_line(tmp_path: Path, content: bytes, line: int, fragment: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    with pytest.raises(ReleaseError) as error:
        read_jsonl(path)
    assert str(error.value).startswith(f"{path}:{line}: ")
    assert fragment in str(error.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ReleaseError, match="file not found"):
        read_jsonl(tmp_path / "absent.jsonl")
