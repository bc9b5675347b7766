"""The strict JSONL reader on every CPU reads what the reader on one reads: the same rows with
the same line numbers, and the same first error after the same rows, wherever the file is cut
and whether or not its parts' processes run. Real child processes, files cut into parts of a
few bytes (PART_MIN_BYTES lowered) over four CPUs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from eviscene.rules import jsonl_parts
from eviscene.rules.jsonl import JsonlError, iter_jsonl_bytes
from eviscene.rules.jsonl_parts import _parts, iter_jsonl_field


@pytest.fixture
def four_parts(monkeypatch):
    """Files of a few dozen bytes cut into up to four parts."""
    monkeypatch.setattr(jsonl_parts, "PART_MIN_BYTES", 8)
    monkeypatch.setattr(jsonl_parts, "_cpus", lambda: 4)


def _reading(read, *args):
    """Everything a reading gives: its items, then ("error", line, problem, message) if it raises."""
    got = []
    try:
        for item in read(*args):
            got.append(item)
    except JsonlError as error:
        got.append(("error", error.line, error.problem, str(error)))
    return got


def _one_cpu(data: bytes, path: str, key: str | tuple[str, ...] | None):
    def field(row):
        return tuple(map(row.get, key)) if isinstance(key, tuple) else None if key is None else row.get(key)
    return ((number, field(row)) for number, row in iter_jsonl_bytes(data, path))


ROWS = [b'{"e": "a", "n": 1}', b"", b'{"e": "b"}\r', b"  ", b'{"n": 2}', b'{"e": "c\\u2028d", "k": [1, {"e": 3}]}', b'{"e": null}']
FILES = {
    "rows": b"\n".join(ROWS),
    "rows, newline at the end": b"\n".join(ROWS) + b"\n",
    "byte-order mark": b"\xef\xbb\xbf" + b"\n".join(ROWS),  # refused, as Python's json refuses it
    "blank lines only": b"\n \n\t\n",
    "one line": b'{"e": "only"}',
    "empty": b"",
    "a later line's byte-order mark": b'{"e": "a"}\n{"e": "b"}\n\xef\xbb\xbf{"e": "c"}\n{"e": "d"}',
    "bad JSON in the last part": b"\n".join(ROWS) + b'\n{"e": \n{"e": "z"}',
    "bad JSON in the first part": b'{"e": 1\n' + b"\n".join(ROWS),
    "two faults": b"\n".join(ROWS) + b'\n[1]\n{"e": "x"}\n{"a": 1, "a": 2}\n',
    "not UTF-8": b"\n".join(ROWS) + b'\n{"e": "\xff"}\n',
    "NaN": b"\n".join(ROWS) + b'\n{"e": NaN}',
    "a lone surrogate": b"\n".join(ROWS) + b'\n{"e": "\\ud800"}',
}


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("key", ["e", None, ("e",), ("e", "n")])
def test_every_cpu_reads_what_one_reads(four_parts, name, key):
    data = FILES[name]
    assert _reading(iter_jsonl_field, data, "f.jsonl", key) == _reading(_one_cpu, data, "f.jsonl", key)


def test_the_parts_are_whole_lines_whatever_the_cut():
    for data in FILES.values():
        for count in range(1, 7):
            parts = _parts(data, count)
            assert 1 <= len(parts) <= count
            assert b"\n".join(data[a:b] for a, b in parts) == data


def _counting_reads_here(monkeypatch) -> list[int]:
    """The parts read in this process (read_rows here: the first part, and any part whose
    process did not answer), by their first byte."""
    read_here = []
    read_rows = jsonl_parts.read_rows

    def counted(data, start, *rest):
        read_here.append(start)
        return read_rows(data, start, *rest)

    monkeypatch.setattr(jsonl_parts, "read_rows", counted)
    return read_here


def test_the_other_parts_are_read_by_processes_of_their_own(four_parts, monkeypatch):
    read_here = _counting_reads_here(monkeypatch)
    data = FILES["rows"] * 3
    for key in ("e", ("e",), ("e", "n")):  # a tuple of one key comes back a tuple from a process too
        read_here.clear()
        assert _reading(iter_jsonl_field, data, "f.jsonl", key) == _reading(_one_cpu, data, "f.jsonl", key)
        assert read_here == [0]


def test_a_part_whose_process_fails_is_read_here(four_parts, monkeypatch):
    data = FILES["two faults"]
    expected = _reading(_one_cpu, data, "f.jsonl", "e")
    for executable in ("/nonexistent/python", "/bin/false"):  # cannot start; starts and fails
        monkeypatch.setattr(sys, "executable", executable)
        read_here = _counting_reads_here(monkeypatch)
        assert _reading(iter_jsonl_field, data, "f.jsonl", "e") == expected
        assert len(read_here) > 1


def _children() -> list[int]:
    mine = str(os.getpid())
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if stat.rsplit(")", 1)[1].split()[1] == mine:
                found.append(int(entry))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_reader_left_early_leaves_no_process(four_parts):
    before = _children()
    rows = iter_jsonl_field(FILES["rows"] * 3, "f.jsonl", "e")
    assert next(rows) == (1, "a")
    rows.close()
    assert _children() == before
