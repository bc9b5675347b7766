"""What the viewer computed for one run, kept under the run's chain head: a run's events
hash into a chain (`eviscene.store.chain`), so its head (last seq and hash) names exactly the
events it was computed from. The views give a run's rows from that run's events alone (and
blobs, which are content-addressed), so a result filed under a head can never be stale: a
run that gets one more event has a new head and is computed again; live progress stays live.

Results live in memory, and those of a sealed run (every event in the archive, no live
folder: it can only change through a resume, which gives a new head) also on disk in the
runtime directory (`EVISCENE_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/eviscene`, else
`<tmp>/eviscene-<uid>`), so a new `eviscene view` answers at once. The key also holds the log's
path and a digest of the code that computed the result (the SQL views, the rules they call,
the viewer's data code, DuckDB's and NumPy's versions; the exporter's for a replayed dataset
export's numbers only): an upgrade never reads an old result.
A folder another user owns or may write is not used.

A sealed run's results are also filed beside the log when it is sealed (`precompute` in
`data.py`, called by the CLI after `eval run`, `eval resume` and `log seal`: the writer pays the cost once, at the end of the run), in
`<log>.results/`, keyed without the log's path (a moved log keeps them); the viewer reads them
before computing anything, so even its first look at a 100k-episode run answers at once. The
viewer itself never writes there: it stays read-only on the log. Each filed result is signed
(HMAC-SHA256 over its name and text) with a key of the user's own (`signing_key`): `log verify`
proves the log, not files beside it, so a result edited there, or filed by someone else (a
log copied from a colleague, with its folder), is not read but computed again from the log."""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from eviscene.exports.serialize import write_text
from eviscene.rules.runtime import mark_used, prune_unused, runtime_dir
from eviscene.store.layout import live_root, results_root
from eviscene.views import view_definitions

CACHE_FORMAT = "2"  # 2: results filed beside the log are signed
CACHE_FOLDER = "view-cache"

# Each run's chain head, what its cached results are filed under: its last seq, then that
# event's hash read by seq (the seq filter skips the row groups; arg_max(hash, seq) would read
# every hash in the log, 0.7 s at 3M events against 0.05 s).
_LAST_SEQ_SQL = "SELECT run_id, max(seq) FROM events GROUP BY run_id"
_RUN_LAST_SEQ_SQL = "SELECT run_id, max(seq) FROM events WHERE run_id = $run GROUP BY run_id"


@dataclass(frozen=True)
class RunHead:
    run_id: str
    last_seq: int
    head: str


def _heads(con: duckdb.DuckDBPyConnection, last: list[tuple[str, int]]) -> dict[str, RunHead]:
    if not last:
        return {}
    wanted = set(last)
    found = con.execute(f"SELECT run_id, seq, hash FROM events WHERE seq IN ({', '.join(str(int(seq)) for _, seq in last)})").fetchall()
    return {run_id: RunHead(run_id, seq, head) for run_id, seq, head in sorted(found) if (run_id, seq) in wanted}


def run_heads(con: duckdb.DuckDBPyConnection) -> dict[str, RunHead]:
    """Every run id's chain head in `con`'s snapshot."""
    return _heads(con, con.execute(_LAST_SEQ_SQL).fetchall())


def run_head(con: duckdb.DuckDBPyConnection, run_id: str) -> RunHead | None:
    """`run_id`'s chain head in `con`'s snapshot, None when the log has no event of it."""
    return _heads(con, con.execute(_RUN_LAST_SEQ_SQL, {"run": run_id}).fetchall()).get(run_id)


# The kind of result the exporter computes (a replayed dataset export's numbers): only its
# key holds the exporter's code, so an exporter edit keeps every other cached result.
DATASET_EXPORT = "dataset-export"
_PACKAGE = Path(__file__).resolve().parents[1]


@functools.cache
def code_digest(with_exporter: bool = False) -> str:
    """The code a cached result depends on, as one digest; `with_exporter`: the exporter's
    too (the viewer replays dataset exports with it)."""
    digest = hashlib.sha256(CACHE_FORMAT.encode())
    for definition in view_definitions():
        digest.update(f"\x1f{definition.path}\x1f{definition.sql}".encode())
    # exports/serialize.py turns every result into the rows that are cached (`data.fetch`).
    sources = {*_PACKAGE.joinpath("rules").rglob("*.py"), _PACKAGE / "views.py", _PACKAGE / "viewer" / "data.py",
               _PACKAGE / "exports" / "serialize.py"}
    if with_exporter:
        sources.update(_PACKAGE.joinpath("exports").rglob("*.py"))
    for path in sorted(sources):
        digest.update(f"\x1f{path.relative_to(_PACKAGE).as_posix()}\x1f".encode() + path.read_bytes())
    digest.update(f"\x1fduckdb {duckdb.__version__}\x1fnumpy {np.__version__}".encode())
    return digest.hexdigest()


