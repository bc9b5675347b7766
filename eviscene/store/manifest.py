"""A run folder's segment manifest, `segments.jsonl`: one line per committed segment file
(name, rows, sha256 and, for events, the seq range and the hashes at both ends), appended
and fsynced by the run's writer. The manifest line is the commit: readers read the files it
lists and nothing else, verify checks each file against its line, and sealing records the
lines in the archive. A compacted segment's line names the files it `replaces`.

Commit order (each step durable before the next):
  write `.<name>.tmp`, fsync it; rename to `<name>`; fsync the folder; append the line,
  fsync the manifest.
A writer killed before the line leaves a file no reader sees; the next holder of the run's
lock (`recover_folder`: a resume or a seal) records it if it continues the chain, so a batch
that reached the disk is never lost, and deletes unfinished `.tmp` files. What no crash
leaves is refused, the folder untouched: segments without a manifest (the first holder
writes it before any segment), and an unrecorded segment past a gap in the chain (its
predecessor was removed). A crash never leaves a manifest listing a file twice or two
committed event segments with overlapping seqs either; readers refuse such a manifest.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from eviscene.errors import LogIntegrityError, os_fault
from eviscene.store.faults import checkpoint

if TYPE_CHECKING:
    import pyarrow as pa

MANIFEST = "segments.jsonl"
EVENTS_FILE = re.compile(r"^events-(\d{12})-(\d{12})\.parquet$")
BLOBS_FILE = re.compile(r"^blobs-[0-9a-f]{16}-\d{9}\.parquet$")


@dataclass(frozen=True)
class ManifestEntry:
    file: str
    rows: int
    sha256: str
    first_seq: int | None = None  # events segments only, as are the three below
    last_seq: int | None = None
    first_prev_hash: str | None = None
    last_hash: str | None = None
    replaces: tuple[str, ...] = field(default_factory=tuple)

    @property
    def is_events(self) -> bool:
        return self.first_seq is not None

    def line(self) -> bytes:
        fields = {k: v for k, v in asdict(self).items() if v is not None and v != ()}
        return orjson.dumps(fields) + b"\n"


class MalformedManifest(LogIntegrityError):
    """A manifest whose lines are not what a writer records (edited): `log verify` reports it
    as a run that does not verify; every other reader refuses the log."""


def _wrongly_typed(entry: ManifestEntry) -> str | None:
    """The first field of a manifest line whose value is of another type than a writer records."""
    texts = {"file": entry.file, "sha256": entry.sha256, "first_prev_hash": entry.first_prev_hash, "last_hash": entry.last_hash}
    numbers = {"rows": entry.rows, "first_seq": entry.first_seq, "last_seq": entry.last_seq}
    for name, value in texts.items():
        if not (isinstance(value, str) or (value is None and name not in ("file", "sha256"))):
            return f"{name} {value!r}"
    for name, value in numbers.items():
        if not ((isinstance(value, int) and not isinstance(value, bool)) or (value is None and name != "rows")):
            return f"{name} {value!r}"
    if not all(isinstance(name, str) for name in entry.replaces):
        return f"replaces {list(entry.replaces)!r}"
    return None


def manifest_path(folder: Path) -> Path:
    return folder / MANIFEST


def check_plain_file(path: Path) -> None:
    """A run folder's manifest and segments are plain files there: a link would have every
    reader (and the SQL sandbox, and a seal into the archive) read a file outside the log, and
    a FIFO would block its reader for good. A file that is not there passes (gone since it was
    listed: its absence is said where it matters)."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        what = "a link" if stat.S_ISLNK(mode) else "not a plain file"
        raise LogIntegrityError(f"{path} is {what}: a run's manifest and segments are plain files in its folder; put the file back")


