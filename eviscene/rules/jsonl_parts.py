"""The strict JSONL reader over a large file, on every CPU: the file is cut at newlines into a
part per CPU, the first part is read here and each other one meanwhile by a Python process of
its own (orjson holds the GIL: threads would take turns). The caller gets what
`iter_jsonl_bytes` reads, field by field: the same rows with the same line numbers, in order,
and the same first error after the same rows. A part whose process cannot start or fails is
read here.

The processes are plain `python -m eviscene.rules.jsonl_parts` children, not multiprocessing's:
spawning would import the caller's main module again (running a script's top level a second
time), and forking a process with threads can deadlock.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
from itertools import chain
from pathlib import Path
from typing import IO, Any, Iterator

from eviscene.rules.jsonl import JsonlError, iter_jsonl_bytes, parse_jsonl_line, split_lines

# A part below this size costs less to read here than a process costs to start and be sent it.
PART_MIN_BYTES = 32 << 20
# Where `eviscene` is imported from: the processes import it from there too.
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])

# A part's reading: its line count, (line in the part, the row's field) of each row before its
# first fault, and that fault's line in the part (None without one).
PartRows = tuple[int, list[tuple[int, Any]], int | None]
# The field(s) read from each row: one key, several (a tuple of their values), or none.
Key = str | tuple[str, ...] | None
_SEVERAL_KEYS = "--keys"  # a part's process is told a tuple of keys after it


def iter_jsonl_field(data: bytes, path: str | Path, key: Key) -> Iterator[tuple[int, Any]]:
    """(line number, row.get(key)) for every row `iter_jsonl_bytes(data, path)` yields (None
    for each when `key` is None, a tuple of the fields when it is a tuple of keys), and its
    first error where it raises it."""
    count = 1 if getattr(sys, "frozen", False) else min(_cpus(), len(data) // PART_MIN_BYTES)
    parts = _parts(data, count)
    if len(parts) == 1:
        for number, row in iter_jsonl_bytes(data, path):
            yield number, _field(row, key)
        return
    readers = [_PartReader(data, start, end, path, key) for start, end in parts[1:]]
    try:
        own = read_rows(data, *parts[0], path, key)
        lines_before = 0
        for (start, end), (lines, fields, fault) in zip(parts, chain([own], (reader.result() for reader in readers))):
            for number, value in fields:
                yield lines_before + number, value
            if fault is not None:
                _raise_fault(data, start, end, path, lines_before, fault)
            lines_before += lines
    finally:
        for reader in readers:
            reader.stop()


def read_rows(data: bytes, start: int, end: int, path: str | Path, key: Key) -> PartRows:
    """The reading of data[start:end], its lines numbered from 1."""
    fields: list[tuple[int, Any]] = []
    lines = 0
    for lines, raw_line in enumerate(split_lines(data, start, end), start=1):
        try:
            row = parse_jsonl_line(raw_line, path, lines)
        except JsonlError:
            return lines, fields, lines
        if row is not None:
            fields.append((lines, _field(row, key)))
    return lines, fields, None


def _field(row: dict[str, Any], key: Key) -> Any:
    if isinstance(key, tuple):
        return tuple(row.get(name) for name in key)
    return None if key is None else row.get(key)


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _parts(data: bytes, count: int) -> list[tuple[int, int]]:
    """(start, end) of up to `count` runs of whole lines covering data, each cut at a newline
    that belongs to neither part: split on it, the parts' lines are the file's lines."""
    parts, start = [], 0
    for k in range(1, count):
        cut = data.find(b"\n", max(start, len(data) * k // count))
        if cut < 0:
            break
        parts.append((start, cut))
        start = cut + 1
    return [*parts, (start, len(data))]


def _raise_fault(data: bytes, start: int, end: int, path: str | Path, lines_before: int, fault: int) -> None:
    """Raise the error of the part's line `fault`, worded as the reader here words it and
    numbered in the file."""
    for number, raw_line in enumerate(split_lines(data, start, end), start=1):
        if number == fault:
            parse_jsonl_line(raw_line, path, lines_before + number)
            break
    raise AssertionError(f"{path}:{lines_before + fault}: refused by a part's process, read here without a fault")


class _PartReader:
    """data[start:end] read by a process of its own, sent its bytes by a thread while this
    process reads its own part; read here where the process cannot start or fails."""

    def __init__(self, data: bytes, start: int, end: int, path: str | Path, key: Key) -> None:
        self.data, self.start, self.end, self.path, self.key = data, start, end, path, key
        self.sender: threading.Thread | None = None
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [_PACKAGE_ROOT, os.environ.get("PYTHONPATH")]))}
        try:
            self.process: subprocess.Popen[bytes] | None = subprocess.Popen(
                [sys.executable, "-m", __name__, str(path), *_key_args(key)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
            )
        except (OSError, ValueError):  # no interpreter to start (an embedded Python), no processes allowed
            self.process = None
            return
        self.sender = threading.Thread(target=self._send, args=(self.process.stdin,), daemon=True)
        self.sender.start()

    def _send(self, sink: IO[bytes]) -> None:
        try:
            with sink:
                sink.write(memoryview(self.data)[self.start:self.end])
        except OSError:  # the process ended first: result() reads the part here
            pass

    def result(self) -> PartRows:
        if self.process is not None and self.process.stdout is not None:
            try:
                answer = self.process.stdout.read()
                if self.process.wait() == 0:
                    return pickle.loads(answer)
            except (OSError, pickle.UnpicklingError, EOFError):
                pass
            finally:
                self.stop()
        return read_rows(self.data, self.start, self.end, self.path, self.key)

    def stop(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
            if self.process.stdout is not None:
                self.process.stdout.close()
            self.process = None
        if self.sender is not None:
            self.sender.join()
            self.sender = None


def _key_args(key: Key) -> tuple[str, ...]:
    """`key` as a part's process is told it (`_serve`)."""
    if key is None:
        return ()
    return (key,) if isinstance(key, str) else (_SEVERAL_KEYS, *key)


def _serve(path: str, *key_args: str) -> None:
    """A part's process: the part on stdin, its PartRows pickled on stdout."""
    key: Key = tuple(key_args[1:]) if key_args[:1] == (_SEVERAL_KEYS,) else (key_args[0] if key_args else None)
    part = sys.stdin.buffer.read()
    sys.stdout.buffer.write(pickle.dumps(read_rows(part, 0, len(part), path, key), protocol=pickle.HIGHEST_PROTOCOL))


if __name__ == "__main__":
    _serve(*sys.argv[1:])
