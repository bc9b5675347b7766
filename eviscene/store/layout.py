"""Where a log's files live.

A log named `eviscene.duckdb` is:
  eviscene.duckdb                       the DuckDB archive of sealed events (schema/migrations)
  eviscene.duckdb.live/<run_id>/        one folder per run being written (or not yet sealed)
      writer.lock                       flock'd by the run's writer (or a seal); holds its pid
      segments.jsonl                    the segment manifest: one line per committed file (manifest.py)
      events-<first>-<last>.parquet     committed batches (seq range), immutable once recorded
      blobs-<writer>-<n>.parquet        blobs committed with a batch (read distinct by sha256)
  eviscene.duckdb.results/              the viewer's numbers of sealed runs, filed (signed) at seal time
A writer owns only its run folder, so runs write at once, and readers never take a lock
on anything being written.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from eviscene.errors import EvisceneError, InvalidRunIdError, LogIntegrityError
from eviscene.rules.commands import default_log_path
from eviscene.store.manifest import BLOBS_FILE, EVENTS_FILE, ManifestEntry, check_plain_file, committed, read_manifest

# The run directory each run was given (`run.started`'s output_dir), for the resume line of an
# unfinished run: of a sharded run merged from shards given different folders, the last merged
# shard's (`log merge` renumbers each further shard after the events before it).
RECORDED_OUTPUT_DIRS = """
SELECT run_id, payload->>'output_dir' AS output_dir FROM events
WHERE type = 'run.started' AND payload->>'output_dir' IS NOT NULL
QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY seq DESC) = 1
"""

_RUN_ID_MAX = 200
_RUN_ID_MARKS = "._:+=@-"
_RUN_ID = re.compile(rf"[A-Za-z0-9][A-Za-z0-9{re.escape(_RUN_ID_MARKS)}]{{0,{_RUN_ID_MAX - 1}}}")
# The rule `_RUN_ID` applies, in words, for the message that refuses a name.
_RUN_ID_RULE = f"a run id is 1 to {_RUN_ID_MAX} characters (ASCII letters, digits and {_RUN_ID_MARKS}), the first a letter or digit"


def resolve_log_path(path: str | os.PathLike[str] | None) -> Path:
    return Path(path).expanduser().resolve() if path else default_log_path()


def live_root(log_path: Path) -> Path:
    return log_path.with_name(log_path.name + ".live")


def results_root(log_path: Path) -> Path:
    return log_path.with_name(log_path.name + ".results")


def check_not_the_log(name: str, path: str | os.PathLike[str], log_path: Path, *,
                      output_folder: Literal["new", "replaced"] | None = None) -> Path:
    """`path` resolved, unless it is the log, its write-ahead file, its live folder, its results
    folder (the viewer's signed numbers) or anything inside them: no output overwrites the log or
    what is filed beside it. An `output_folder` the writer makes ("new": it must be new or empty)
    or puts in place of what is there ("replaced") is refused too when it holds the log (or will:
    a first run creates it), which would be removed, or is not empty once the work is done. The
    one check for every writer, the library's functions as well as the commands (`name` says what
    the caller called the path: `--out`, `run directory`), made before any work."""
    target = Path(path).expanduser().resolve()
    log_path = Path(log_path).resolve()
    protected = (log_path, log_path.with_name(log_path.name + ".wal"), live_root(log_path))
    if any(target == p or p in target.parents for p in protected):
        raise EvisceneError(f"{name} {path}: that is the log's own file; results never overwrite the log")
    results = results_root(log_path)
    if target == results or results in target.parents:
        raise EvisceneError(f"{name} {path}: that is where the viewer's numbers are filed beside the log ({results}); "
                            "results never overwrite them")
    if output_folder == "replaced" and target in log_path.parents:
        raise EvisceneError(f"{name} {path}: holds the log {log_path}; a folder holding the log is never replaced")
    if output_folder == "new" and target in log_path.parents:
        raise EvisceneError(f"{name} {path}: holds the log {log_path}, so it is not new or empty as an output folder must be; "
                            "name another folder")
    return target


def _is_run_id(name: str) -> bool:
    return bool(_RUN_ID.fullmatch(name))  # the whole name: match would take a valid start of one


def check_run_id(run_id: str) -> str:
    """`run_id`, which names a folder of the log: InvalidRunIdError unless it is a safe name."""
    if not _is_run_id(run_id):
        raise InvalidRunIdError(f"invalid run id {run_id!r}: {_RUN_ID_RULE}")
    return run_id


def run_folder(log_path: Path, run_id: str) -> Path:
    return live_root(log_path) / check_run_id(run_id)


@dataclass(frozen=True)
class Segment:
    first_seq: int
    last_seq: int
    path: Path


def segment_name(first_seq: int, last_seq: int) -> str:
    return f"events-{first_seq:012d}-{last_seq:012d}.parquet"


def blob_segment_name(writer_id: str, counter: int) -> str:
    """Blob files carry their writer session's random id: a pid or a counter alone repeats
    across sessions of one run and would overwrite an earlier session's blobs."""
    return f"blobs-{writer_id}-{counter:09d}.parquet"