def read_manifest(folder: Path) -> list[ManifestEntry] | None:
    """Every line, in commit order; None when the folder has no manifest. A last line without
    its newline is an append a crash cut short: not committed, so not returned. Each file a
    line names must be a plain file (`check_plain_file`)."""
    path = manifest_path(folder)
    check_plain_file(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    entries = []
    listed: dict[str, int] = {}
    for number, line in enumerate(data.split(b"\n")[:-1], start=1):
        try:
            raw = orjson.loads(line)
            entry = ManifestEntry(**{**raw, "replaces": tuple(raw.get("replaces", ()))})
        except (orjson.JSONDecodeError, TypeError) as exc:
            raise MalformedManifest(f"{path}:{number}: malformed segment manifest line ({exc})") from None
        if wrong := _wrongly_typed(entry):
            raise MalformedManifest(f"{path}:{number}: malformed segment manifest line ({wrong} is not what a writer records)")
        # A bare segment name: `../x.parquet` would have readers, the sandbox and a seal
        # read (and keep) a file outside the run's folder.
        if not (EVENTS_FILE if entry.is_events else BLOBS_FILE).fullmatch(entry.file):
            raise MalformedManifest(f"{path}:{number}: {entry.file!r} is not the name of a segment in this folder")
        if entry.file in listed:
            raise MalformedManifest(f"{path}:{number}: {entry.file} is listed again (first on line {listed[entry.file]}): its rows would count twice")
        listed[entry.file] = number
        check_plain_file(folder / entry.file)
        entries.append(entry)
    ranges = sorted((e.first_seq, e.last_seq, e.file) for e in committed(entries) if e.is_events)
    for (_, last, file), (first, _, overlapping) in zip(ranges, ranges[1:]):
        if first <= last:  # type: ignore[operator]
            raise MalformedManifest(f"{path}: {file} and {overlapping} both hold seq {first}: their rows would count twice")
    return entries


def committed(entries: list[ManifestEntry]) -> list[ManifestEntry]:
    """The files that make up the run now: every line not replaced by a later compaction."""
    replaced = {name for entry in entries for name in entry.replaces}
    return [entry for entry in entries if entry.file not in replaced]


def holds_events(folder: Path) -> bool:
    """Whether the run folder's manifest lists an events segment. One that lists none (blob
    segments at most: a writer killed between its first batch's blob and events segments)
    holds no event of its run, nothing to read or resume."""
    return any(entry.is_events for entry in read_manifest(folder) or [])


def fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def append_lines(folder: Path, entries: list[ManifestEntry]) -> None:
    """One write (so a reader never sees half a batch's lines), then fsync."""
    path = manifest_path(folder)
    created = not path.exists()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, b"".join(entry.line() for entry in entries))
        os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        fsync_folder(folder)


