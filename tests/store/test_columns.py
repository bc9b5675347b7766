"""The writer's Arrow columns, built from buffers, hold exactly the values given (nulls, non-ASCII
text, bytes; a large value shared, not copied), building them loads no pandas, and pyarrow
allocates with the system allocator once eviscene is imported."""

import os
import subprocess
import sys

import pyarrow as pa

from eviscene.store import columns
from eviscene.store.columns import binary_column, int_column, string_column


def test_strings_with_nulls_and_non_ascii_text():
    column = string_column(["ab", None, "é✓", ""])
    assert column.type == pa.string() and column.null_count == 1
    assert column.to_pylist() == ["ab", None, "é✓", ""]
    column.validate(full=True)
    # "é✓" is 2 + 3 bytes: offsets count bytes, not characters.
    assert column.buffers()[1].to_pybytes() == (0).to_bytes(4, "little") + (2).to_bytes(4, "little") * 2 + (7).to_bytes(4, "little") * 2


def test_ascii_text_bytes_and_binary():
    assert string_column(["ev-1", "ev-22"]).to_pylist() == ["ev-1", "ev-22"]
    assert string_column([b'{"a":1}', "{}".encode()]).to_pylist() == ['{"a":1}', "{}"]
    blob = string_column([b"\x00\xff", b"x"], pa.binary())
    assert blob.type == pa.binary() and blob.to_pylist() == [b"\x00\xff", b"x"]
    assert string_column([None, None]).to_pylist() == [None, None]


def test_ints_with_nulls_and_timestamps():
    column = int_column([1, None, -3, 2**31 - 1], pa.int32())
    assert column.to_pylist() == [1, None, -3, 2**31 - 1] and column.null_count == 1
    assert int_column([5, 6], pa.int64()).to_pylist() == [5, 6]
    stamps = int_column([1_700_000_000_000_000], pa.timestamp("us", tz="UTC"))
    assert str(stamps[0]) == "2023-11-14 22:13:20+00:00"


def test_a_column_over_the_offset_limit_is_split_into_chunks(monkeypatch):
    monkeypatch.setattr(columns, "_MAX_STRING_BYTES", 5)  # 2 GiB in production
    column = string_column(["abc", "de", "fgh", None])
    # 8 bytes > 5: halved into "abc"+"de" (5 bytes, fits) and "fgh"+null (3 bytes).
    assert isinstance(column, pa.ChunkedArray) and [len(chunk) for chunk in column.chunks] == [2, 2]
    assert column.to_pylist() == ["abc", "de", "fgh", None]


def test_a_large_value_is_its_own_chunk_and_not_copied(monkeypatch):
    monkeypatch.setattr(columns, "_OWN_CHUNK_BYTES", 4)  # a MiB in production
    large, other = b"large!", b"also big"
    column = binary_column([b"a", b"bc", large, b"d", other])
    assert column.to_pylist() == [b"a", b"bc", large, b"d", other]
    assert [len(chunk) for chunk in column.chunks] == [2, 1, 1, 1]
    # the chunk's value buffer is the bytes object's own memory
    assert column.chunks[1].buffers()[2].address == pa.py_buffer(large).address
    assert binary_column([b"x", b"y"]).to_pylist() == [b"x", b"y"] and binary_column([]).to_pylist() == []
    assert binary_column([large]).type == pa.binary() and binary_column([large]).to_pylist() == [large]


def test_building_columns_loads_no_pandas():
    probe = (
        "import sys, pyarrow as pa\n"
        "from eviscene.store.columns import int_column, string_column\n"
        "string_column(['a', None]); int_column([1, None], pa.int32())\n"
        "print('pandas' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd="/")
    assert result.stdout.strip() == "False", result.stderr


def test_pyarrow_uses_the_system_allocator_unless_told_otherwise():
    """Importing eviscene before pyarrow picks the system allocator (mimalloc's huge pages
    stalled large segment writes in the kernel); a pool the user names is kept."""
    probe = "import eviscene, pyarrow as pa; print(pa.default_memory_pool().backend_name)"
    run = lambda env: subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd="/", env=env)
    plain = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    assert run(plain).stdout.strip() == "system"
    assert run({**plain, "ARROW_DEFAULT_MEMORY_POOL": "jemalloc"}).stdout.strip() == "jemalloc"
