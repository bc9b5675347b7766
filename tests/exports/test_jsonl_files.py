"""JsonlFiles hands each file's lines to a writer thread and dataset exports read their query's
batches one ahead and parse their records from the batch's own bytes
(eviscene.exports.serialize): the files must hold exactly the lines given,
in order, however the kernel splits the writes; an error must surface and leave no file under
its final name; and a reader stopped early must not hang or keep reading."""

from __future__ import annotations

import errno
import os
import resource
import subprocess
import sys
import threading

import pyarrow as pa
import pytest

from eviscene.exports import serialize
from eviscene.exports.serialize import JsonlFiles, read_ahead


def _line(number: int) -> bytes:
    # canonical_json of {"n": number, "text": ...} written out by hand: keys sorted, compact, UTF-8
    return ('{"n":%d,"text":"%s"}\n' % (number, "é" * (number % 700))).encode("utf-8")


def test_lines_land_in_order_across_many_handovers(tmp_path):
    """Records and ready-made lines, interleaved over three files, several MiB each: every
    file is its lines in the order given."""
    expected = {"a.jsonl": [], "b.jsonl": [], "c.jsonl": []}
    with JsonlFiles(tmp_path, expected) as files:
        for number in range(12_000):
            name = ("a.jsonl", "b.jsonl", "c.jsonl")[number % 3]
            if number % 5 == 0:
                lines = [_line(number).decode(), _line(number + 1).decode()]
                files.add_lines(name, pa.array(lines), ("n", "text"))
                expected[name] += [_line(number), _line(number + 1)]
            else:
                files.add(name, {"text": "é" * (number % 700), "n": number})
                expected[name].append(_line(number))
    for name, lines in expected.items():
        assert (tmp_path / name).read_bytes() == b"".join(lines)
        assert files.counts[name] == len(lines)
    assert sum(len(b"".join(lines)) for lines in expected.values()) > 3 * serialize.WRITE_BUFFER
    assert sorted(os.listdir(tmp_path)) == ["a.jsonl", "b.jsonl", "c.jsonl"]  # no temporary file left


def test_a_short_write_is_continued(tmp_path, monkeypatch):
    """The kernel may take fewer bytes than a writev asks (a regular file near a limit, a
    signal): the rest is written by the next calls, nothing lost or repeated."""
    real_writev = os.writev
    calls = []

    def at_most_4097_bytes(fd, buffers):
        calls.append(len(buffers))
        taken, budget = [], 4097
        for buffer in buffers:
            view = memoryview(buffer)[:budget]
            taken.append(view)
            budget -= len(view)
            if not budget:
                break
        return real_writev(fd, taken)

    monkeypatch.setattr(serialize.os, "writev", at_most_4097_bytes)
    chunks = [_line(n) for n in range(3_000)] + [memoryview(b"tail\n")]
    with open(tmp_path / "out", "wb", buffering=0) as handle:
        serialize._write_all(handle.fileno(), chunks)
    assert (tmp_path / "out").read_bytes() == b"".join(bytes(chunk) for chunk in chunks)
    assert len(calls) > 100


_FULL_DISK = """
import resource, signal, sys
from pathlib import Path
from eviscene.exports.serialize import JsonlFiles
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (3_000_000, resource.RLIM_INFINITY))
out = Path(sys.argv[1])
try:
    with JsonlFiles(out, ["big.jsonl"]) as files:
        for number in range(40_000):
            files.add("big.jsonl", {"n": number, "text": "x" * 200})
except OSError as error:
    print("raised", error.errno)
"""


def test_a_failed_write_is_raised_and_leaves_no_file(tmp_path):
    """A real write error (the file size limit, as a full disk gives ENOSPC): raised to the
    export, and the file never takes its final name."""
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-c", _FULL_DISK, str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"raised {errno.EFBIG}"
    assert not (out / "big.jsonl").exists()
    assert resource.getrlimit(resource.RLIMIT_FSIZE)[0] == resource.RLIM_INFINITY  # this process untouched


def test_an_error_in_the_export_leaves_no_file(tmp_path):
    with pytest.raises(RuntimeError, match="stop"):
        with JsonlFiles(tmp_path, ["a.jsonl"]) as files:
            files.add("a.jsonl", {"n": 1})
            raise RuntimeError("stop")
    assert not (tmp_path / "a.jsonl").exists()


def test_read_ahead_gives_every_item_in_order():
    assert list(read_ahead(iter(range(1_000)), depth=3)) == list(range(1_000))
    assert list(read_ahead(iter([]))) == []


def test_read_ahead_raises_the_readers_error_after_the_items_before_it():
    def items():
        yield 1
        yield 2
        raise ValueError("batch 3 unreadable")

    seen = []
    with pytest.raises(ValueError, match="batch 3 unreadable"):
        for item in read_ahead(items()):
            seen.append(item)
    assert seen == [1, 2]


def test_read_ahead_stopped_early_stops_reading():
    """The caller leaves after two items: the reader thread ends, having read at most the
    items it could hand over (depth) and the one it held."""
    read = []

    def items():
        for number in range(1_000_000):
            read.append(number)
            yield number

    ahead = read_ahead(items(), depth=2)
    assert [next(ahead), next(ahead)] == [0, 1]
    ahead.close()
    assert len(read) <= 2 + 2 + 1
    assert not any(thread.name == "eviscene-read-ahead" for thread in threading.enumerate())


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string()])
def test_utf8_values_are_each_values_bytes_in_place(kind):
    texts = pa.array(["skip", '{"a":"é"}', "", None, "протест — 2024", "x"], type=kind).slice(1, 4)  # an offset into the buffers
    values = serialize.utf8_values(texts)
    assert [bytes(v) for v in values] == [
        b'{"a":"\xc3\xa9"}', b"", b"", b"\xd0\xbf\xd1\x80\xd0\xbe\xd1\x82\xd0\xb5\xd1\x81\xd1\x82 \xe2\x80\x94 2024",
    ]


def test_zoned_timestamps_become_utc_strings_without_loading_pandas():
    """pyarrow's datetimes of a TIMESTAMPTZ column import pandas where it is installed (most of
    a second of `eviscene why`); `rows` reads their epoch microseconds instead."""
    probe = (
        "import sys, duckdb\n"
        "from eviscene.exports.serialize import rows\n"
        "table = duckdb.sql(\"SELECT * FROM (VALUES (TIMESTAMPTZ '2026-11-30 13:39:14.120017+01'), "
        "(TIMESTAMPTZ '1969-12-31 23:59:59.5+00'), (NULL)) t(ts)\").to_arrow_table()\n"
        "print([row['ts'] for row in rows(table)], 'pandas' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd="/")
    assert result.stdout.strip() == "['2026-11-30T12:39:14.120017Z', '1969-12-31T23:59:59.500000Z', None] False", result.stderr
