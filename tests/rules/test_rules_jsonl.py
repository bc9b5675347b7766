import math
from pathlib import Path

import pytest

from eviscene.rules.jsonl import JsonlError, read_fast, iter_jsonl_bytes, read_jsonl_numbered, split_lines


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
        # past a double's range: Python's json read Infinity, which JSON has no more than NaN
        (b'{"a": 1}\n{"t": [0.5, {"x": 1e999}]}\n', 2, "malformed", "malformed JSON: 1e999 is past a double's range: Infinity is not valid JSON"),
        (b'{"t": -1.8E+308}\n', 1, "malformed", "malformed JSON: -1.8E+308 is past a double's range: -Infinity is not valid JSON"),
        (b'{"a": 1, "a": 2}\n', 1, "malformed", "malformed JSON: duplicate key 'a'"),
        (b'{"a": 1}\n[1]\n', 2, "not_object", "expected a JSON object, got an array"),
        (b'{"a": 1}\n{"a": "\xff"}\n', 2, "not_utf8", "not UTF-8 (invalid start byte)"),
        # seed 002's `_load_jsonl` reads the file as utf-8 (not utf-8-sig) and json.loads refuses the mark
        (b'\xef\xbb\xbf{"a": 1}\n', 1, "malformed", "malformed JSON: Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)"),
        # Python's json reads half a character, which the seed cannot write and DuckDB's JSON refuses
        (b'{"a": 1}\n{"s": ["ok", "\\ud800"]}\n', 2, "malformed",
         "malformed JSON: \\ud800 is half of a character (a lone surrogate), which no UTF-8 text holds: line 1 column 15 (char 14)"),
        (b'{"s": "\\udc00\\ud83d"}\n', 1, "malformed",
         "malformed JSON: \\udc00 is half of a character (a lone surrogate), which no UTF-8 text holds: line 1 column 8 (char 7)"),
        # deeper than orjson's limit and Python's recursion: a fault, not a RecursionError
        (b'{"a": ' + b"[" * 50_000 + b"]" * 50_000 + b"}\n", 1, "malformed", "malformed JSON: nested too deeply"),
    ],
)
def test_strict_faults(content, line, problem, message):
    with pytest.raises(JsonlError) as error:
        list(iter_jsonl_bytes(content, "f.jsonl"))
    assert (error.value.line, error.value.problem, str(error.value)) == (line, problem, f"f.jsonl:{line}: {message}")


def test_a_json_list_file_refuses_a_number_past_a_double_as_a_jsonl_line_does(tmp_path: Path):
    """A release's cases as one JSON list (`cases.json`) read `1e999` as Infinity, as its lines did."""
    path = tmp_path / "cases.json"
    path.write_text('[{"a": 1}, {"a": -1e999}]')
    with pytest.raises(JsonlError) as error:
        read_jsonl_numbered(path)
    assert str(error.value) == f"{path}: malformed JSON: -1e999 is past a double's range: -Infinity is not valid JSON"


def test_rows_keep_their_line_numbers_and_raw_separators():
    content = '{"t": "a\u2028b"}\r\n\n{"t": 2}'.encode()
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


@pytest.mark.parametrize(
    ("line", "key"),
    [
        (b'{"a": [{"k:1": "x:y", "k:1": "z"}]}', "k:1"),  # nested, colons in the key and the values
        (b'[{"b": {"c": 1, "d": {"e": 2, "e": 2}}}]', "e"),  # inside an array line: malformed before not-an-object
        (b'{"a\\u003a": 1, "a:": 2}', "a:"),  # the same key, once escaped
        (b'{"x": "::::", "x": "y"}', "x"),  # the dropped value held more colons than the kept one
    ],
)
def test_a_repeated_key_anywhere_is_refused(line, key):
    with pytest.raises(JsonlError) as error:
        list(iter_jsonl_bytes(line + b"\n", "f.jsonl"))
    assert (error.value.problem, str(error.value)) == ("malformed", f"f.jsonl:1: malformed JSON: duplicate key {key!r}")


def _nested_lists(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("line", "row"),
    [
        (b'{"n": 18446744073709551616, "m": -9223372036854775809}', {"n": 2**64, "m": -(2**63) - 1}),  # exact beyond 64 bits
        (b'{"n": 123456789012345678901234567890}', {"n": 123456789012345678901234567890}),
        (b'{"n": 18446744073709551615, "m": -9223372036854775808}', {"n": 2**64 - 1, "m": -(2**63)}),  # 64-bit bounds
        (b'{"s": "one+two e+3", "f": 1e+300}', {"s": "one+two e+3", "f": 1e300}),  # "e+" sends a line to Python
        (b'{"h": 0.1e-400, "g": -1e-400}', {"h": 0.0, "g": -0.0}),  # as Python reads them (1e400 is refused: test_strict_faults)
        # a pair's halves, and an escaped backslash's text (read by Python: "e+")
        (b'{"s": "\\ud83d\\ude00 \\\\ud800", "f": 1e+300}', {"s": "\U0001F600 \\ud800", "f": 1e300}),
        (b'{"a\\u003a": "b\\u003A"}', {"a:": "b:"}),
        (b'{"t": "k: v", "u": {"w": ":"}, "e": [], "o": {}}\r', {"t": "k: v", "u": {"w": ":"}, "e": [], "o": {}}),
        (b'{"d": ' + b'[' * 300 + b']' * 300 + b'}', {"d": _nested_lists(300)}),  # deeper than orjson writes
    ],
)
def test_values_read_as_python_reads_them(line, row):
    assert list(iter_jsonl_bytes(line, "f.jsonl")) == [(1, row)]


