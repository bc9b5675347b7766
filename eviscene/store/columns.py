"""Arrow columns built straight from their buffers, for the writer's batches.

`pa.array` on any Python list or numpy array first asks whether it is a pandas object, and
that question imports pandas: most of a second, on the event loop, in the writer's first batch
(every episode waits), and more memory for good. Building the offsets, values and validity
buffers here skips that and pyarrow's per-value type dispatch (each step below is one C loop).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

_MAX_STRING_BYTES = 2**31 - 1  # int32 offsets: a larger column is split into chunks


def _validity(values: Sequence[object]) -> tuple[pa.Buffer | None, int]:
    """Arrow's validity bitmap (bit set = present) and the null count; no bitmap without nulls."""
    nulls = values.count(None)  # type: ignore[attr-defined]
    if not nulls:
        return None, 0
    present = np.fromiter((value is not None for value in values), dtype=bool, count=len(values))
    return pa.py_buffer(np.packbits(present, bitorder="little")), nulls


def int_column(values: list[int | None], arrow_type: pa.DataType) -> pa.Array:
    """int32/int64 (or a type stored as int64, e.g. timestamp[us]) from Python ints and Nones."""
    validity, nulls = _validity(values)
    present = [0 if value is None else value for value in values] if nulls else values
    data = np.array(present, dtype=np.int32 if arrow_type.bit_width == 32 else np.int64)
    return pa.Array.from_buffers(arrow_type, len(values), [validity, pa.py_buffer(data)], null_count=nulls)


def string_column(values: list[str | None] | list[bytes | None], arrow_type: pa.DataType = pa.string()) -> pa.Array | pa.ChunkedArray:
    """string from str (or from bytes already UTF-8 encoded), or binary from bytes; Nones are nulls."""
    validity, nulls = _validity(values)
    if nulls:
        present: list = [b"" if value is None else value.encode() if isinstance(value, str) else value for value in values]
        data = b"".join(present)
    elif values and isinstance(values[0], str):
        text = "".join(values)  # type: ignore[arg-type]
        data = text.encode()
        present = values
        if len(data) != len(text):  # not all ASCII: str lengths are not byte lengths
            present = [value.encode() for value in values]  # type: ignore[union-attr]
    else:
        present = values
        data = b"".join(present)
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, present), dtype=np.int64, count=len(values)), out=offsets[1:])
    if offsets[-1] > _MAX_STRING_BYTES:
        if len(values) == 1:
            raise ValueError("a single string of more than 2 GiB does not fit an Arrow string column")
        half = len(values) // 2
        return _chunked([string_column(values[:half], arrow_type), string_column(values[half:], arrow_type)], arrow_type)  # type: ignore[arg-type]
    buffers = [validity, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)]
    return pa.Array.from_buffers(arrow_type, len(values), buffers, null_count=nulls)


_OWN_CHUNK_BYTES = 1 << 20


def binary_column(values: list[bytes]) -> pa.Array | pa.ChunkedArray:
    """binary from bytes, as string_column, but a value of a MiB or more is a chunk of its own
    whose buffer is the bytes object itself: a 1.4 GB imported file was copied whole into its
    batch's joined buffer (a second of page faults, 1.4 GB more at the peak)."""
    chunks: list[pa.Array | pa.ChunkedArray] = []
    run: list[bytes] = []
    for value in values:
        if len(value) < _OWN_CHUNK_BYTES:
            run.append(value)
            continue
        if run:
            chunks.append(string_column(run, pa.binary()))
            run = []
        chunks.append(string_column([value], pa.binary()))  # b"".join of one bytes object is that object
    if run or not chunks:
        chunks.append(string_column(run, pa.binary()))
    return chunks[0] if len(chunks) == 1 else _chunked(chunks, pa.binary())


def _chunked(parts: list[pa.Array | pa.ChunkedArray], arrow_type: pa.DataType) -> pa.ChunkedArray:
    """One chunked array of the parts, in order, a chunked part's chunks taken one by one."""
    return pa.chunked_array([chunk for part in parts for chunk in getattr(part, "chunks", [part])], arrow_type)