def _committed_files(folder: Path) -> list[ManifestEntry] | None:
    """The files the run folder's manifest says make up the run now (None: no manifest). A
    listed file that is gone is read past only once the manifest, read again, is unchanged: a
    compaction racing this read adds its line and then deletes the files it replaces, so a
    changed manifest names the file that holds their events. A file still listed is gone for
    good (deleted: verify names it) and left out, not an error."""
    entries = read_manifest(folder)
    while entries is not None:
        files = committed(entries)
        present = [e for e in files if (folder / e.file).exists()]
        if len(present) == len(files):
            return files
        again = read_manifest(folder)
        if again == entries:
            return present
        entries = again
    return None


def list_segments(folder: Path) -> list[Segment]:
    """A run folder's committed event segments in seq order: those its manifest lists."""
    files = _committed_files(folder)
    if files is not None:
        events = [e for e in files if e.is_events]
        return sorted((Segment(e.first_seq, e.last_seq, folder / e.file) for e in events), key=lambda s: s.first_seq)  # type: ignore[arg-type]
    # A folder without a manifest (its manifest deleted, which verify reports): every file,
    # keeping only maximal seq ranges, so nothing that is on disk disappears from reads.
    found = []
    for name in _names(folder):
        match = EVENTS_FILE.match(name)
        if match:
            check_plain_file(folder / name)
            found.append(Segment(int(match.group(1)), int(match.group(2)), folder / name))
    found.sort(key=lambda s: (s.first_seq, -s.last_seq))
    kept: list[Segment] = []
    for segment in found:
        if kept and segment.last_seq <= kept[-1].last_seq:
            continue
        kept.append(segment)
    return kept


def list_blob_files(folder: Path) -> list[Path]:
    files = _committed_files(folder)
    if files is not None:
        return sorted(folder / e.file for e in files if not e.is_events)
    found = sorted(folder / name for name in _names(folder) if BLOBS_FILE.match(name))
    for path in found:
        check_plain_file(path)
    return found


def _names(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except FileNotFoundError:
        return []


def live_run_ids(log_path: Path) -> list[str]:
    """The live runs: the live folder's folders named as a run can be. Another there (a backup
    tool's `.snapshot`, `lost+found`) is no run and not the log's to seal or read."""
    root = live_root(log_path)
    _refuse_link(root, "live folder")
    if not root.is_dir():
        return []
    runs = sorted(p for p in root.iterdir() if p.is_dir() and _is_run_id(p.name))
    for folder in runs:
        _refuse_link(folder, "run folder")
    return [folder.name for folder in runs]


def refuse_linked_run_folder(folder: Path) -> None:
    """A run folder, and the live folder holding it, are the log's own: one that is a link
    leads into another log's (or any) folder, whose events every read would show as this log's,
    whose files a seal would delete and a writer add to. Refused by every command, as a
    manifest naming a file elsewhere is."""
    _refuse_link(folder.parent, "live folder")
    _refuse_link(folder, "run folder")


def _refuse_link(folder: Path, what: str) -> None:
    if folder.is_symlink():
        raise LogIntegrityError(f"{what} {folder} is a link (to {os.readlink(folder)}); a log's folders are its own: remove the link")


def sql_quoted(path: Path) -> str:
    """`path` inside a SQL string literal's quotes."""
    return str(path).replace("'", "''")


def sql_path_list(paths: list[Path]) -> str:
    """`paths` as a SQL list of strings."""
    return "[" + ", ".join(f"'{sql_quoted(p)}'" for p in paths) + "]"


def read_parquet(paths: list[Path], *options: str) -> str:
    """DuckDB's `read_parquet` of the log's files. Not as hive partitions, its default for a
    path with a `key=value` folder: a run directory or export folder named `step=1000` (or a
    run id `type=x`) became a column, or overwrote one, in every row read."""
    return f"read_parquet({', '.join([sql_path_list(paths), 'hive_partitioning = false', *options])})"