class _Background:
    """One computation on a thread of its own; its error is kept to be raised to a page."""

    def __init__(self, compute: Callable[[], Any]):
        self.started = time.monotonic()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(compute,), daemon=True)
        self.thread.start()

    def _run(self, compute: Callable[[], Any]) -> None:
        try:
            compute()
        except BaseException as exc:  # raised to the next page that asks
            self.error = exc


def _owned_by(folder: Path, uid: int) -> bool:
    """`folder` is `uid`'s and no one else may write it."""
    try:
        found = folder.stat()
    except OSError:
        return False
    return found.st_uid == uid and not found.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def normalized(value: Any) -> Any:
    """`value` as it reads back from the cache (tuples become lists), so a page renders the
    same bytes from a computed result and from a cached one."""
    return json.loads(json.dumps(value, ensure_ascii=False, allow_nan=True))


def _data_dir() -> Path:
    data = os.environ.get("XDG_DATA_HOME")
    return (Path(data) if data else Path.home() / ".local" / "share") / "eviscene"


@functools.cache
def signing_key() -> bytes | None:
    """This user's key for the results filed beside logs, made once (32 random bytes, mode
    0600) in `$XDG_DATA_HOME/eviscene` (else `~/.local/share/eviscene`): kept across reboots,
    unlike the runtime directory, so a sealed run's filed results stay readable. None where no
    private key can be kept: then nothing is filed or read beside a log."""
    path = _data_dir() / "results-signing.key"
    try:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            pending = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            fd = os.open(pending, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(os.urandom(32))
                os.fsync(out.fileno())
            try:
                os.link(pending, path)  # first one wins; a racing process reads the winner's key
            except FileExistsError:
                pass
            finally:
                pending.unlink()
        found = path.stat()
        if found.st_uid != os.getuid() or found.st_mode & 0o077:
            return None
        key = path.read_bytes()
    except OSError:
        return None
    return key if len(key) == 32 else None


def _signature(key: bytes, name: str, text: str) -> str:
    return hmac.new(key, f"{name}\n{text}".encode(), hashlib.sha256).hexdigest()


class ResultCache:
    """Results by (kind, run head) for one log: in memory, and on disk for sealed runs."""

    def __init__(self, log_path: Path, folder: Path | None = None):
        self.log_path = Path(log_path).resolve()
        self.folder = (folder or runtime_dir()) / CACHE_FOLDER
        self.beside_log = results_root(self.log_path)  # the results filed beside the log at seal time
        self._memory: dict[tuple[str, str], tuple[str, Any]] = {}  # (kind, run) -> (key, value): the latest only
        self._live_rows: dict[tuple[str, str], Any] = {}  # (kind, run) -> a live run's rows (live_rows.py), memory only
        self._background: dict[tuple[str, str], _Background] = {}  # (kind, run) -> its first computation, while it runs
        self._lock = threading.Lock()

    def _key(self, kind: str, head: RunHead) -> str:
        material = f"{code_digest(kind == DATASET_EXPORT)}\x1f{self.log_path}\x1f{kind}\x1f{head.run_id}\x1f{head.last_seq}\x1f{head.head}"
        return hashlib.sha256(material.encode()).hexdigest()

    def _prefix(self, kind: str, run_id: str) -> str:
        return f"{kind}-{hashlib.sha256(f'{self.log_path}{chr(31)}{run_id}'.encode()).hexdigest()[:20]}-"

    @staticmethod
    def _filed_name(kind: str, head: RunHead) -> str:
        """A result's file name beside the log: the log's own path is not in it (a moved or
        copied log keeps its results; a result names its run's exact events by the head)."""
        key = hashlib.sha256(f"{code_digest(kind == DATASET_EXPORT)}\x1f{kind}\x1f{head.run_id}\x1f{head.last_seq}\x1f{head.head}".encode()).hexdigest()
        return f"{kind}-{hashlib.sha256(head.run_id.encode()).hexdigest()[:20]}-{key}.json"

    def sealed(self, run_id: str) -> bool:
        return not (live_root(self.log_path) / run_id).exists()

    def _private(self) -> bool:
        """The folder is this user's alone: results another user could write are never read."""
        return _owned_by(self.folder, os.getuid())

    def _trusted_beside_log(self) -> bool:
        """Results beside the log are read when the log's owner alone may write them: whoever
        may write them may write the log."""
        try:
            owner = self.log_path.stat().st_uid
        except OSError:
            return False
        return _owned_by(self.beside_log, owner)

    @staticmethod
    def _read(path: Path) -> Any | None:
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # not there, or unreadable: compute it again
            return None

    def _read_filed(self, name: str) -> Any | None:
        """A result filed beside the log, if this user's key signed it as it is, under this name."""
        key = signing_key()
        if key is None or not self._trusted_beside_log():
            return None
        try:
            signature, text = (self.beside_log / name).read_text(encoding="utf-8").split("\n", 1)
            if not hmac.compare_digest(signature, _signature(key, name, text)):
                return None  # edited, moved from another run's name, or filed by another user
            return json.loads(text)
        except (OSError, ValueError):
            return None

    def get(self, kind: str, head: RunHead) -> Any | None:
        key = self._key(kind, head)
        with self._lock:
            found = self._memory.get((kind, head.run_id))
            if found and found[0] == key:  # read last: kept longest where a kind keeps a few runs (`remember`)
                self._memory[(kind, head.run_id)] = self._memory.pop((kind, head.run_id))
        if found and found[0] == key:
            return found[1]
        value = self._read_filed(self._filed_name(kind, head))
        if value is None and self._private():
            filed = self.folder / f"{self._prefix(kind, head.run_id)}{key}.json"
            value = self._read(filed)
            if value is not None:
                mark_used(filed)
        if value is None:
            return None
        with self._lock:
            self._memory[(kind, head.run_id)] = (key, value)
        return value

    def remember(self, kind: str, head: RunHead, value: Any, *, runs: int | None = None) -> Any:
        """Keep `value` for `head` in memory only, as it is (an Arrow table a page queries); of
        this kind, only the `runs` (at least 1) runs remembered or read last where given (a
        large value each)."""
        if runs is not None and runs < 1:
            raise ValueError(f"runs={runs}: at least the run remembered now is kept")
        with self._lock:
            self._memory.pop((kind, head.run_id), None)  # remembered last, so kept longest
            self._memory[(kind, head.run_id)] = (self._key(kind, head), value)
            if runs is not None:
                for older in [entry for entry in self._memory if entry[0] == kind][:-runs]:
                    del self._memory[older]
        return value

    def put(self, kind: str, head: RunHead, value: Any) -> Any:
        """Keep `value` (returned as it reads back) for `head`; on disk too if the run is sealed."""
        value = normalized(value)
        key = self._key(kind, head)
        with self._lock:
            self._memory[(kind, head.run_id)] = (key, value)
        if self.sealed(head.run_id):
            prefix = self._prefix(kind, head.run_id)
            try:
                self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
                if not self._private():
                    return value
                write_text(self.folder / f"{prefix}{key}.json", json.dumps(value, ensure_ascii=False, allow_nan=True))
                for older in self.folder.glob(f"{prefix}*.json"):  # the run's results under an older head
                    if older.name != f"{prefix}{key}.json":
                        older.unlink(missing_ok=True)
                prune_unused(self.folder)  # results of logs and code no longer read
            except OSError:  # a read-only or full runtime directory: the memory copy serves
                pass
        return value

    def live_rows(self, kind: str, run_id: str) -> Any | None:
        """The rows kept for a live run's `kind` of page (live_rows.LiveRows), None if none."""
        with self._lock:
            return self._live_rows.get((kind, run_id))

    def keep_live_rows(self, kind: str, rows: Any) -> None:
        """Keep `rows` for their run; a run sealed since its rows were kept is read from what
        its seal filed from then on, so its rows (every per-episode view's) are let go."""
        with self._lock:
            self._live_rows[(kind, rows.head.run_id)] = rows
            for key in [key for key in self._live_rows if self.sealed(key[1])]:
                del self._live_rows[key]

    def computing(self, kind: str, run_id: str, compute: Callable[[], Any], wait_s: float) -> float | None:
        """Run `compute` (what fills this cache for (`kind`, run)) on a thread of its own, once
        however many pages ask, and wait for it up to `wait_s`: None once it has finished
        (its error raised here, once), else the seconds it has been running. A page that
        cannot wait for a live run's first computation (minutes at 100k episodes) answers
        with what it has and asks again on its next refresh."""
        with self._lock:
            job = self._background.get((kind, run_id))
            if job is None:
                job = self._background[(kind, run_id)] = _Background(compute)
        job.thread.join(wait_s)
        if job.thread.is_alive():
            return time.monotonic() - job.started
        with self._lock:
            if self._background.get((kind, run_id)) is job:
                del self._background[(kind, run_id)]
        if job.error is not None:
            raise job.error
        return None

    def file_beside_log(self, kind: str, head: RunHead, value: Any) -> bool:
        """File a sealed run's `value` beside the log (the writer does, at seal time; its
        results under an older head go); False when the folder is not ours alone to write."""
        key = signing_key()
        if key is None or not self.sealed(head.run_id):
            return False
        name = self._filed_name(kind, head)
        self.beside_log.mkdir(mode=0o755, exist_ok=True)
        if not self._trusted_beside_log():
            return False
        text = json.dumps(normalized(value), ensure_ascii=False, allow_nan=True)
        write_text(self.beside_log / name, f"{_signature(key, name, text)}\n{text}")
        for older in self.beside_log.glob(f"{name.rsplit('-', 1)[0]}-*.json"):
            if older.name != name:
                older.unlink(missing_ok=True)
        return True