def write_segment(folder: Path, name: str, table: pa.Table) -> str:
    """Write a segment durably under its final name; returns its sha256. Not yet committed:
    that is the manifest line."""
    import pyarrow as pa  # here, not at the top: a reader lists manifests without loading pyarrow
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    # No dictionary or min/max statistics for a blob's bytes: pyarrow hashes every value trying
    # a dictionary before it gives up on unique kilobyte values, and their min/max serves no
    # reader's filter (70% of writing the blob segments of 100k imported files).
    indexed = [column for column in table.column_names if column != "content"]
    pq.write_table(table, sink, compression="zstd", use_dictionary=indexed, write_statistics=indexed)
    content = sink.getvalue().to_pybytes()
    pending = folder / f".{name}.tmp"
    try:
        fd = os.open(pending, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(content)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:  # disk full, read-only: no half-written file left behind
        pending.unlink(missing_ok=True)
        raise os_fault(exc, path=folder / name, verb="write") from None
    checkpoint("writer.tmp_written")
    os.replace(pending, folder / name)
    checkpoint("writer.renamed")
    return hashlib.sha256(content).hexdigest()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def describe_events_file(path: Path) -> ManifestEntry:
    """The manifest line of an events segment no manifest line lists, computed from the file
    itself; `LogIntegrityError` when it cannot be read (a writer renames only whole files
    into place, so such a file is no batch a killed writer left)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path, columns=["seq", "prev_hash", "hash"])
        if not table.num_rows:
            raise ValueError("no events in it")
    except FileNotFoundError:
        raise  # gone since it was listed (a seal archived it): no damage
    except (pa.ArrowException, OSError, KeyError, ValueError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise LogIntegrityError(
            f"segment {path.name} is on disk but in no manifest line, and unreadable ({reason}): no writer leaves "
            f"such a file; move it out of {path.parent}"
        ) from None
    seqs, hashes = table.column("seq").to_pylist(), table.column("hash").to_pylist()
    return ManifestEntry(
        file=path.name, rows=table.num_rows, sha256=file_sha256(path), first_seq=seqs[0], last_seq=seqs[-1],
        first_prev_hash=table.column("prev_hash")[0].as_py(), last_hash=hashes[-1],
    )


@dataclass(frozen=True)
class UnrecordedFiles:
    """Segment files on disk that the manifest does not list."""

    events: list[ManifestEntry]  # continue the recorded chain: a killed writer's last batches
    blobs: list[str]  # beside them
    # Past the chain's end with a gap before them, or not chaining on from it: what is left
    # when a segment (and its line) was removed. A compaction's unrecorded file lies inside
    # the recorded seqs instead, and only repeats rows.
    stranded: list[ManifestEntry]
    recorded_end: int | None

    def stranded_problem(self) -> str:
        first = self.stranded[0]
        after = f"seq {self.recorded_end}" if self.recorded_end is not None else "the recorded segments"
        return (f"segment {first.file} (seq {first.first_seq}..{first.last_seq}) is on disk but in no manifest line, "
                f"and does not continue the chain after {after}: a segment before it was removed")


def unrecorded_tail(folder: Path, entries: list[ManifestEntry]) -> UnrecordedFiles:
    """Files a writer renamed into place but was killed before recording: the events segments
    that continue the recorded chain (seq and hash) and the blob files beside them; and those
    stranded past a gap."""
    listed = {entry.file for entry in entries}
    names = sorted(os.listdir(folder))
    for name in names:
        if name not in listed and (EVENTS_FILE.match(name) or BLOBS_FILE.match(name)):
            check_plain_file(folder / name)
    events = [e for e in committed(entries) if e.is_events]
    tail_seq = events[-1].last_seq if events else None
    tail_hash = events[-1].last_hash if events else None
    found: list[ManifestEntry] = []
    stranded: list[ManifestEntry] = []
    candidates = sorted(
        (int(m.group(1)), name) for name in names if (m := EVENTS_FILE.match(name)) and name not in listed
    )
    for first_seq, name in candidates:
        if tail_seq is not None and first_seq <= tail_seq:
            continue  # inside the recorded seqs: a compaction's file, killed before its line
        try:
            entry = describe_events_file(folder / name)
        except FileNotFoundError:
            continue  # archived and removed by a seal since the listing
        if stranded or (tail_seq is not None and first_seq != tail_seq + 1) or (
            tail_hash is not None and entry.first_prev_hash != tail_hash
        ):
            stranded.append(entry)
            continue
        found.append(entry)
        tail_seq, tail_hash = entry.last_seq, entry.last_hash
    blobs = [name for name in names if BLOBS_FILE.match(name) and name not in listed]
    return UnrecordedFiles(found, blobs, stranded, tail_seq)


def recover_folder(folder: Path) -> None:
    """Run by whoever takes the run's lock before touching the folder: finish what a killed
    writer left (see the module doc). Needs the lock: nobody else may write the folder."""
    if not folder.is_dir():
        return
    for name in os.listdir(folder):
        if name.startswith(".") and name.endswith(".tmp"):
            (folder / name).unlink(missing_ok=True)
    path = manifest_path(folder)
    check_plain_file(path)
    if path.exists():
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):  # a torn last append: it never committed
            with path.open("r+b") as handle:
                handle.truncate(data.rfind(b"\n") + 1)
                os.fsync(handle.fileno())
    entries = read_manifest(folder)
    if entries is None:
        segments = [name for name in sorted(os.listdir(folder)) if EVENTS_FILE.match(name) or BLOBS_FILE.match(name)]
        if segments:
            raise LogIntegrityError(
                f"{path} is missing beside {len(segments)} segment file(s) ({segments[0]}, …): the manifest was deleted; "
                "nothing was changed (restore it, then run this again)"
            )
        entries = []
        append_lines(folder, [])  # from now on a missing manifest means a deleted one
    tail = unrecorded_tail(folder, entries)
    if tail.stranded:
        raise LogIntegrityError(f"{folder}: {tail.stranded_problem()}; nothing was changed (restore the missing segment, then run this again)")
    import pyarrow.parquet as pq

    lines = [ManifestEntry(file=name, rows=pq.read_metadata(folder / name).num_rows, sha256=file_sha256(folder / name)) for name in tail.blobs]
    if lines or tail.events:
        append_lines(folder, lines + tail.events)