def test_integers_beyond_64_bits_go_to_python_and_those_within_do_not():
    """orjson reads an integer outside [-2**63, 2**64) as a float of magnitude 2**63 or more,
    which it writes in exponent form: its "e+" is what sends such a line to Python's reader."""
    import random

    rng = random.Random(5)
    beyond = [2**64, 2**64 + 1, -(2**63) - 1, -(2**64), 10**19 * 2, 10**300]
    beyond += [rng.choice([1, -1]) * rng.randrange(2**64, 10 ** rng.randrange(21, 300)) for _ in range(2000)]
    within = [2**64 - 1, 2**63, 2**63 - 1, -(2**63), 10**19, -(10**18)] + [rng.randrange(-(2**63), 2**64) for _ in range(2000)]
    assert all(read_fast(b'{"n": %d}' % n) is None for n in beyond)
    assert [read_fast(b'{"n": %d}' % n) for n in within] == [{"n": n} for n in within]
    assert [row["n"] for _, row in iter_jsonl_bytes(b"\n".join(b'{"n": %d}' % n for n in beyond), "f.jsonl")] == beyond


def test_lines_are_split_as_bytes_split_does():
    for content in [b"", b"\n", b"a", b"a\n", b"a\n\nb", b"\n\na\r\nb\n\n", "é\u2028\n\u0085x".encode()]:
        assert list(split_lines(content)) == content.split(b"\n")
        for start in range(len(content) + 1):  # and any range of it, as its slice splits
            for end in range(start, len(content) + 1):
                assert list(split_lines(content, start, end)) == content[start:end].split(b"\n")


def test_doubles_read_bit_for_bit_as_python():
    import random
    import struct

    rng = random.Random(13)
    texts = [repr(struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]) for _ in range(5000)]
    texts += [f"{rng.choice('-')}{rng.randrange(10**17)}.{rng.randrange(10**6)}e{rng.randrange(-330, 310)}" for _ in range(5000)]
    texts += ["5e-324", "2.2250738585072014e-308", "1.7976931348623157e308", "-0.0", "0.30000000000000004", "9007199254740993.0"]
    texts = [t for t in texts if math.isfinite(float(t))]  # nan/inf reprs are not JSON, nor numbers past a double's range
    content = "\n".join(f'{{"v": {t}}}' for t in texts).encode()
    got = [struct.pack("<d", row["v"]) for _, row in iter_jsonl_bytes(content, "f.jsonl")]
    assert got == [struct.pack("<d", float(t)) for t in texts]


def test_random_lines_read_as_the_strict_python_reader_reads_them():
    """Lines with repeated keys, colons, escapes and non-ASCII text: every line gives what
    Python's json with the repeated-key hook gives, row or error."""
    import json
    import random

    rng = random.Random(7)
    words = ["a", "b:", ":", "k", "é:ü", "\u2028", "\\u003a", '\\"', "\\\\", "x\\u00e9", "1:2:3", " "]

    def value(depth: int) -> str:
        pick = rng.random()
        if depth > 3 or pick < 0.3:
            return rng.choice(['"' + rng.choice(words) + '"', str(rng.randrange(-10**20, 10**20)), "1.5e3", "true", "null", "-0"])
        if pick < 0.5:
            return "[" + ", ".join(value(depth + 1) for _ in range(rng.randrange(3))) + "]"
        keys = [rng.choice(words) for _ in range(rng.randrange(4))]
        return "{" + ", ".join(f'"{k}": {value(depth + 1)}' for k in keys) + "}"

    def python_reading(line: str):
        try:
            row = json.loads(line, object_pairs_hook=_refuse_repeats)
        except ValueError as exc:
            return ("malformed", str(exc))
        return ("row", row) if isinstance(row, dict) else ("not_object", None)

    repeated = 0
    for _ in range(3000):
        line = value(0) if rng.random() < 0.1 else "{" + ", ".join(f'"{rng.choice(words)}": {value(1)}' for _ in range(rng.randrange(1, 5))) + "}"
        expected = python_reading(line)
        try:
            got = ("row", next(iter(iter_jsonl_bytes(line.encode(), "f.jsonl")))[1])
        except JsonlError as error:
            got = (error.problem, str(error.cause) if error.cause else None)
        repeated += expected[0] == "malformed"
        assert got == expected, line
    assert repeated > 300  # the random lines do hold many repeated keys


def _refuse_repeats(pairs):
    keys = [k for k, _ in pairs]
    for position, k in enumerate(keys):
        if k in keys[:position]:
            raise ValueError(f"duplicate key {k!r}")
    return dict(pairs)
